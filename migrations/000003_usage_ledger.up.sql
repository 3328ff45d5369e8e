-- The usage ledger (docs/usage.md): admitted requests per (key, plan, UTC
-- day), moved here from the limiter Redis by the admin's flush worker, and
-- the last observed quota state per (key, plan), from which a limiter Redis
-- that lost its data is restored.
--
-- No foreign keys: usage is billing history and outlives the keys and plans
-- it was counted for (deleting a key keeps its rows).

-- usage_days holds one row per (plan, key, UTC day). Redis counts a day
-- absolutely, so a flush stores GREATEST(stored, observed): a retried,
-- late or concurrent flush never lowers or double counts a row. version
-- rises on every change of the row (usage_version_seq) and orders the
-- record feed. Writers serialise on a transaction-level advisory lock
-- before drawing versions (plans/postgres: UsageWriterLock, FlushUsage;
-- this comment first named a SHARE ROW EXCLUSIVE table lock, replaced
-- because it blocked autovacuum), so versions become visible in the order
-- they were drawn and a feed reader's cursor never skips a row that
-- commits later with a lower version.
CREATE SEQUENCE usage_version_seq AS bigint;

CREATE TABLE usage_days (
    plan_id    text        NOT NULL,
    key_id     text        NOT NULL,
    day        date        NOT NULL,
    count      bigint      NOT NULL CHECK (count >= 0),
    version    bigint      NOT NULL DEFAULT nextval('usage_version_seq'),
    updated_at timestamptz NOT NULL,
    CONSTRAINT usage_days_pkey PRIMARY KEY (plan_id, key_id, day),
    CONSTRAINT usage_days_version_key UNIQUE (version)
);
ALTER SEQUENCE usage_version_seq OWNED BY usage_days.version;
CREATE INDEX usage_days_day_idx ON usage_days (day);

-- usage_quotas holds the last observed quota state of each (key, plan):
-- the start of the quota period it belongs to, the requests counted in
-- that period (UpdateUsage may have lowered it) and the change sequence
-- number the limiter gave that state. A flush replaces a row only with a
-- newer sequence number, so an older observation arriving late never
-- overwrites a newer one, and a count that went down is kept. The key
-- comes first in the primary key: a restore works through keys.
CREATE TABLE usage_quotas (
    key_id       text        NOT NULL,
    plan_id      text        NOT NULL,
    period_start timestamptz NOT NULL,
    count        bigint      NOT NULL CHECK (count >= 0),
    seq          bigint      NOT NULL,
    updated_at   timestamptz NOT NULL,
    CONSTRAINT usage_quotas_pkey PRIMARY KEY (key_id, plan_id)
);
