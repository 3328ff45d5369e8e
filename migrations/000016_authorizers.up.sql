-- Authorizers (docs/migrating-from-aws.md, "Authorizers"): an API's Lambda
-- and Cognito authorizers, kept so that an API moves over and back
-- unchanged. tollgate cannot run them: a method secured by one, or by
-- AWS_IAM, is closed on the gateway.
CREATE TABLE authorizers (
    api_id                         text    NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    id                             text    NOT NULL,
    name                           text    NOT NULL,
    type                           text    NOT NULL CHECK (type IN ('TOKEN', 'REQUEST', 'COGNITO_USER_POOLS')),
    provider_arns                  text[]  NOT NULL DEFAULT '{}',
    auth_type                      text    NOT NULL DEFAULT '',
    authorizer_uri                 text    NOT NULL DEFAULT '',
    authorizer_credentials         text    NOT NULL DEFAULT '',
    identity_source                text    NOT NULL DEFAULT '',
    identity_validation_expression text    NOT NULL DEFAULT '',
    result_ttl_seconds             integer NOT NULL DEFAULT 300 CHECK (result_ttl_seconds BETWEEN 0 AND 3600),
    CONSTRAINT authorizers_pkey PRIMARY KEY (api_id, id),
    CONSTRAINT authorizers_name_key UNIQUE (api_id, name)
);

-- A method's authorization: CUSTOM and COGNITO_USER_POOLS name an
-- authorizer of the API, which cannot be deleted while a method uses it
-- (NO ACTION: deleting the API removes both in one statement).
ALTER TABLE methods DROP CONSTRAINT methods_authorization_type_check;
ALTER TABLE methods ADD CONSTRAINT methods_authorization_type_check
    CHECK (authorization_type IN ('NONE', 'CUSTOM', 'COGNITO_USER_POOLS', 'AWS_IAM'));
ALTER TABLE methods ADD COLUMN authorizer_id text;
ALTER TABLE methods ADD COLUMN authorization_scopes text[] NOT NULL DEFAULT '{}';
ALTER TABLE methods ADD CONSTRAINT methods_authorizer_fkey FOREIGN KEY (api_id, authorizer_id)
    REFERENCES authorizers (api_id, id);
ALTER TABLE methods ADD CONSTRAINT methods_authorizer_check
    CHECK ((authorizer_id IS NOT NULL) = (authorization_type IN ('CUSTOM', 'COGNITO_USER_POOLS')));
CREATE INDEX methods_authorizer_idx ON methods (api_id, authorizer_id) WHERE authorizer_id IS NOT NULL;

-- A deployment copies the authorizers with the methods that name them.
ALTER TABLE deployments ADD COLUMN authorizers jsonb NOT NULL DEFAULT '[]';
