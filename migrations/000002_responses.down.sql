ALTER TABLE deployments DROP COLUMN IF EXISTS gateway_responses;
DROP TABLE IF EXISTS gateway_responses;
ALTER TABLE integrations DROP COLUMN IF EXISTS request_templates;
ALTER TABLE integrations DROP COLUMN IF EXISTS integration_responses;
ALTER TABLE methods DROP COLUMN IF EXISTS method_responses;
