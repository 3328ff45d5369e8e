#!/usr/bin/env bash
# cluster.sh: make sure a local three-master Redis Cluster answers for the
# tests, and print its URL (redis-cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3).
# Used by `make test` (which passes the URL to the tests as
# TOLLGATE_TEST_REDIS_CLUSTER_URL). A cluster already answering on the
# ports is reused; otherwise three `redis-server --cluster-enabled yes`
# start on the first free ports from TOLLGATE_TEST_CLUSTER_PORT (default
# 7101), no persistence, and `redis-cli --cluster create` joins them with
# no replicas. redis-server and redis-cli come from Debian packages when
# missing. It keeps running after the tests, so the next make test starts
# at once; stop it with: scripts/cluster.sh stop (make stop-cluster).
set -euo pipefail

log() { printf 'cluster: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
DIR=${TOLLGATE_TEST_CLUSTER_DIR:-${TMPDIR:-/tmp}/tollgate-cluster}
BASE=${TOLLGATE_TEST_CLUSTER_PORT:-7101}

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}" 2>/dev/null; }
answers() { [ "$(cli "$1" ping)" = PONG ]; }
is_cluster_node() { cli "$1" cluster info | grep -q '^cluster_enabled\|cluster_state'; }
state_ok() { cli "$1" cluster info | tr -d '\r' | grep -q '^cluster_state:ok$'; }
known() { cli "$1" cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p'; }
url() { echo "redis-cluster://127.0.0.1:$1,127.0.0.1:$(($1 + 1)),127.0.0.1:$(($1 + 2))"; }

# stop shuts down the nodes this script started (their first port is kept
# in $DIR/base: a busy 7101 moves them) and removes their files.
stop() {
  [ -f "$DIR/base" ] && BASE=$(cat "$DIR/base")
  for p in $(seq "$BASE" $((BASE + 2))); do
    if answers "$p"; then cli "$p" shutdown nosave >/dev/null || true; log "stopped the node on 127.0.0.1:$p"; fi
  done
  rm -rf "$DIR"
}
[ "${1:-}" = stop ] && { stop; exit 0; }

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  log "installing redis-server and redis-tools"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
fi

# A base whose three ports are free, or already our healthy cluster.
for _ in $(seq 1 20); do
  if state_ok "$BASE" && state_ok $((BASE + 1)) && state_ok $((BASE + 2)) && [ "$(known "$BASE")" -ge 3 ]; then
    url "$BASE"; exit 0
  fi
  busy=0
  for p in $(seq "$BASE" $((BASE + 2))); do
    if answers "$p" && ! is_cluster_node "$p"; then busy=1; fi
    if ! answers "$p" && (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then busy=1; fi
  done
  [ "$busy" = 0 ] && break
  BASE=$((BASE + 10))
done

mkdir -p "$DIR"
echo "$BASE" >"$DIR/base"
for p in $(seq "$BASE" $((BASE + 2))); do
  answers "$p" && continue
  log "starting a cluster node on 127.0.0.1:$p"
  rm -f "$DIR/nodes-$p.conf"
  redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$DIR/nodes-$p.conf" \
    --cluster-node-timeout 5000 --save "" --appendonly no --maxmemory-policy noeviction \
    --dir "$DIR" --logfile "$DIR/redis-$p.log" --daemonize yes
done
for p in $(seq "$BASE" $((BASE + 2))); do
  for _ in $(seq 1 40); do answers "$p" && break; sleep 0.25; done
  answers "$p" || { log "node 127.0.0.1:$p does not answer"; exit 1; }
done
if [ "$(known "$BASE")" -lt 3 ]; then
  log "creating the cluster (three masters, no replicas)"
  redis-cli --cluster create "127.0.0.1:$BASE" "127.0.0.1:$((BASE + 1))" "127.0.0.1:$((BASE + 2))" \
    --cluster-replicas 0 --cluster-yes >/dev/null
fi
for _ in $(seq 1 80); do
  state_ok "$BASE" && state_ok $((BASE + 1)) && state_ok $((BASE + 2)) && { url "$BASE"; exit 0; }
  sleep 0.25
done
log "the cluster on 127.0.0.1:$BASE.. is not ok"
exit 1
