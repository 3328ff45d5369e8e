#!/usr/bin/env bash
# sizing.sh: measure what one tollgate node and its Redis and PostgreSQL need per
# request and per API key (the figures of docs/production.md, "Sizing"):
#   - gateway CPU per request, so requests/s per core, with many keys in turn
#     (each request its own key: no capacity lease) and with one hot key;
#   - gateway memory (RSS and Go heap) per cached key record;
#   - Redis memory per key record (what the admin pushes) and per key that made
#     requests (its plan bucket, quota and daily usage);
#   - PostgreSQL bytes per key and per ledger row (key, plan, day).
# Everything runs on loopback: its own redis-server on a free port, a fresh
# database tollgate_sizing_<pid> (dropped at the end), the echo upstream, one
# admin node and one gateway node of bin/tollgate, and wrk with a small Lua
# script that gives each request the next key.
#   scripts/sizing.sh [KEYS [SECONDS]]      defaults: 50000 keys, 20 s of load
# CPU is the gateway process's own (utime + stime from /proc), so other work on
# the machine slows the run but moves the per-request figure little.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${1:-50000}
SECONDS_LOAD=${2:-20}
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
log() { printf 'sizing: %s\n' "$*" >&2; }

if ! command -v wrk >/dev/null; then
  log "installing wrk"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
scripts/services.sh
${GO:-go} build -ldflags "-X main.version=$(git describe --tags --always --dirty 2>/dev/null)" -o bin/ ./cmd/tollgate ./cmd/echo ./cmd/demo

run=$(mktemp -d "${TMPDIR:-/tmp}/tollgate-sizing.XXXXXX")
db=tollgate_sizing_$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -h 127.0.0.1 -U postgres -qc "drop database if exists $db with (force)" >/dev/null 2>&1 || true
  rm -rf "$run"
}
trap cleanup EXIT

taken=" "
free_port() { # a port nothing listens on and not handed out before
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    case "$taken" in *" $p "*) continue ;; esac
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && continue
    taken="$taken$p "
    echo "$p"
    return
  done
}
free_port >"$run/p"; redis_port=$(<"$run/p")
free_port >"$run/p"; echo_port=$(<"$run/p")
free_port >"$run/p"; admin_port=$(<"$run/p")
free_port >"$run/p"; gw_port=$(<"$run/p")
free_port >"$run/p"; metrics_port=$(<"$run/p")
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no --maxmemory-policy noeviction \
  --dir "$run" --logfile "$run/redis.log" &
pids+=($!)
psql -h 127.0.0.1 -U postgres -qc "create database $db" >/dev/null

export TOLLGATE_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
export TOLLGATE_REDIS_URL="redis://127.0.0.1:$redis_port/0"
export TOLLGATE_ADMIN_ACCESS_KEY_ID=AKIDSIZING TOLLGATE_ADMIN_SECRET_ACCESS_KEY=sizing-secret
export TOLLGATE_ADMIN_TOKEN=sizing-token-0123456789abcdefghijklmnop
export TOLLGATE_LOG_FORMAT=json TOLLGATE_LOG_LEVEL=info # the access log on, as in production
bin/echo -addr "127.0.0.1:$echo_port" >"$run/echo.log" 2>&1 &
pids+=($!)
TOLLGATE_ADMIN_ADDR="127.0.0.1:$admin_port" bin/tollgate serve --role=admin >"$run/admin.log" 2>&1 &
pids+=($!)
TOLLGATE_GATEWAY_ADDR="127.0.0.1:$gw_port" TOLLGATE_GATEWAY_TLS_ADDR="" TOLLGATE_METRICS_ADDR="127.0.0.1:$metrics_port" \
  bin/tollgate serve --role=gateway --no-migrate >/dev/null 2>"$run/gateway.err" &
gw_pid=$!
pids+=("$gw_pid")

wait_200() {
  for _ in $(seq 1 200); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$@")" = 200 ] && return 0
    sleep 0.1
  done
  log "no 200 from $*"; tail -n 20 "$run"/*.log "$run/gateway.err" >&2; exit 1
}
wait_200 "http://127.0.0.1:$admin_port/readyz"
wait_200 "http://127.0.0.1:$gw_port/readyz"

redis() { redis-cli -p "$redis_port" "$@"; }
used_memory() { redis info memory | tr -d '\r' | sed -n 's/^used_memory://p'; }
rss_kib() { sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$gw_pid/status"; }
heap() { curl -s "http://127.0.0.1:$metrics_port/metrics" | sed -n 's/^go_memstats_heap_inuse_bytes \(.*\)/\1/p' | awk '{printf "%d", $1}'; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$gw_pid/stat"; }
hz=$(getconf CLK_TCK)
admin=(-s -H "Authorization: Bearer $TOLLGATE_ADMIN_TOKEN" -H 'Content-Type: application/json')

# The demo API (GET /pets/{petId} on the echo upstream, stage prod), then a plan whose
# throttle never binds, with a monthly quota, for the keys.
bin/demo -admin "http://127.0.0.1:$admin_port" -upstream "http://127.0.0.1:$echo_port" >"$run/demo.out"
api=$(sed -n 's/^  export API_ID=\([^ ]*\).*/\1/p' "$run/demo.out")
plan=$(curl "${admin[@]}" -d '{"name":"sizing","throttle":{"rateLimit":100000,"burstLimit":100000},
  "quota":{"limit":1000000000,"period":"MONTH"},"apiStages":[{"apiId":"'"$api"'","stage":"prod"}]}' \
  "http://127.0.0.1:$admin_port/usageplans" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$api" ] && [ -n "$plan" ] || { log "could not create the API or the plan"; exit 1; }
host="$api.execute-api.localhost"

# Warm the gateway with one key, then read the baselines.
printf 'Name,Key,Enabled,UsagePlanIds\nwarm,SizingWarmKey000000000000,TRUE,%s\n' "$plan" >"$run/warm.csv"
curl "${admin[@]}" -H 'Content-Type: text/csv' --data-binary @"$run/warm.csv" "http://127.0.0.1:$admin_port/apikeys?mode=import&format=csv" >/dev/null
wait_200 -H "Host: $host" -H 'x-api-key: SizingWarmKey000000000000' "http://127.0.0.1:$gw_port/prod/pets/1"
mem0=$(used_memory) rss0=$(rss_kib) heap0=$(heap)

# KEYS keys in the plan, imported in batches of 20,000 (the admin takes 6 MiB a request).
log "importing $KEYS keys"
seq 1 "$KEYS" | awk '{printf "SizingKey%015d\n", $1}' >"$run/keys"
split -l 20000 "$run/keys" "$run/batch."
for b in "$run"/batch.*; do
  { echo 'Name,Key,Enabled,UsagePlanIds'; awk -v p="$plan" '{print $1 "," $1 ",TRUE," p}' "$b"; } >"$b.csv"
  code=$(curl "${admin[@]}" -o "$run/import.out" -w '%{http_code}' -H 'Content-Type: text/csv' --data-binary @"$b.csv" \
    "http://127.0.0.1:$admin_port/apikeys?mode=import&format=csv")
  [ "$code" = 201 ] || [ "$code" = 200 ] || { log "import answered $code: $(head -c 300 "$run/import.out")"; exit 1; }
done
# The admin publishes every key's record to Redis; the last one answering means all are there.
wait_200 -H "Host: $host" -H "x-api-key: $(tail -n 1 "$run/keys")" "http://127.0.0.1:$gw_port/prod/pets/1"
records=$(redis --scan --pattern 'tg:key:*' | wc -l)
mem1=$(used_memory)

cat >"$run/keys.lua" <<'EOF'
-- each wrk thread walks its own part of the key list, a new key per request
local threads = 0
function setup(thread) thread:set("id", threads); threads = threads + 1 end
function init(args)
  keys = {}
  for line in io.lines(os.getenv("SIZING_KEYS")) do keys[#keys + 1] = line end
  i = math.floor(id * #keys / tonumber(os.getenv("SIZING_THREADS")))
end
function request()
  i = i % #keys + 1
  return wrk.format("GET", "/prod/pets/1", {["Host"] = os.getenv("SIZING_HOST"), ["x-api-key"] = keys[i]})
end
EOF

# load KEYFILE SECONDS: wrk with 2 threads and 16 connections; prints "requests cpu_seconds non2xx"
load() {
  local before after out
  before=$(cpu_ticks)
  out=$(SIZING_KEYS=$1 SIZING_THREADS=2 SIZING_HOST=$host wrk -t2 -c16 -d"${2}s" -s "$run/keys.lua" "http://127.0.0.1:$gw_port/")
  after=$(cpu_ticks)
  echo "$out" >>"$run/wrk.out"
  local n bad
  n=$(echo "$out" | sed -n 's/^ *\([0-9]*\) requests in.*/\1/p')
  bad=$(echo "$out" | sed -n 's/^ *Non-2xx or 3xx responses: *\([0-9]*\)/\1/p')
  echo "$n $(awk -v t=$((after - before)) -v hz="$hz" 'BEGIN{printf "%.3f", t / hz}') ${bad:-0}"
}

log "loading the gateway: every key in turn, ${SECONDS_LOAD} s"
read -r n_many cpu_many bad_many < <(load "$run/keys" "$SECONDS_LOAD")
touched=$((n_many < KEYS ? n_many : KEYS))
sleep 2 # the last decisions settle
mem2=$(used_memory) rss2=$(rss_kib) heap2=$(heap)
echo SizingWarmKey000000000000 >"$run/hot"
log "loading the gateway: one hot key, ${SECONDS_LOAD} s"
read -r n_hot cpu_hot bad_hot < <(load "$run/hot" "$SECONDS_LOAD")

# PostgreSQL: the keys' rows, and the ledger once an admin flush has written the day.
sleep 2
pg() { psql -h 127.0.0.1 -U postgres -d "$db" -tAc "$1"; }
key_bytes=$(pg "select sum(pg_total_relation_size(t)) from unnest(array['api_keys','usage_plan_keys','key_stage_claims']::regclass[]) t")
ledger_rows=$(pg "select count(*) from usage_days")
ledger_bytes=$(pg "select pg_total_relation_size('usage_days') + pg_total_relation_size('usage_quotas')")

cached=$((touched < 100000 ? touched : 100000))
cat <<EOF
tollgate sizing, $(date -u +%FT%TZ), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(bin/tollgate version)
keys: $KEYS imported ($records key records in Redis), $touched made requests (each once or more), $cached cached by the gateway
gateway CPU, every key in turn: $n_many requests ($bad_many not 2xx) in $cpu_many CPU s: $(awk -v n="$n_many" -v c="$cpu_many" 'BEGIN{printf "%.0f µs a request, %.0f requests/s per core", c * 1e6 / n, n / c}')
gateway CPU, one hot key:       $n_hot requests ($bad_hot not 2xx) in $cpu_hot CPU s: $(awk -v n="$n_hot" -v c="$cpu_hot" 'BEGIN{printf "%.0f µs a request, %.0f requests/s per core", c * 1e6 / n, n / c}')
gateway memory: RSS $((rss0 / 1024)) MiB -> $((rss2 / 1024)) MiB, Go heap in use $((heap0 / 1048576)) -> $((heap2 / 1048576)) MiB: $(awk -v h=$((heap2 - heap0)) -v k="$cached" 'BEGIN{printf "%.0f bytes of heap per cached key", h / k}')
Redis: $(awk -v d=$((mem1 - mem0)) -v k="$KEYS" 'BEGIN{printf "%.0f bytes per key record", d / k}'), $(awk -v d=$((mem2 - mem1)) -v k="$touched" 'BEGIN{printf "%.0f bytes more per key that made requests (plan bucket, quota, daily usage)", d / k}'); used_memory $((mem0 / 1048576)) -> $((mem1 / 1048576)) -> $((mem2 / 1048576)) MiB
PostgreSQL: $(awk -v b="$key_bytes" -v k=$((KEYS + 1)) 'BEGIN{printf "%.0f bytes per key (api_keys, usage_plan_keys, key_stage_claims with indexes)", b / k}'); ledger $ledger_rows rows, $(awk -v b="$ledger_bytes" -v r="$ledger_rows" 'BEGIN{if (r > 0) printf "%.0f bytes per key and day (usage_days, usage_quotas with indexes)", b / r; else printf "not flushed yet"}')
EOF
