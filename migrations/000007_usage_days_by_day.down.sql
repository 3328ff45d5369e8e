CREATE INDEX IF NOT EXISTS usage_days_day_idx ON usage_days (day);
DROP INDEX IF EXISTS usage_days_day_plan_key_idx;
