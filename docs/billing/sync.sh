#!/usr/bin/env bash
# Syncs tollgate's usage record feed (GET /usage/records) into the billing
# database of schema.sql, page by page, until it has caught up
# (docs/billing.md). Run it from cron, one at a time (flock), as often as
# invoices need to be fresh. Needs curl, sed and psql.
#
#   TOLLGATE_ADMIN_URL     the admin API (default http://127.0.0.1:8001)
#   TOLLGATE_ADMIN_TOKEN   its bearer token
#   BILLING_DATABASE_URL   the billing database (postgres://...)
#   BILLING_PAGE_SIZE      records per request (default 1000, at most 5000)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
admin=${TOLLGATE_ADMIN_URL:-http://127.0.0.1:8001}
db=${BILLING_DATABASE_URL:?set BILLING_DATABASE_URL}
limit=${BILLING_PAGE_SIZE:-1000}
: "${TOLLGATE_ADMIN_TOKEN:?set TOLLGATE_ADMIN_TOKEN}"

while :; do
  after=$(psql "$db" -XqtA -v ON_ERROR_STOP=1 -c 'SELECT after FROM billing_cursor')
  # One page, loaded as one CSV field (the JSON is one line; doubling its
  # quotes makes it a valid CSV value), then applied in one transaction.
  more=$(curl -fsS -H "Authorization: Bearer $TOLLGATE_ADMIN_TOKEN" "$admin/usage/records?after=$after&limit=$limit" |
    sed 's/"/""/g; s/.*/"&"/' |
    psql "$db" -XqtA -v ON_ERROR_STOP=1 -c '\copy billing_page (doc) FROM pstdin WITH (FORMAT csv)' -f "$here/apply.sql")
  [ "$more" = true ] || break
done
