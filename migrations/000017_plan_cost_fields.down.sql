ALTER TABLE usage_plan_stages DROP COLUMN method_costs;
ALTER TABLE usage_plans DROP COLUMN customer_quota;
ALTER TABLE usage_plans DROP COLUMN cost;
