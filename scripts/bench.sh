#!/usr/bin/env bash
# bench.sh: run the benchmark (make bench). Installs wrk from the Debian/Ubuntu
# packages when it is missing, makes sure PostgreSQL answers (services.sh),
# builds the binaries and runs bin/bench, which starts its own redis-server,
# upstream, bare proxy, naive peer and tollgate nodes on loopback and prints the
# report. Extra arguments go to bin/bench (e.g. -duration 3s -conns 16,64).
set -euo pipefail
cd "$(dirname "$0")/.."
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if ! command -v wrk >/dev/null; then
  echo "bench: installing wrk" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
scripts/services.sh
GO=${GO:-go}
$GO build -o bin/ ./cmd/tollgate ./cmd/bareproxy ./cmd/naiveproxy ./cmd/bench
exec bin/bench -bin bin "$@"
