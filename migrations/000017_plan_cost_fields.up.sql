-- Native cost fields of a usage plan (docs/cost.md): the plan's cost
-- (weight, header or json, reserve, ifMissing; NULL: the tags say it),
-- its customer quota (NULL: none, or the tag's) and per-method weights of
-- each api stage, keyed like its per-method throttles.
ALTER TABLE usage_plans ADD COLUMN cost jsonb, ADD COLUMN customer_quota integer;
ALTER TABLE usage_plan_stages ADD COLUMN method_costs jsonb NOT NULL DEFAULT '{}';
