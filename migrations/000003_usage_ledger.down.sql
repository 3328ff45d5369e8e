DROP TABLE IF EXISTS usage_quotas;
DROP TABLE IF EXISTS usage_days;
DROP SEQUENCE IF EXISTS usage_version_seq;
