#!/usr/bin/env bash
# services.sh: make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379)
# answer, starting them from local Debian/Ubuntu packages when they do not
# (installing the packages first if they are missing and we are root).
# Used by `make demo`, `make services` and .ci/run.
#   scripts/services.sh          PostgreSQL, Redis, curl and a C compiler
#   scripts/services.sh locale   only the de_DE.UTF-8 locale two store tests use (make test)
#   scripts/services.sh helm     only Helm, built with go install; prints its path (scripts/chart.sh)
set -euo pipefail

log() { printf 'services: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
as_postgres() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi; }

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = PONG ]; }

install_pkgs() {
  log "installing $*"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ensure_postgres() {
  pg_up && return 0
  command -v pg_ctlcluster >/dev/null || install_pkgs postgresql postgresql-client
  local ver
  ver=$(ls /etc/postgresql | sort -V | tail -n1)
  log "starting PostgreSQL $ver"
  as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  for _ in $(seq 1 60); do pg_up && break; sleep 0.5; done
  pg_up || { log "PostgreSQL does not answer on 127.0.0.1:5432"; exit 1; }
  # Local trust for the postgres user over TCP, as the README assumes.
  if ! psql -h 127.0.0.1 -U postgres -c 'select 1' >/dev/null 2>&1; then
    local hba
    hba=$(as_postgres psql -tAc 'show hba_file')
    log "allowing trust auth for postgres on 127.0.0.1 in $hba"
    as_root sed -i '1i host all postgres 127.0.0.1/32 trust\nhost all postgres ::1/128 trust' "$hba"
    as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main reload
  fi
}

ensure_redis() {
  redis_up && return 0
  command -v redis-server >/dev/null || install_pkgs redis-server redis-tools
  log "starting Redis"
  mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --maxmemory-policy noeviction --dir /var/lib/redis --logfile /var/log/redis/tollgate.log \
    || redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --maxmemory-policy noeviction
  for _ in $(seq 1 40); do redis_up && break; sleep 0.25; done
  redis_up || { log "Redis does not answer on 127.0.0.1:6379"; exit 1; }
}

ensure_database() {
  local db=${1:-tollgate}
  psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname='$db'" | grep -q 1 \
    || psql -h 127.0.0.1 -U postgres -qc "create database $db" >/dev/null
}

# The billing example's test runs docs/billing/sync.sh, which needs curl (and psql);
# go test -race and redistest.ClockEnv (a Redis whose clock is days away) need a C compiler.
ensure_tools() {
  command -v curl >/dev/null || install_pkgs curl
  command -v cc >/dev/null || install_pkgs gcc libc6-dev
}

# Two store tests run PostgreSQL sessions with German messages
# (lc_messages = de_DE.UTF-8): errors must be classified without their
# text. The locale must exist on the host (PostgreSQL needs no restart);
# make test asks for it (scripts/services.sh locale), make demo does not,
# and the tests skip, saying so, where it is missing.
ensure_locale() {
  locale -a 2>/dev/null | grep -qix 'de_DE.utf8' && return 0
  [ -d /usr/share/i18n/locales ] && [ -f /usr/share/i18n/locales/de_DE ] || install_pkgs locales
  log "generating the de_DE.UTF-8 locale"
  # --no-archive: a running PostgreSQL still has the old locale archive mapped
  as_root localedef --no-archive -i de_DE -f UTF-8 de_DE.UTF-8
}

# Helm renders and lints the chart in deploy/helm (scripts/chart.sh, make
# test). Built from its Go module through the Go module proxy (go install),
# into GOBIN or GOPATH/bin: the first time takes a few minutes.
HELM_VERSION=v3.22.0
ensure_helm() {
  local bin
  bin=$(${GO:-go} env GOBIN)
  [ -n "$bin" ] || bin=$(${GO:-go} env GOPATH)/bin
  # go install leaves the module's version in the binary's build info (helm's own says v3.22)
  if [ -x "$bin/helm" ] && ${GO:-go} version -m "$bin/helm" 2>/dev/null | grep -q "helm.sh/helm/v3[[:space:]]*$HELM_VERSION"; then
    echo "$bin/helm"; return 0
  fi
  log "building helm $HELM_VERSION (go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION)"
  ${GO:-go} install "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
  echo "$bin/helm"
}

case "${1:-}" in
  locale) ensure_locale; exit 0 ;;
  helm) ensure_helm; exit 0 ;;
esac
ensure_postgres
ensure_redis
ensure_tools
ensure_database "${TOLLGATE_DB_NAME:-tollgate}"
log "PostgreSQL and Redis answer"
