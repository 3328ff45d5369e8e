-- Method, integration and gateway responses, and MOCK request templates
-- (AWS's MethodResponse, IntegrationResponse, GatewayResponse), as JSON
-- objects keyed by status code or response type.

-- method_responses: {"200": {"statusCode": "200", "responseParameters": {...}, "responseModels": {...}}}
ALTER TABLE methods ADD COLUMN method_responses jsonb NOT NULL DEFAULT '{}';

-- integration_responses: {"200": {"statusCode": "200", "selectionPattern": "", ...}};
-- request_templates: {"application/json": "{\"statusCode\": 200}"}.
ALTER TABLE integrations ADD COLUMN integration_responses jsonb NOT NULL DEFAULT '{}';
ALTER TABLE integrations ADD COLUMN request_templates jsonb NOT NULL DEFAULT '{}';

-- gateway_responses holds the responses put for an API, one row per type.
-- A deployment copies them (deployments.gateway_responses), so they reach
-- traffic by deploying, as methods do.
CREATE TABLE gateway_responses (
    api_id              text  NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    response_type       text  NOT NULL,
    status_code         text  NOT NULL DEFAULT '',
    response_parameters jsonb NOT NULL DEFAULT '{}',
    response_templates  jsonb NOT NULL DEFAULT '{}',
    CONSTRAINT gateway_responses_pkey PRIMARY KEY (api_id, response_type)
);

-- gateway_responses of a deployment: {"DEFAULT_4XX": {GatewayResponse}, ...}.
ALTER TABLE deployments ADD COLUMN gateway_responses jsonb NOT NULL DEFAULT '{}';
