#!/usr/bin/env bash
# faults.sh: measure what a tollgate node does when a client or a dependency
# misbehaves, with the default settings: the figures of docs/operations.md
# ("What each failure does"). It builds bin/tollgate and bin/echo, starts its
# own redis-server on a free port (killed, wiped and restarted here), a socat
# proxy in front of PostgreSQL (stopped and killed here; the server itself is
# never touched), a database tollgate_faults_<pid> (dropped at the end), the
# echo upstream and one all-in-one node, then prints one line per figure.
# Takes about two minutes. Needs curl, jq, socat, psql, createdb, dropdb,
# redis-server and redis-cli.
#   scripts/faults.sh            run every measurement
#   KEEP=1 scripts/faults.sh     leave the work directory (logs) behind
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
work=$(mktemp -d)
db="tollgate_faults_$$"
token="faults-bearer-token-0123456789abcdefghij"
pids=()

cleanup() {
  for p in "${pids[@]}"; do kill -CONT -- "-$p" 2>/dev/null || true; kill -- "-$p" 2>/dev/null || kill "$p" 2>/dev/null || true; done
  [ -n "${rport:-}" ] && redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
  dropdb -h 127.0.0.1 -U postgres --if-exists "$db" >/dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] && echo "logs in $work" || rm -rf "$work"
}
trap cleanup EXIT

free_port() { # a port nothing answers on (a race with another program is unlikely)
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f s", b - a }'; }
say() { printf '%-58s %s\n' "$1" "$2"; }
status() { curl -s -o /dev/null -m 60 -w '%{http_code}' "$@"; }
admin() { curl -sf -m 30 -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }

$GO build -o bin/ ./cmd/tollgate ./cmd/echo
rport=$(free_port) pport=$(free_port) aport=$(free_port) gport=$(free_port) eport=$(free_port)
mkdir -p "$work/redis"

start_redis() {
  redis-server --port "$rport" --bind 127.0.0.1 --dir "$work/redis" --save "" --appendonly yes \
    --appendfsync everysec --maxmemory-policy noeviction --daemonize yes --logfile "$work/redis.log"
  for _ in $(seq 1 100); do [ "$(redis-cli -p "$rport" ping 2>/dev/null)" = PONG ] && return; sleep 0.05; done
  echo "faults: redis-server does not start" >&2; exit 1
}
start_proxy() { # socat in its own process group, so one signal stops every connection
  setsid socat TCP-LISTEN:"$pport",fork,reuseaddr,bind=127.0.0.1 TCP:127.0.0.1:5432 &
  proxy=$!
  pids+=("$proxy")
  for _ in $(seq 1 100); do (exec 3<>"/dev/tcp/127.0.0.1/$pport") 2>/dev/null && return; sleep 0.05; done
}
start_redis
start_proxy
createdb -h 127.0.0.1 -U postgres "$db"
setsid bin/echo -addr "127.0.0.1:$eport" >"$work/echo.log" 2>&1 &
pids+=($!)
TOLLGATE_DATABASE_URL="postgres://postgres@127.0.0.1:$pport/$db?sslmode=disable" \
  TOLLGATE_REDIS_URL="redis://127.0.0.1:$rport/0" TOLLGATE_ADMIN_TOKEN=$token \
  TOLLGATE_ADMIN_ADDR="127.0.0.1:$aport" TOLLGATE_GATEWAY_ADDR="127.0.0.1:$gport" \
  TOLLGATE_METRICS_ADDR=127.0.0.1:0 TOLLGATE_GATEWAY_TLS_ADDR=127.0.0.1:0 TOLLGATE_LOG_LEVEL=warn \
  setsid bin/tollgate serve >"$work/tollgate.log" 2>&1 &
node=$!
pids+=("$node")
for _ in $(seq 1 200); do [ "$(status "http://127.0.0.1:$aport/readyz")" = 200 ] && break; sleep 0.05; done

# An API with ANY /items (API key required) proxied to the echo upstream,
# stage prod, a plan that never binds, and two keys.
api=$(admin -X POST "http://127.0.0.1:$aport/restapis" -d '{"name":"faults"}' | jq -r .id)
root=$(admin "http://127.0.0.1:$aport/restapis/$api/resources" | jq -r '.item[] | select(.path=="/") | .id')
res=$(admin -X POST "http://127.0.0.1:$aport/restapis/$api/resources/$root" -d '{"pathPart":"items"}' | jq -r .id)
admin -X PUT "http://127.0.0.1:$aport/restapis/$api/resources/$res/methods/ANY" \
  -d '{"authorizationType":"NONE","apiKeyRequired":true}' >/dev/null
admin -X PUT "http://127.0.0.1:$aport/restapis/$api/resources/$res/methods/ANY/integration" \
  -d "{\"type\":\"HTTP_PROXY\",\"httpMethod\":\"ANY\",\"uri\":\"http://127.0.0.1:$eport/items\"}" >/dev/null
admin -X POST "http://127.0.0.1:$aport/restapis/$api/deployments" -d '{"stageName":"prod"}' >/dev/null
plan=$(admin -X POST "http://127.0.0.1:$aport/usageplans" -d "{\"name\":\"faults\",\"apiStages\":[{\"apiId\":\"$api\",\"stage\":\"prod\"}],
  \"throttle\":{\"rateLimit\":10000,\"burstLimit\":10000},\"quota\":{\"limit\":1000000000,\"period\":\"DAY\"}}" | jq -r .id)
newkey() {
  local k
  k=$(admin -X POST "http://127.0.0.1:$aport/apikeys" -d "{\"name\":\"$1\",\"enabled\":true}")
  admin -X POST "http://127.0.0.1:$aport/usageplans/$plan/keys" -d "{\"keyId\":\"$(jq -r .id <<<"$k")\",\"keyType\":\"API_KEY\"}" >/dev/null
  jq -r .value <<<"$k"
}
known=$(newkey known)
items="http://127.0.0.1:$gport/prod/items"
host="Host: $api.execute-api.localhost"
for _ in $(seq 1 100); do [ "$(status -H "$host" -H "x-api-key: $known" "$items")" = 200 ] && break; sleep 0.05; done
limited() { curl -s -o /dev/null -D - -m 5 -H "$host" -H "x-api-key: $1" "$items" | grep -qi '^x-ratelimit-limit'; }

echo "tollgate failure figures, default settings ($(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg))"

# 1. Slow request bodies: 4 bytes of a 100000-byte body, then nothing.
trickle() { # port, request line and headers; prints "<status> after <seconds>"
  local t0 line
  t0=$(now)
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf '%s\r\nContent-Length: 100000\r\n\r\nabcd' "$2" >&3
  line=$(timeout 120 head -n1 <&3 | tr -d '\r') || true
  exec 3<&-
  echo "${line#HTTP/1.1 } after $(since "$t0")"
}
trickle "$gport" "$(printf 'POST /prod/items HTTP/1.1\r\n%s\r\nx-api-key: %s' "$host" "$known")" >"$work/t1" &
t1=$!
trickle "$gport" "$(printf 'POST /prod/items HTTP/1.1\r\n%s\r\nx-api-key: NoSuchKey0123456789abcdef' "$host")" >"$work/t2" &
t2=$!
trickle "$aport" "$(printf 'POST /restapis HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s' "$token")" >"$work/t3" &
t3=$!
wait "$t1" "$t2" "$t3"
say "slow body, gateway, key accepted (body read)" "$(cat "$work/t1")"
say "slow body, gateway, key refused (body never read)" "$(cat "$work/t2")"
say "slow body, admin, authenticated" "$(cat "$work/t3")"

# 2. Limiter Redis killed, then started again with its append-only file.
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
sleep 0.2
t0=$(now); s=$(status -H "$host" -H "x-api-key: $known" "$items")
say "Redis down: known key (failure mode open)" "$s after $(since "$t0")"
t0=$(now); s=$(status -H "$host" -H "x-api-key: NeverSeenNeverSeen0123456" "$items")
say "Redis down: key not in the node's cache" "$s after $(since "$t0")"
t0=$(now); s=$(status -H "Authorization: Bearer $token" "http://127.0.0.1:$aport/apikeys" -X POST -d '{"name":"x"}')
say "Redis down: admin write" "$s after $(since "$t0")"
start_redis
t0=$(now)
for _ in $(seq 1 400); do limited "$known" && break; sleep 0.01; done
say "Redis back (same data): limits enforced again" "after $(since "$t0")"

# 3. Limiter Redis restarted empty: the admin republishes everything and
# writes the usage ledger back; keyed requests get 503 until it has.
unseen=$(newkey unseen)
redis-cli -p "$rport" shutdown nosave >/dev/null 2>&1 || true
rm -rf "$work/redis" && mkdir -p "$work/redis"
start_redis
t0=$(now); unavailable=0; other=0; known_at=""; unseen_at=""
for _ in $(seq 1 400); do
  case "$(status -H "$host" -H "x-api-key: $known" "$items")" in
    200) [ -n "$known_at" ] || known_at=$(since "$t0") ;;
    503) [ -n "$known_at" ] || unavailable=$((unavailable + 1)) ;;
    *) other=$((other + 1)) ;;
  esac
  [ -n "$unseen_at" ] || { [ "$(status -H "$host" -H "x-api-key: $unseen" "$items")" = 200 ] && unseen_at=$(since "$t0"); }
  [ -n "$known_at" ] && [ -n "$unseen_at" ] && break
  sleep 0.01
done
say "Redis back empty: known key admitted again (restored)" "after ${known_at:-never}, $unavailable answers 503 before"
say "Redis back empty: unseen key admitted (republished)" "after ${unseen_at:-never}"
say "Redis back empty: known-key answers other than 200 and 503" "$other"

# 4. PostgreSQL accepts connections but never answers (proxy stopped).
kill -STOP -- "-$proxy"
t0=$(now); s=$(status -H "Authorization: Bearer $token" "http://127.0.0.1:$aport/usageplans")
say "PostgreSQL stalled: admin read" "$s after $(since "$t0")"
t0=$(now); s=$(status -H "Authorization: Bearer $token" -X POST -d '{"name":"y"}' "http://127.0.0.1:$aport/apikeys")
say "PostgreSQL stalled: admin write" "$s after $(since "$t0")"
t0=$(now); s=$(status "http://127.0.0.1:$aport/readyz")
say "PostgreSQL stalled: admin /readyz" "$s after $(since "$t0")"
t0=$(now); s=$(status -H "$host" -H "x-api-key: $known" "$items")
say "PostgreSQL stalled: gateway, known key" "$s after $(since "$t0")"
kill -CONT -- "-$proxy"
t0=$(now)
for _ in $(seq 1 600); do [ "$(status "http://127.0.0.1:$aport/readyz")" = 200 ] && break; sleep 0.05; done
say "PostgreSQL answers again: admin ready" "after $(since "$t0")"

# 5. PostgreSQL gone (connections refused).
kill -- "-$proxy" 2>/dev/null || true
sleep 0.2
t0=$(now); s=$(status -H "Authorization: Bearer $token" "http://127.0.0.1:$aport/usageplans")
say "PostgreSQL down: admin read" "$s after $(since "$t0")"
start_proxy
t0=$(now)
for _ in $(seq 1 600); do [ "$(status "http://127.0.0.1:$aport/readyz")" = 200 ] && break; sleep 0.05; done
say "PostgreSQL back: admin ready" "after $(since "$t0")"

# 6. SIGTERM with nothing in flight.
t0=$(now)
kill -TERM "$node"
while kill -0 "$node" 2>/dev/null; do sleep 0.01; done
say "SIGTERM, idle: process exited" "after $(since "$t0")"
