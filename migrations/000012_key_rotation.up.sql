-- Key rotation with overlap (docs/behaviour.md, "Key lifecycle").
--
-- api_key_previous_values holds the hash of each value a rotation
-- replaced while it keeps working: until expires_at, which its pushed key
-- record carries, so every gateway refuses it from then on by itself. The
-- admin deletes rows a day after they end.
CREATE TABLE api_key_previous_values (
    key_hash   text        PRIMARY KEY,
    key_id     text        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX api_key_previous_values_key_idx ON api_key_previous_values (key_id);

-- A value is one key's, current or previous: a key may not take a hash a
-- previous value holds (raised as api_keys_key_hash_key, so it is the same
-- 409). AFTER the row is in, so a concurrent rotation that freed the hash
-- from api_keys has committed its previous value by then (READ COMMITTED:
-- the check sees it).
CREATE FUNCTION api_keys_hash_not_previous() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM api_key_previous_values WHERE key_hash = NEW.key_hash) THEN
        RAISE EXCEPTION 'duplicate key value violates unique constraint "api_keys_key_hash_key"'
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'api_keys_key_hash_key', TABLE = 'api_keys';
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER api_keys_hash_not_previous AFTER INSERT OR UPDATE OF key_hash ON api_keys
    FOR EACH ROW EXECUTE FUNCTION api_keys_hash_not_previous();

-- api_key_rotations remembers, for a day, the answer of each rotation made
-- with an idempotency token: the token's hash (never the token) and the
-- new value sealed under a key derived from the token (and
-- TOLLGATE_SECRETS_KEY when set). The primary key makes two concurrent
-- calls with one token mint one value.
CREATE TABLE api_key_rotations (
    key_id                    text        NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    token_hash                text        NOT NULL,
    sealed_value              text        NOT NULL,
    previous_value_expires_at timestamptz NOT NULL,
    created_at                timestamptz NOT NULL,
    CONSTRAINT api_key_rotations_pkey PRIMARY KEY (key_id, token_hash)
);
CREATE INDEX api_key_rotations_created_idx ON api_key_rotations (created_at);
