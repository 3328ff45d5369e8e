-- An invoice line per customer and usage plan for one calendar month of UTC
-- days (docs/billing.md): psql -v month=2026-03-01 -f invoice.sql.
-- Requests beyond the included ones are billed per started 1000.
SELECT u.customer_id,
       u.usage_plan_id,
       sum(u.count) AS requests,
       p.base_cents + ceil(greatest(sum(u.count) - p.included, 0) / 1000.0)::bigint * p.cents_per_1000 AS amount_cents
FROM billing_usage u
JOIN billing_prices p USING (usage_plan_id)
WHERE u.day >= date :'month' AND u.day < date :'month' + interval '1 month'
GROUP BY u.customer_id, u.usage_plan_id, p.base_cents, p.included, p.cents_per_1000
ORDER BY u.customer_id, u.usage_plan_id;
