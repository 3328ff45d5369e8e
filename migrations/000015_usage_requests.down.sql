ALTER TABLE usage_days DROP COLUMN requests;
