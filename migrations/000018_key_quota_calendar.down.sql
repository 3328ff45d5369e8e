ALTER TABLE api_keys DROP COLUMN IF EXISTS quota_anchor, DROP COLUMN IF EXISTS quota_time_zone;
