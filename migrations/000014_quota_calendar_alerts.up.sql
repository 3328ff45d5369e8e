-- Anchored quota periods (docs/usage.md, "Anchored periods"): a usage
-- plan's quota may start each period at local midnight of a day of the
-- month or week in an IANA time zone. '' is none and UTC.
ALTER TABLE usage_plans ADD COLUMN quota_anchor text NOT NULL DEFAULT '',
    ADD COLUMN quota_time_zone text NOT NULL DEFAULT '';

-- Quota alerts (docs/usage.md, "Alerts"): the shares of the quota, in
-- percent, whose crossing sends a quota.threshold webhook; each crossing is
-- one webhook_outbox row, its dedupe_key naming plan, key, period and
-- threshold, so it is sent once.
ALTER TABLE usage_plans ADD COLUMN alerts integer[] NOT NULL DEFAULT '{}';

-- quota_alerts holds every threshold crossed (GET /alerts): one row per
-- plan, subject (the key's id, or the customer's), period and threshold,
-- so each is sent once; its id is the webhook's. key_id and customer_id
-- are as the webhook said them.
CREATE TABLE quota_alerts (
    id           text        PRIMARY KEY,
    plan_id      text        NOT NULL,
    scope        text        NOT NULL CHECK (scope IN ('key', 'customer')),
    subject      text        NOT NULL,
    key_id       text        NOT NULL DEFAULT '',
    customer_id  text        NOT NULL DEFAULT '',
    period_start timestamptz NOT NULL,
    period_end   timestamptz NOT NULL,
    threshold    integer     NOT NULL,
    used         bigint      NOT NULL,
    quota_limit  bigint      NOT NULL,
    crossed_at   timestamptz NOT NULL,
    CONSTRAINT quota_alerts_once UNIQUE (plan_id, scope, subject, period_start, threshold)
);
CREATE INDEX quota_alerts_crossed_idx ON quota_alerts (crossed_at DESC, id);
