-- Applies the feed page in billing_page (docs/billing.md, sync.sh) in one
-- transaction and prints whether more records were waiting (true/false).
BEGIN;
INSERT INTO billing_usage (usage_plan_id, key_id, customer_id, day, count, version)
SELECT r."usagePlanId", r."keyId", r."customerId", r.date::date, r.count, r.version
FROM billing_page p,
     jsonb_to_recordset(p.doc -> 'item')
         AS r("usagePlanId" text, "keyId" text, "customerId" text, date text, count bigint, version bigint)
ON CONFLICT (usage_plan_id, key_id, day) DO UPDATE
SET count = EXCLUDED.count, version = EXCLUDED.version, customer_id = EXCLUDED.customer_id
WHERE EXCLUDED.version > billing_usage.version;
UPDATE billing_cursor SET after = (SELECT (doc ->> 'nextAfter')::bigint FROM billing_page);
SELECT doc ->> 'hasMore' FROM billing_page;
DELETE FROM billing_page;
COMMIT;
