-- tollgate schema: the configuration model of docs/behaviour.md.
--
-- Conventions: ids are text (plans.NewID); timestamps timestamptz; maps
-- (tags, variables, method settings, per-method throttles) jsonb objects;
-- references are foreign keys so that PostgreSQL itself refuses dangling
-- ones. The store translates 23505 to 409 and 23503 to 400 by constraint
-- name, so constraints are named explicitly.

-- config_version is a single-row counter. Every write that changes what the
-- data plane sees increments it inside its transaction; the row lock makes
-- commit order equal version order.
CREATE TABLE config_version (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    version bigint  NOT NULL DEFAULT 0 CHECK (version >= 0)
);
INSERT INTO config_version (id, version) VALUES (true, 0);

-- config_changes has one row per config version: what that write touched.
CREATE TABLE config_changes (
    version    bigint      PRIMARY KEY,
    snapshot   boolean     NOT NULL DEFAULT false,
    key_hashes text[]      NOT NULL DEFAULT '{}',
    plans      text[]      NOT NULL DEFAULT '{}',
    stages     text[]      NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);

-- account is a single row holding the account throttle; the store seeds it
-- on first start (TOLLGATE_ACCOUNT_RATE_LIMIT / _BURST_LIMIT).
CREATE TABLE account (
    id          boolean          PRIMARY KEY DEFAULT true CHECK (id),
    rate_limit  double precision NOT NULL CHECK (rate_limit >= 0),
    burst_limit integer          NOT NULL CHECK (burst_limit >= 0),
    updated_at  timestamptz      NOT NULL
);

CREATE TABLE rest_apis (
    id             text        PRIMARY KEY,
    name           text        NOT NULL,
    description    text        NOT NULL DEFAULT '',
    api_key_source text        NOT NULL DEFAULT 'HEADER' CHECK (api_key_source = 'HEADER'),
    tags           jsonb       NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL
);

-- resources is each API's path tree. The root has no parent and path '/';
-- a child's path is its parent's path joined with its path_part.
CREATE TABLE resources (
    api_id    text NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    id        text NOT NULL,
    parent_id text,
    path_part text NOT NULL DEFAULT '',
    path      text NOT NULL,
    CONSTRAINT resources_pkey PRIMARY KEY (api_id, id),
    CONSTRAINT resources_parent_fkey FOREIGN KEY (api_id, parent_id)
        REFERENCES resources (api_id, id) ON DELETE CASCADE,
    CONSTRAINT resources_sibling_key UNIQUE (api_id, parent_id, path_part),
    CONSTRAINT resources_root_check CHECK ((parent_id IS NULL) = (path = '/'))
);
CREATE UNIQUE INDEX resources_one_root ON resources (api_id) WHERE parent_id IS NULL;

CREATE TABLE methods (
    api_id             text    NOT NULL,
    resource_id        text    NOT NULL,
    http_method        text    NOT NULL
        CHECK (http_method IN ('GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'ANY')),
    authorization_type text    NOT NULL DEFAULT 'NONE' CHECK (authorization_type = 'NONE'),
    api_key_required   boolean NOT NULL DEFAULT false,
    request_parameters jsonb   NOT NULL DEFAULT '{}',
    CONSTRAINT methods_pkey PRIMARY KEY (api_id, resource_id, http_method),
    CONSTRAINT methods_resource_fkey FOREIGN KEY (api_id, resource_id)
        REFERENCES resources (api_id, id) ON DELETE CASCADE
);

-- integrations has at most one row per method.
CREATE TABLE integrations (
    api_id               text    NOT NULL,
    resource_id          text    NOT NULL,
    http_method          text    NOT NULL,
    type                 text    NOT NULL CHECK (type IN ('HTTP_PROXY', 'MOCK')),
    integration_method   text    NOT NULL DEFAULT '',
    uri                  text    NOT NULL DEFAULT '',
    timeout_ms           integer NOT NULL DEFAULT 29000 CHECK (timeout_ms BETWEEN 50 AND 29000),
    cache_key_parameters text[]  NOT NULL DEFAULT '{}',
    cache_namespace      text    NOT NULL DEFAULT '',
    request_parameters   jsonb   NOT NULL DEFAULT '{}',
    passthrough_behavior text    NOT NULL DEFAULT '',
    connection_type      text    NOT NULL DEFAULT 'INTERNET',
    CONSTRAINT integrations_pkey PRIMARY KEY (api_id, resource_id, http_method),
    CONSTRAINT integrations_method_fkey FOREIGN KEY (api_id, resource_id, http_method)
        REFERENCES methods (api_id, resource_id, http_method) ON DELETE CASCADE
);

-- deployments is an immutable copy (JSON array of plans.Resource, methods
-- and integrations included) of an API's resources.
CREATE TABLE deployments (
    api_id      text        NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    id          text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    resources   jsonb       NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT deployments_pkey PRIMARY KEY (api_id, id)
);

-- stages: the deployment reference is NO ACTION (checked at the end of the
-- statement) so that deleting an API removes its stages and deployments in
-- one cascade, while deleting a deployment a stage points to fails.
CREATE TABLE stages (
    api_id                text        NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    name                  text        NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,128}$'),
    deployment_id         text        NOT NULL,
    description           text        NOT NULL DEFAULT '',
    cache_cluster_enabled boolean     NOT NULL DEFAULT false,
    cache_cluster_size    text        NOT NULL DEFAULT '',
    tracing_enabled       boolean     NOT NULL DEFAULT false,
    method_settings       jsonb       NOT NULL DEFAULT '{}',
    variables             jsonb       NOT NULL DEFAULT '{}',
    tags                  jsonb       NOT NULL DEFAULT '{}',
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT stages_pkey PRIMARY KEY (api_id, name),
    CONSTRAINT stages_deployment_fkey FOREIGN KEY (api_id, deployment_id)
        REFERENCES deployments (api_id, id)
);
CREATE INDEX stages_deployment_idx ON stages (api_id, deployment_id);

-- usage_plans: a NULL throttle or quota means no limit in that dimension.
CREATE TABLE usage_plans (
    id             text             PRIMARY KEY,
    name           text             NOT NULL,
    description    text             NOT NULL DEFAULT '',
    throttle_rate  double precision CHECK (throttle_rate >= 0),
    throttle_burst integer          CHECK (throttle_burst >= 0),
    quota_limit    integer          CHECK (quota_limit >= 0),
    quota_offset   integer          CHECK (quota_offset BETWEEN 0 AND 27),
    quota_period   text             CHECK (quota_period IN ('DAY', 'WEEK', 'MONTH')),
    tags           jsonb            NOT NULL DEFAULT '{}',
    created_at     timestamptz      NOT NULL,
    CONSTRAINT usage_plans_throttle_check CHECK ((throttle_rate IS NULL) = (throttle_burst IS NULL)),
    CONSTRAINT usage_plans_quota_check CHECK (
        (quota_limit IS NULL) = (quota_period IS NULL) AND (quota_limit IS NULL) = (quota_offset IS NULL))
);

-- usage_plan_stages: the (api, stage) pairs a plan covers, in the order
-- given (position), with per-method throttles as a JSON object
-- {"/pets/GET": {"rateLimit": .., "burstLimit": ..}}. A stage in a plan
-- cannot be deleted (RESTRICT): 400 naming the plan.
CREATE TABLE usage_plan_stages (
    plan_id  text    NOT NULL REFERENCES usage_plans (id) ON DELETE CASCADE,
    api_id   text    NOT NULL,
    stage    text    NOT NULL,
    position integer NOT NULL,
    throttle jsonb   NOT NULL DEFAULT '{}',
    CONSTRAINT usage_plan_stages_pkey PRIMARY KEY (plan_id, api_id, stage),
    CONSTRAINT usage_plan_stages_stage_fkey FOREIGN KEY (api_id, stage)
        REFERENCES stages (api_id, name) ON DELETE RESTRICT
);
CREATE INDEX usage_plan_stages_stage_idx ON usage_plan_stages (api_id, stage);

-- api_keys stores only the SHA-256 (or HMAC-SHA-256) hex hash of a key's
-- value; the plaintext is never stored.
CREATE TABLE api_keys (
    id          text        PRIMARY KEY,
    key_hash    text        NOT NULL,
    name        text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    enabled     boolean     NOT NULL DEFAULT false,
    customer_id text        NOT NULL DEFAULT '',
    stage_keys  text[]      NOT NULL DEFAULT '{}',
    tags        jsonb       NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash)
);
CREATE INDEX api_keys_name_idx ON api_keys (name text_pattern_ops);
CREATE INDEX api_keys_customer_idx ON api_keys (customer_id);

CREATE TABLE usage_plan_keys (
    plan_id    text        NOT NULL REFERENCES usage_plans (id) ON DELETE CASCADE,
    key_id     text        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    CONSTRAINT usage_plan_keys_pkey PRIMARY KEY (plan_id, key_id)
);
CREATE INDEX usage_plan_keys_key_idx ON usage_plan_keys (key_id);

-- key_stage_claims enforces "a key is in at most one plan per (api, stage)"
-- for every path that could break it: one row per (key, api, stage) a key
-- reaches through a plan, maintained by the triggers below when a key joins
-- a plan (usage_plan_keys) or a plan gains a stage (usage_plan_stages). A
-- second claim raises 23505 on key_stage_claims_pkey (409). Rows leave by
-- cascade when either association goes.
CREATE TABLE key_stage_claims (
    key_id  text NOT NULL,
    api_id  text NOT NULL,
    stage   text NOT NULL,
    plan_id text NOT NULL,
    CONSTRAINT key_stage_claims_pkey PRIMARY KEY (key_id, api_id, stage),
    CONSTRAINT key_stage_claims_plan_key_fkey FOREIGN KEY (plan_id, key_id)
        REFERENCES usage_plan_keys (plan_id, key_id) ON DELETE CASCADE,
    CONSTRAINT key_stage_claims_plan_stage_fkey FOREIGN KEY (plan_id, api_id, stage)
        REFERENCES usage_plan_stages (plan_id, api_id, stage) ON DELETE CASCADE
);
CREATE INDEX key_stage_claims_plan_key_idx ON key_stage_claims (plan_id, key_id);
CREATE INDEX key_stage_claims_plan_stage_idx ON key_stage_claims (plan_id, api_id, stage);

-- Both triggers first lock the plan row (FOR NO KEY UPDATE, which does not
-- conflict with the KEY SHARE locks of foreign key checks), so a key joining
-- a plan and the plan gaining a stage in two concurrent transactions are
-- serialised: the second one's next statement sees the first one's row and
-- claims it too (READ COMMITTED takes a fresh snapshot per statement).
CREATE FUNCTION claim_plan_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM usage_plans WHERE id = NEW.plan_id FOR NO KEY UPDATE;
    INSERT INTO key_stage_claims (key_id, api_id, stage, plan_id)
    SELECT NEW.key_id, s.api_id, s.stage, s.plan_id
    FROM usage_plan_stages s WHERE s.plan_id = NEW.plan_id;
    RETURN NULL;
END $$;

CREATE FUNCTION claim_plan_stage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM usage_plans WHERE id = NEW.plan_id FOR NO KEY UPDATE;
    INSERT INTO key_stage_claims (key_id, api_id, stage, plan_id)
    SELECT k.key_id, NEW.api_id, NEW.stage, k.plan_id
    FROM usage_plan_keys k WHERE k.plan_id = NEW.plan_id;
    RETURN NULL;
END $$;

CREATE TRIGGER usage_plan_keys_claim AFTER INSERT ON usage_plan_keys
    FOR EACH ROW EXECUTE FUNCTION claim_plan_key();
CREATE TRIGGER usage_plan_stages_claim AFTER INSERT ON usage_plan_stages
    FOR EACH ROW EXECUTE FUNCTION claim_plan_stage();
