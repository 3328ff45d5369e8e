-- The billing side of docs/billing.md: a billing database that keeps a copy
-- of tollgate's usage, synced from the usage record feed by sync.sh.

-- billing_usage is one row per (plan, key, UTC day), upserted by version:
-- the feed may send a day again with a higher version and a higher count.
CREATE TABLE IF NOT EXISTS billing_usage (
    usage_plan_id text   NOT NULL,
    key_id        text   NOT NULL,
    customer_id   text   NOT NULL DEFAULT '',
    day           date   NOT NULL,
    count         bigint NOT NULL,
    version       bigint NOT NULL,
    PRIMARY KEY (usage_plan_id, key_id, day)
);

-- billing_cursor is the feed position: the highest version applied. It is
-- updated in the same transaction as the rows, so a sync that dies midway
-- repeats at most one page, which the upsert makes harmless.
CREATE TABLE IF NOT EXISTS billing_cursor (
    id    boolean PRIMARY KEY DEFAULT true CHECK (id),
    after bigint  NOT NULL
);
INSERT INTO billing_cursor (after) VALUES (0) ON CONFLICT DO NOTHING;

-- billing_prices is a price list per usage plan: a monthly base fee that
-- includes some requests, then a price per 1000 requests beyond them.
CREATE TABLE IF NOT EXISTS billing_prices (
    usage_plan_id  text   PRIMARY KEY,
    base_cents     bigint NOT NULL,
    included       bigint NOT NULL,
    cents_per_1000 bigint NOT NULL
);

-- billing_page holds the page sync.sh is applying (one JSON document).
CREATE UNLOGGED TABLE IF NOT EXISTS billing_page (doc jsonb NOT NULL);
