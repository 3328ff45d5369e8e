-- Admin credentials (docs/operations.md, "Admin credentials and roles"):
-- SigV4 access keys and bearer tokens beyond the bootstrap ones of the
-- environment, each with a role.
--
-- A bearer token is stored as its SHA-256 hex digest only (tokens are 40
-- random characters, so a fast hash is enough and costs nothing per
-- request). A SigV4 secret must be recoverable to verify signatures: it is
-- stored sealed with TOLLGATE_SECRETS_KEY (package seal) when
-- that is set, else as given.
CREATE TABLE admin_credentials (
    id            text        PRIMARY KEY,
    name          text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('admin', 'operator', 'keys', 'viewer')),
    kind          text        NOT NULL CHECK (kind IN ('sigv4', 'token')),
    access_key_id text,
    token_hash    text,
    secret        text,
    created_at    timestamptz NOT NULL,
    rotated_at    timestamptz NOT NULL,
    CONSTRAINT admin_credentials_name_key UNIQUE (name),
    CONSTRAINT admin_credentials_access_key_key UNIQUE (access_key_id),
    CONSTRAINT admin_credentials_token_hash_key UNIQUE (token_hash),
    CONSTRAINT admin_credentials_secret_check CHECK (
        (kind = 'sigv4' AND access_key_id IS NOT NULL AND secret IS NOT NULL AND token_hash IS NULL) OR
        (kind = 'token' AND token_hash IS NOT NULL AND access_key_id IS NULL AND secret IS NULL))
);
