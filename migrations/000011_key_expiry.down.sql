DROP TABLE IF EXISTS webhook_outbox;
DROP INDEX IF EXISTS api_keys_expires_at_idx;
ALTER TABLE api_keys DROP COLUMN IF EXISTS expires_at;
