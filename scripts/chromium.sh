#!/usr/bin/env bash
# chromium.sh: make sure a Chromium is there for the operator console's
# browser test (cmd/tollgate TestConsole, through internal/browsertest),
# installing Debian's chromium package when none is found. The test looks
# for $TOLLGATE_TEST_CHROMIUM, else chromium or chromium-browser on PATH,
# and fails (never skips) without one. Used by `make test` (`make chromium`).
set -euo pipefail

log() { printf 'chromium: %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -n "${TOLLGATE_TEST_CHROMIUM:-}" ] || command -v chromium >/dev/null || command -v chromium-browser >/dev/null; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  log "no Chromium found and no apt-get to install one: install Chromium, or set TOLLGATE_TEST_CHROMIUM to its executable"
  exit 1
fi
log "installing Debian's chromium for the console's browser test"
as_root apt-get update -qq
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium >/dev/null || { log "chromium is still missing after apt-get install"; exit 1; }
