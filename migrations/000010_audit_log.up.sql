-- The audit log (docs/operations.md, "Audit log"): one row per change
-- through any door, written in the transaction of the change itself, and
-- one per read of API key values. resource is the resource's path (the
-- ARN's part after "::"), region the ARN's region. change is the request
-- with secrets and key values redacted. Rows older than
-- TOLLGATE_AUDIT_RETENTION are deleted hourly.
CREATE TABLE audit_log (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    time      timestamptz NOT NULL,
    actor     text        NOT NULL,
    source    text        NOT NULL CHECK (source IN ('api', 'console', 'import', 'config', 'portal', 'rotation')),
    operation text        NOT NULL,
    region    text        NOT NULL DEFAULT '',
    resource  text        NOT NULL,
    change    jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_resource_idx ON audit_log (resource text_pattern_ops);
CREATE INDEX audit_log_actor_idx ON audit_log (actor, id);
CREATE INDEX audit_log_time_idx ON audit_log (time);
