-- usage_days.count holds cost units (docs/cost.md): one per request unless
-- the plan's tollgate:cost says otherwise; requests keeps the request count
-- beside it. NULL on rows written before this migration, whose requests
-- all cost one unit: readers take COALESCE(requests, count). Adding a
-- nullable column rewrites no row, so a large ledger migrates at once.
ALTER TABLE usage_days ADD COLUMN requests bigint CHECK (requests >= 0);
