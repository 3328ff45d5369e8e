-- Key expiry (docs/behaviour.md, "Key lifecycle"): the key tag
-- tollgate:expires-at, kept in a column that every write of the key sets
-- from the tag (plans/postgres), so key records and expiry notices read a
-- timestamp instead of parsing tags.
ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
CREATE INDEX api_keys_expires_at_idx ON api_keys (expires_at) WHERE expires_at IS NOT NULL;

-- webhook_outbox holds the webhooks to deliver (package webhook): each row
-- is one event, its body stored as sent (the signature covers exactly
-- these bytes), its id the same on every try. dedupe_key makes an event
-- that several admin nodes detect at once enqueued only once.
CREATE TABLE webhook_outbox (
    id              text        PRIMARY KEY,
    dedupe_key      text        NOT NULL,
    type            text        NOT NULL,
    body            text        NOT NULL,
    created_at      timestamptz NOT NULL,
    next_attempt_at timestamptz NOT NULL,
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    delivered_at    timestamptz,
    CONSTRAINT webhook_outbox_dedupe_key_key UNIQUE (dedupe_key)
);
CREATE INDEX webhook_outbox_due_idx ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL;
