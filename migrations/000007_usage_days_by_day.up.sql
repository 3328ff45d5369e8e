-- Ledger reads by date range (docs/usage.md): plan exports and the
-- limiter restore's "yesterday and today of every plan" walk usage_days in
-- (day, plan, key) order. The primary key (plan, key, day) made such a read
-- visit every row of the plan's whole history (day is its last column);
-- this index makes it visit the range only. It replaces the bare (day)
-- index, which serves retention deletes no better, so a row update still
-- touches three indexes.
--
-- On a large ledger, build it by hand first, without blocking flushes:
--   CREATE INDEX CONCURRENTLY IF NOT EXISTS usage_days_day_plan_key_idx
--       ON usage_days (day, plan_id, key_id);
-- This migration then only drops the old index.
--
-- Since 000003, writers of usage_days serialise on the advisory lock
-- plans/postgres.UsageWriterLock (pg_advisory_xact_lock), no longer on a
-- table lock: VACUUM, ANALYZE and CREATE INDEX CONCURRENTLY run alongside
-- flushes.
CREATE INDEX IF NOT EXISTS usage_days_day_plan_key_idx ON usage_days (day, plan_id, key_id);
DROP INDEX IF EXISTS usage_days_day_idx;
