DROP TABLE IF EXISTS quota_alerts;
ALTER TABLE usage_plans DROP COLUMN IF EXISTS quota_anchor, DROP COLUMN IF EXISTS quota_time_zone, DROP COLUMN IF EXISTS alerts;
