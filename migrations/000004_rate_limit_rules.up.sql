-- Rate-limit rules (docs/rules.md): a tollgate extension of the admin API,
-- limits on a stage's requests by client address, API key, header or query
-- parameter.
--
-- A rule belongs to (api_id, stage). The reference is to the API only, so
-- an imported API's rules can name a stage its first deployment creates;
-- the store deletes a stage's rules with the stage, and the API's cascade
-- deletes the rest. Algorithm parameters a rule's algorithm does not take
-- are NULL. counter_id names the rule's counters in the limiter; it changes
-- when the algorithm or key_by changes, so counters restart then only.
CREATE TABLE rate_limit_rules (
    api_id           text             NOT NULL REFERENCES rest_apis (id) ON DELETE CASCADE,
    stage            text             NOT NULL,
    id               text             NOT NULL,
    name             text             NOT NULL,
    resource_path    text             NOT NULL,
    http_method      text             NOT NULL,
    key_by           text[]           NOT NULL DEFAULT '{}',
    algorithm        text             NOT NULL CHECK (algorithm IN
        ('TOKEN_BUCKET', 'SLIDING_WINDOW', 'FIXED_WINDOW', 'CONCURRENCY', 'LEAKY_BUCKET')),
    rate_limit       double precision CHECK (rate_limit >= 0),
    burst_limit      integer          CHECK (burst_limit >= 0),
    limit_count      integer          CHECK (limit_count >= 0),
    window_seconds   integer          CHECK (window_seconds >= 1),
    max_delay_millis integer          CHECK (max_delay_millis >= 0),
    mode             text             NOT NULL CHECK (mode IN ('ENFORCE', 'SHADOW')),
    counter_id       text             NOT NULL,
    created_at       timestamptz      NOT NULL,
    CONSTRAINT rate_limit_rules_pkey PRIMARY KEY (api_id, stage, id),
    CONSTRAINT rate_limit_rules_name_key UNIQUE (api_id, stage, name)
);
