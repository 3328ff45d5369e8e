-- The developer portal (docs/portal.md): partners' accounts, the invites
-- that create them, and their sign-in sessions. Invite and session tokens
-- are stored as SHA-256 hashes, passwords as argon2id hashes (PHC strings).
CREATE TABLE portal_accounts (
    id             text        PRIMARY KEY,
    email          text        NOT NULL,
    customer_id    text        NOT NULL,
    usage_plan_ids text[]      NOT NULL DEFAULT '{}',
    password_hash  text        NOT NULL,
    created_at     timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    CONSTRAINT portal_accounts_email_key UNIQUE (email)
);

CREATE TABLE portal_invites (
    token_hash     text        PRIMARY KEY,
    email          text        NOT NULL,
    customer_id    text        NOT NULL,
    usage_plan_ids text[]      NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL
);
CREATE INDEX portal_invites_expires_idx ON portal_invites (expires_at);

CREATE TABLE portal_sessions (
    token_hash text        PRIMARY KEY,
    account_id text        NOT NULL REFERENCES portal_accounts (id) ON DELETE CASCADE,
    csrf_token text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX portal_sessions_account_idx ON portal_sessions (account_id);
CREATE INDEX portal_sessions_expires_idx ON portal_sessions (expires_at);
