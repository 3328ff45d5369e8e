-- An API key's own quota calendar (docs/cost.md, "Anchored periods"): the
-- anchor and IANA zone that replace its plans' for its own quota. '' is
-- none (the key's tags, else the plan's, say it).
ALTER TABLE api_keys ADD COLUMN quota_anchor text NOT NULL DEFAULT '',
    ADD COLUMN quota_time_zone text NOT NULL DEFAULT '';
