#!/usr/bin/env bash
# demo.sh: start the echo upstream and tollgate (admin + gateway) in the
# background, create a demo API, stage, usage plan and API key through the
# admin API, then call the gateway until the key is throttled.
#   scripts/demo.sh        start (PostgreSQL and Redis must answer: make services)
#   scripts/demo.sh stop   stop what it started
set -euo pipefail
cd "$(dirname "$0")/.."
run=.demo
mkdir -p "$run"

stop() {
  for p in tollgate echo; do
    if [ -f "$run/$p.pid" ]; then
      pid=$(cat "$run/$p.pid")
      # Only our own process: the pid may have been reused since.
      if [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = "$p" ]; then kill "$pid" 2>/dev/null || true; fi
      rm -f "$run/$p.pid"
    fi
  done
}
if [ "${1:-}" = stop ]; then stop; echo "demo stopped"; exit 0; fi
stop

export TOLLGATE_DATABASE_URL=${TOLLGATE_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/tollgate?sslmode=disable}
export TOLLGATE_ADMIN_ACCESS_KEY_ID=${TOLLGATE_ADMIN_ACCESS_KEY_ID:-AKIDTOLLGATEDEMO}
export TOLLGATE_ADMIN_SECRET_ACCESS_KEY=${TOLLGATE_ADMIN_SECRET_ACCESS_KEY:-tollgate-demo-secret-change-me}
export TOLLGATE_ADMIN_TOKEN=${TOLLGATE_ADMIN_TOKEN:-tollgate-demo-token-0123456789abcdef}
export TOLLGATE_LOG_FORMAT=${TOLLGATE_LOG_FORMAT:-text}
export TOLLGATE_ADMIN_ADDR=${TOLLGATE_ADMIN_ADDR:-127.0.0.1:8001} # well-known demo credentials: loopback only

# Refuse to start over something else (an earlier demo, another clone's).
in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for port in 8000 8001 8080 8443; do
  for _ in $(seq 1 30); do in_use "$port" || break; sleep 0.1; done # our own stopped demo lets go
  if in_use "$port"; then
    echo "demo: port $port is in use (an earlier demo? run 'make stop' in its folder)" >&2
    exit 1
  fi
done

bin/echo -addr 127.0.0.1:8080 >"$run/echo.log" 2>&1 &
echo $! >"$run/echo.pid"
bin/tollgate serve >"$run/tollgate.log" 2>&1 &
echo $! >"$run/tollgate.pid"

wait_ready() {
  for _ in $(seq 1 100); do
    for p in tollgate echo; do
      kill -0 "$(cat "$run/$p.pid")" 2>/dev/null || { echo "demo: $p exited; see $run/$p.log" >&2; tail -n 20 "$run/$p.log" >&2; exit 1; }
    done
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0
    sleep 0.1
  done
  echo "demo: $1 is not ready; see $run/tollgate.log" >&2
  tail -n 20 "$run/tollgate.log" >&2
  exit 1
}
wait_ready http://127.0.0.1:8080/ready
wait_ready http://127.0.0.1:8001/readyz
wait_ready http://127.0.0.1:8000/readyz

bin/demo -admin http://127.0.0.1:8001 -upstream http://127.0.0.1:8080 | tee "$run/demo.out"
key=$(sed -n 's/^TOLLGATE_DEMO_KEY=//p' "$run/demo.out")
url=$(sed -n 's/^TOLLGATE_DEMO_URL=//p' "$run/demo.out")

# The stage serves once every gateway node has the new config (well under a second).
for _ in $(seq 1 50); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "x-api-key: $key" "$url/1")" != 404 ] && break
  sleep 0.05
done
sleep 3 # let the burst refill after the readiness probe

echo
echo "Calling the gateway 7 times in a row (burst 5, then throttled):"
for i in $(seq 1 7); do
  curl -s -o /dev/null -w "  request $i: %{http_code}\n" -H "x-api-key: $key" "$url/$i"
done
echo
echo "One call in full:"
sleep 1
curl -s -i -H "x-api-key: $key" "$url/42" | sed 's/^/  /'

# The README's next steps use these variables: paste them, or source the file.
{
  grep '^  export API_ID=' "$run/demo.out" | sed 's/^  //'
  echo "export AWS_ACCESS_KEY_ID=$TOLLGATE_ADMIN_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$TOLLGATE_ADMIN_SECRET_ACCESS_KEY AWS_DEFAULT_REGION=us-east-1"
  echo "export TOKEN=$TOLLGATE_ADMIN_TOKEN TOLLGATE_ADMIN_TOKEN=$TOLLGATE_ADMIN_TOKEN"
  echo "alias tg='aws apigateway --endpoint-url http://$TOLLGATE_ADMIN_ADDR'"
} >"$run/env"
echo
echo "Operator console: http://$TOLLGATE_ADMIN_ADDR/console/ (sign in with the admin token $TOLLGATE_ADMIN_TOKEN)"
echo "tollgate and the echo upstream keep running (logs in $run/); stop them with: make stop"
echo
echo "Next steps (README, from \"Managing tollgate with the AWS CLI\" on): paste these lines into your shell,"
echo "or run: source $run/env"
echo
sed 's/^/  /' "$run/env"
