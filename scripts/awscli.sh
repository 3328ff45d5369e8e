#!/usr/bin/env bash
# awscli.sh: the AWS CLI conformance check of `make test`. It drives a
# fresh tollgate with Debian's awscli (installed when /usr/bin/aws is
# missing) as an operator moving from Amazon API Gateway would, and
# checks the gateway as a browser on another origin sees it:
#   import-rest-api of an OpenAPI 3 document with AWS extensions (CORS MOCK,
#   gateway responses), create-deployment, create-usage-plan,
#   import-api-keys from CSV with the plan, calls through the gateway until
#   the key is throttled, a CORS preflight and a cross-origin 429 (with
#   curl, and from a page in headless Chromium when /usr/bin/chromium exists),
#   get-usage, tag-resource/get-tags (an API key's, a stage's stale answer
#   tags), get-export and a re-import of it;
#   then, in a section of its own, a custom domain name (create-domain-name
#   with a certificate from a CA made here with openssl, a multi-level base
#   path mapping, HTTPS calls with a key through curl --resolve and --cacert,
#   a renewed certificate through update-domain-name);
#   and, in the last section, the migration of a real-world-shaped API
#   definition (scripts/testdata/shop-*): import with basepath=split and its
#   warnings in document order, deploy, calls (templates, CORS on {proxy+},
#   over the custom domain too), export in all four forms, re-import, diff.
# Everything runs on loopback: its own database (dropped at the end), its
# own Redis key prefix on the test Redis, free ports. PostgreSQL and Redis
# must answer (scripts/services.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
run=$(mktemp -d /tmp/tollgate-awscli.XXXXXX)
db=tollgate_awscli_$$
prefix=tgcli$$
pids=()
checks=0

log() { printf 'awscli: %s\n' "$*" >&2; }
fail() {
  log "FAIL: $*"
  for f in "$run"/*.log; do log "--- $f"; tail -n 20 "$f" >&2; done
  exit 1
}
ok() { checks=$((checks + 1)); log "ok: $*"; }
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
  redis-cli -h 127.0.0.1 --scan --pattern "$prefix:*" 2>/dev/null | xargs -r -n 500 redis-cli -h 127.0.0.1 del >/dev/null 2>&1 || true
  rm -rf "$run"
}
trap cleanup EXIT

if [ ! -x /usr/bin/aws ]; then
  log "installing Debian's awscli"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq awscli >/dev/null
fi
AWS=/usr/bin/aws

# free_port prints a port nothing listens on, below Linux's ephemeral
# range (32768 and up), where outgoing connections take their ports.
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
}
admin_port=$(free_port)
gw_port=$(free_port)
tls_port=$(free_port)
echo_port=$(free_port)

$GO build -o "$run/" ./cmd/tollgate ./cmd/echo
psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE $db" >/dev/null

export TOLLGATE_DATABASE_URL="postgres://postgres@127.0.0.1:5432/$db?sslmode=disable"
export TOLLGATE_REDIS_PREFIX=$prefix
export TOLLGATE_ADMIN_ADDR=127.0.0.1:$admin_port TOLLGATE_GATEWAY_ADDR=127.0.0.1:$gw_port
export TOLLGATE_GATEWAY_TLS_ADDR=127.0.0.1:$tls_port
# Custom domain names' private keys are stored sealed with it (the domain section below).
export TOLLGATE_SECRETS_KEY=awscli-test-secrets-key-0123456789abcdef
export TOLLGATE_ADMIN_ACCESS_KEY_ID=AKIDAWSCLITEST TOLLGATE_ADMIN_SECRET_ACCESS_KEY=awscli-test-secret
export TOLLGATE_LOG_FORMAT=text
# A loaded test machine can miss the production 50 ms decision deadline, and
# the limiter then fails open (admits without a decision): the checks below
# count on every decision being made.
export TOLLGATE_REDIS_TIMEOUT=5s
"$run/echo" -addr "127.0.0.1:$echo_port" >"$run/echo.log" 2>&1 &
pids+=($!)
"$run/tollgate" serve >"$run/tollgate.log" 2>&1 &
pids+=($!)

export AWS_ACCESS_KEY_ID=$TOLLGATE_ADMIN_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY=$TOLLGATE_ADMIN_SECRET_ACCESS_KEY
export AWS_DEFAULT_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null AWS_PAGER=
apigw() { $AWS --endpoint-url "http://127.0.0.1:$admin_port" apigateway "$@"; }

wait_ok() {
  for _ in $(seq 1 150); do
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a process exited before $1 answered"; done
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" = 200 ] && return 0
    sleep 0.1
  done
  fail "$1 did not answer 200"
}
wait_ok "http://127.0.0.1:$echo_port/ready"
wait_ok "http://127.0.0.1:$admin_port/readyz"
wait_ok "http://127.0.0.1:$gw_port/readyz"

origin=https://app.example.com
cat >"$run/petstore.yaml" <<EOF
openapi: 3.0.1
info:
  title: petstore-cli
  version: "1"
x-amazon-apigateway-api-key-source: HEADER
x-amazon-apigateway-gateway-responses:
  DEFAULT_4XX:
    responseParameters:
      gatewayresponse.header.Access-Control-Allow-Origin: "'*'"
      gatewayresponse.header.Access-Control-Expose-Headers: "'Retry-After'"
paths:
  /pets:
    get:
      security: [{api_key: []}]
      responses:
        "200": {description: pets}
      x-amazon-apigateway-integration:
        type: http_proxy
        httpMethod: GET
        uri: http://127.0.0.1:$echo_port/pets?header=Access-Control-Allow-Origin:*
    options:
      responses:
        "200":
          description: CORS preflight
          headers:
            Access-Control-Allow-Origin: {schema: {type: string}}
            Access-Control-Allow-Methods: {schema: {type: string}}
            Access-Control-Allow-Headers: {schema: {type: string}}
      x-amazon-apigateway-integration:
        type: mock
        requestTemplates:
          application/json: '{"statusCode": 200}'
        responses:
          default:
            statusCode: "200"
            responseParameters:
              method.response.header.Access-Control-Allow-Origin: "'*'"
              method.response.header.Access-Control-Allow-Methods: "'GET,OPTIONS'"
              method.response.header.Access-Control-Allow-Headers: "'Content-Type,x-api-key'"
components:
  securitySchemes:
    api_key: {type: apiKey, name: x-api-key, in: header}
EOF
api=$(apigw import-rest-api --fail-on-warnings --body "fileb://$run/petstore.yaml" --query id --output text) || fail "import-rest-api"
ok "import-rest-api: $api"
apigw create-deployment --rest-api-id "$api" --stage-name prod >/dev/null || fail "create-deployment"
ok "create-deployment to prod"
plan=$(apigw create-usage-plan --name cli-gold --api-stages "apiId=$api,stage=prod" \
  --throttle burstLimit=2,rateLimit=0.01 --quota limit=100,period=DAY --query id --output text) || fail "create-usage-plan"
ok "create-usage-plan: $plan"

key=CliPartnerKey0123456789abcdef
browser_key=CliBrowserKey0123456789abcdef
printf 'Name,Key,Description,Enabled,UsagePlanIds\ncli-partner,%s,imported by awscli.sh,TRUE,%s\ncli-browser,%s,,,%s\n' \
  "$key" "$plan" "$browser_key" "$plan" >"$run/keys.csv"
keyid=$(apigw import-api-keys --format csv --fail-on-warnings --body "fileb://$run/keys.csv" --query 'ids[0]' --output text) || fail "import-api-keys"
[ "$(apigw get-usage-plan-keys --usage-plan-id "$plan" --query 'length(items)' --output text)" = 2 ] || fail "import-api-keys: want 2 keys in the plan"
ok "import-api-keys: $keyid in plan $plan"

url="http://127.0.0.1:$gw_port/prod/pets"
host="Host: $api.execute-api.localhost"
# The config reaches the gateway through Redis: wait until it serves the stage.
for _ in $(seq 1 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "$host" -X OPTIONS "$url")" = 200 ] && break
  sleep 0.05
done
preflight=$(curl -s -i -X OPTIONS -H "$host" -H "Origin: $origin" -H "Access-Control-Request-Method: GET" \
  -H "Access-Control-Request-Headers: x-api-key" "$url" | tr -d '\r')
grep -q '^HTTP/1.1 200' <<<"$preflight" || fail "preflight status: $preflight"
grep -qi '^Access-Control-Allow-Origin: \*$' <<<"$preflight" || fail "preflight Allow-Origin: $preflight"
grep -qi '^Access-Control-Allow-Methods: .*GET' <<<"$preflight" || fail "preflight Allow-Methods: $preflight"
grep -qi '^Access-Control-Allow-Headers: .*x-api-key' <<<"$preflight" || fail "preflight Allow-Headers: $preflight"
ok "CORS preflight (OPTIONS MOCK without a key) allows GET with x-api-key from $origin"

missing=$(curl -s -i -H "$host" -H "Origin: $origin" "$url" | tr -d '\r')
grep -q '^HTTP/1.1 403' <<<"$missing" && grep -qi '^Access-Control-Allow-Origin: \*$' <<<"$missing" || fail "403 without a key is not readable cross-origin: $missing"
ok "403 without a key carries Access-Control-Allow-Origin (DEFAULT_4XX)"
for i in 1 2; do
  code=$(curl -s -o "$run/ok.json" -D "$run/ok.h" -w '%{http_code}' -H "$host" -H "Origin: $origin" -H "x-api-key: $key" "$url")
  [ "$code" = 200 ] || fail "call $i with the imported key: $code $(cat "$run/ok.json")"
done
grep -qi '^Access-Control-Allow-Origin: \*' "$run/ok.h" || fail "200 from the upstream has no Access-Control-Allow-Origin"
ok "2 calls with the imported key: 200"
throttled=$(curl -s -i -H "$host" -H "Origin: $origin" -H "x-api-key: $key" "$url" | tr -d '\r')
grep -q '^HTTP/1.1 429' <<<"$throttled" || fail "third call: want 429, got $throttled"
grep -qi '^Access-Control-Allow-Origin: \*$' <<<"$throttled" || fail "429 has no Access-Control-Allow-Origin: $throttled"
grep -qi '^Access-Control-Expose-Headers: Retry-After$' <<<"$throttled" || fail "429 does not expose Retry-After: $throttled"
grep -qi '^Retry-After: ' <<<"$throttled" || fail "429 has no Retry-After: $throttled"
ok "third call: 429 readable cross-origin, Retry-After exposed"

# A page of another origin (file://, origin "null") calls the key-protected
# method three times with fetch(): the browser preflights the x-api-key
# header, and JavaScript reads 200, 200 and the 429 with its Retry-After.
if [ -x /usr/bin/chromium ]; then
  cat >"$run/page.html" <<EOF
<!doctype html><pre id="r">pending</pre><script>
(async () => {
  const out = [];
  for (let i = 0; i < 3; i++) {
    try {
      const r = await fetch("http://$api.execute-api.localhost:$gw_port/prod/pets", {headers: {"x-api-key": "$browser_key"}});
      out.push(r.status + (r.headers.get("Retry-After") ? "+retry-after" : ""));
    } catch (e) { out.push("blocked:" + e); }
  }
  document.getElementById("r").textContent = "result=" + out.join(",");
})();
</script>
EOF
  dom=$(timeout 60 /usr/bin/chromium --headless --no-sandbox --disable-gpu --user-data-dir="$run/chromium" \
    --virtual-time-budget=15000 --dump-dom "file://$run/page.html" 2>"$run/chromium.log") || fail "chromium: $dom"
  grep -q 'result=200,200,429+retry-after' <<<"$dom" || fail "browser fetch: $(grep -o 'result=[^<]*\|pending' <<<"$dom")"
  ok "headless Chromium on another origin: fetch with x-api-key reads 200, 200, then 429 with Retry-After"
else
  log "no /usr/bin/chromium: browser check not run (the curl checks above cover the same headers)"
fi

today=$(date -u +%F)
used=$(apigw get-usage --usage-plan-id "$plan" --start-date "$today" --end-date "$today" --key-id "$keyid" \
  --query "items.\"$keyid\"[0][0]" --output text) || fail "get-usage"
[ "$used" = 2 ] || fail "get-usage: used $used, want 2"
ok "get-usage: 2 requests used today"

apigw tag-resource --resource-arn "arn:aws:apigateway:us-east-1::/apikeys/$keyid" --tags tollgate:invalidate-cache=true,team=cli >/dev/null || fail "tag-resource"
[ "$(apigw get-tags --resource-arn "arn:aws:apigateway:us-east-1::/apikeys/$keyid" --query 'tags.team' --output text)" = cli ] || fail "get-tags"
apigw untag-resource --resource-arn "arn:aws:apigateway:us-east-1::/apikeys/$keyid" --tag-keys team >/dev/null || fail "untag-resource"
ok "tag-resource, get-tags, untag-resource on the API key"

stage_arn="arn:aws:apigateway:us-east-1::/restapis/$api/stages/prod"
apigw tag-resource --resource-arn "$stage_arn" \
  --tags tollgate:cache-stale-if-error=300,tollgate:cache-stale-while-revalidate=30 >/dev/null || fail "tag-resource stale tags"
[ "$(apigw get-stage --rest-api-id "$api" --stage-name prod \
  --query '[tags."tollgate:cache-stale-if-error", tags."tollgate:cache-stale-while-revalidate"]' --output text)" = "300	30" ] ||
  fail "get-stage: the stale tags are not set"
if out=$(apigw tag-resource --resource-arn "$stage_arn" --tags tollgate:cache-stale-if-error=5m 2>&1); then
  fail "tag-resource tollgate:cache-stale-if-error=5m: accepted"
fi
grep -q 'BadRequestException' <<<"$out" && grep -q 'tollgate:cache-stale-if-error' <<<"$out" || fail "tag-resource of a bad stale value: $out"
ok "tag-resource on the stage: stale windows in seconds are taken, a bad one is 400 naming the tag"

apigw get-export --rest-api-id "$api" --stage-name prod --export-type oas30 --parameters extensions=apigateway \
  --accepts application/yaml "$run/export.yaml" >/dev/null || fail "get-export"
grep -q 'x-amazon-apigateway-integration:' "$run/export.yaml" && grep -q 'openapi: 3.0.1' "$run/export.yaml" || fail "get-export: $(head -c 400 "$run/export.yaml")"
again=$(apigw import-rest-api --fail-on-warnings --body "fileb://$run/export.yaml" --query id --output text) || fail "re-import of the export"
want=$(apigw get-resources --rest-api-id "$api" --query 'sort(items[].path)' --output text)
got=$(apigw get-resources --rest-api-id "$again" --query 'sort(items[].path)' --output text)
[ "$want" = "$got" ] || fail "re-imported export: paths $got, want $want"
apigw get-export --rest-api-id "$api" --stage-name prod --export-type swagger "$run/export.json" >/dev/null || fail "get-export swagger"
grep -q '"swagger": "2.0"' "$run/export.json" || fail "swagger export: $(head -c 200 "$run/export.json")"
ok "get-export (oas30 YAML with extensions, swagger JSON) and a re-import of it"

# ---------------------------------------------------------------------------
# Custom domain names: partners keep https://api.example.test/v1/pets-api/...
# A CA made here (root, intermediate) issues the domain's certificate; the
# AWS CLI creates the domain with it (PEM body, chain and private key) and a
# multi-level base path mapping to the imported API's prod stage; curl calls
# the gateway's HTTPS listener with a key of its own, trusting the root only.
# ---------------------------------------------------------------------------
domain=api.example.test
tls() { openssl "$@" 2>>"$run/openssl.log" || fail "openssl $1"; }
tls req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=awscli test root" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign -keyout "$run/root.key" -out "$run/root.crt"
tls req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=awscli test intermediate" \
  -keyout "$run/inter.key" -out "$run/inter.csr"
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n' >"$run/inter.ext"
tls x509 -req -in "$run/inter.csr" -CA "$run/root.crt" -CAkey "$run/root.key" -CAcreateserial -days 2 \
  -extfile "$run/inter.ext" -out "$run/inter.crt"
printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$domain" >"$run/leaf.ext"
issue() { # issue NAME: a key and a certificate for $domain signed by the intermediate
  tls req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$domain" -keyout "$run/$1.key" -out "$run/$1.csr"
  tls x509 -req -in "$run/$1.csr" -CA "$run/inter.crt" -CAkey "$run/inter.key" -CAcreateserial -days 2 \
    -extfile "$run/leaf.ext" -out "$run/$1.crt"
}
issue leaf
apigw create-domain-name --domain-name "$domain" --endpoint-configuration types=REGIONAL \
  --regional-certificate-name awscli-leaf --certificate-body "file://$run/leaf.crt" \
  --certificate-chain "file://$run/inter.crt" --certificate-private-key "file://$run/leaf.key" >"$run/domain.json" \
  || fail "create-domain-name"
grep -q '"domainNameStatus": "AVAILABLE"' "$run/domain.json" || fail "create-domain-name: $(cat "$run/domain.json")"
apigw get-domain-name --domain-name "$domain" --output json >"$run/domain.json" || fail "get-domain-name"
! grep -q 'PRIVATE KEY\|BEGIN CERTIFICATE' "$run/domain.json" || fail "get-domain-name shows the certificate or its key"
apigw create-domain-name --domain-name other.example.test --certificate-body "file://$run/leaf.crt" \
  --certificate-private-key "file://$run/inter.key" >/dev/null 2>"$run/refused.txt" && fail "a key of another certificate was accepted"
grep -q 'BadRequestException' "$run/refused.txt" || fail "a key of another certificate: $(cat "$run/refused.txt")"
ok "create-domain-name $domain (PEM body, chain and key; the key never shown; a key of another certificate refused)"

apigw create-base-path-mapping --domain-name "$domain" --base-path v1/pets-api --rest-api-id "$api" --stage prod >/dev/null \
  || fail "create-base-path-mapping"
[ "$(apigw get-base-path-mapping --domain-name "$domain" --base-path v1/pets-api --query stage --output text)" = prod ] \
  || fail "get-base-path-mapping v1/pets-api"
domain_key=CliDomainKey0123456789abcdef
dkeyid=$(apigw create-api-key --name cli-domain --enabled --value "$domain_key" --query id --output text) || fail "create-api-key"
apigw create-usage-plan-key --usage-plan-id "$plan" --key-id "$dkeyid" --key-type API_KEY >/dev/null || fail "create-usage-plan-key"
ok "create-base-path-mapping v1/pets-api to $api/prod; a key of its own in $plan"

https() { # https PATH [curl args...]: GET https://$domain:$tls_port/PATH through the HTTPS listener
  local path=$1
  shift
  curl -s --resolve "$domain:$tls_port:127.0.0.1" --cacert "$run/root.crt" "$@" "https://$domain:$tls_port/$path"
}
# The config reaches the gateway through Redis: wait (without the key, whose
# plan allows 2 calls) until the mapping answers.
for _ in $(seq 1 100); do
  [ "$(https v1/pets-api/pets -o /dev/null -w '%{http_code}')" = 403 ] && break
  sleep 0.05
done
code=$(https v1/pets-api/pets -o "$run/domain-call.json" -w '%{http_code} %{http_version}' -H "x-api-key: $domain_key") \
  || fail "HTTPS call: curl exit $?"
[ "$code" = "200 2" ] || fail "HTTPS call with the key: got $code, want 200 over HTTP/2: $(cat "$run/domain-call.json")"
grep -q '"path":"/pets"' "$run/domain-call.json" && grep -q '"X-Forwarded-Proto":\["https"\]' "$run/domain-call.json" \
  || fail "the upstream did not see /pets over https: $(cat "$run/domain-call.json")"
[ "$(https v1/pets-api/pets -o /dev/null -w '%{http_code}')" = 403 ] || fail "HTTPS call without a key: want 403"
[ "$(https v2/pets -o /dev/null -w '%{http_code}' -H "x-api-key: $domain_key")" = 403 ] || fail "a path under no base path: want 403"
curl -s -o /dev/null --resolve "nope.example.test:$tls_port:127.0.0.1" --cacert "$run/root.crt" \
  "https://nope.example.test:$tls_port/" && fail "a TLS handshake for a name no domain holds succeeded"
ok "HTTPS via $domain/v1/pets-api with the key: 200 over HTTP/2, the upstream saw /pets; no key or no mapping 403; unknown name refused"

served_serial() {
  openssl s_client -connect "127.0.0.1:$tls_port" -servername "$domain" -CAfile "$run/root.crt" </dev/null 2>/dev/null \
    | openssl x509 -noout -serial
}
issue renewed
pem_json() { awk '{printf "%s\\n", $0}' "$1"; }
printf '[{"op":"replace","path":"/certificateBody","value":"%s"},{"op":"replace","path":"/certificatePrivateKey","value":"%s"}]' \
  "$(pem_json "$run/renewed.crt")" "$(pem_json "$run/renewed.key")" >"$run/renew.json"
apigw update-domain-name --domain-name "$domain" --patch-operations "file://$run/renew.json" >/dev/null || fail "update-domain-name"
want_serial=$(openssl x509 -noout -serial -in "$run/renewed.crt")
for _ in $(seq 1 100); do
  [ "$(served_serial)" = "$want_serial" ] && break
  sleep 0.05
done
[ "$(served_serial)" = "$want_serial" ] || fail "renewed certificate not served: $(served_serial), want $want_serial"
[ "$(https v1/pets-api/pets -o /dev/null -w '%{http_code}' -H "x-api-key: $domain_key")" = 200 ] || fail "HTTPS call after renewal"
ok "update-domain-name with a renewed certificate: served from the next handshake, no restart"

# ---------------------------------------------------------------------------
# Migrating an API definition: a real-world-shaped API Gateway export with
# every shape AWS imports (scripts/testdata/shop-openapi3.yaml says which)
# imports with warnings naming what tollgate skips, in document order,
# serves its templates, CORS and proxy methods, and comes back the same
# from each export form. Sections after this one can use $shop (the API)
# and shape (what must survive a round trip).
# ---------------------------------------------------------------------------
shop_doc=scripts/testdata/shop-openapi3.yaml
apigw import-rest-api --fail-on-warnings --parameters basepath=split --body "fileb://$shop_doc" >/dev/null 2>"$run/refused.txt" \
  && fail "import-rest-api --fail-on-warnings of $shop_doc succeeded"
grep -q 'BadRequestException.*failonwarnings' "$run/refused.txt" || fail "--fail-on-warnings: $(cat "$run/refused.txt")"
apigw import-rest-api --parameters basepath=split --body "fileb://$shop_doc" --output json >"$run/shop.json" || fail "import-rest-api $shop_doc"
shop=$(jq -r .id "$run/shop.json")
want='security
x-amazon-apigateway-binary-media-types
x-amazon-apigateway-gateway-responses.DEFAULT_4XX.responseParameters.gatewayresponse.header.Vary
paths./products.get.x-amazon-apigateway-integration.credentials
paths./products.get.x-amazon-apigateway-integration.requestParameters.integration.request.header.X-Debug
paths./orders/{id}.get.parameters[0]
paths./orders/{id}.delete.security
paths./status.get.x-amazon-apigateway-integration.responses.default.responseTemplates.application/json'
got=$(jq -r '.warnings[] | split(": ")[0]' "$run/shop.json")
[ "$got" = "$want" ] || fail "import warnings at:
$got
want:
$want
$(jq -r '.warnings[]' "$run/shop.json")"
paths=$(apigw get-resources --rest-api-id "$shop" --query 'sort(items[].path)' --output text | tr '\t' ' ')
[ "$paths" = "/ /v1 /v1/orders /v1/orders/{id} /v1/products /v1/products/{productId} /v1/status /v1/{proxy+}" ] \
  || fail "basepath=split: resources $paths"
ok "import-rest-api of a real-world-shaped export (basepath=split): under /v1, 8 warnings in document order, none refused"

apigw create-deployment --rest-api-id "$shop" --stage-name prod --variables "upstream=127.0.0.1:$echo_port,colour=blue" >/dev/null \
  || fail "create-deployment of $shop"
shop_url="http://127.0.0.1:$gw_port/prod/v1"
shop_host="Host: $shop.execute-api.localhost"
for _ in $(seq 1 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -H "$shop_host" "$shop_url/status")" = 200 ] && break
  sleep 0.05
done
status=$(curl -s -H "$shop_host" "$shop_url/status")
[ "$status" = '{"stage":"prod","resource":"/v1/status","colour":"blue","user":"$context.authorizer.principalId"}' ] \
  || fail "MOCK template: $status"
preflight=$(curl -s -i -X OPTIONS -H "$shop_host" -H "Origin: $origin" "$shop_url/any/deep/path" | tr -d '\r')
grep -q '^HTTP/1.1 200' <<<"$preflight" && grep -qi "^Access-Control-Allow-Origin: $origin\$" <<<"$preflight" \
  || fail "OPTIONS on {proxy+}: $preflight"
missing=$(curl -s -i -H "$shop_host" "$shop_url/products" | tr -d '\r')
grep -q '^HTTP/1.1 403' <<<"$missing" && grep -qi '^Access-Control-Allow-Origin: \*$' <<<"$missing" || fail "403 without a key: $missing"
order=$(curl -s -H "$shop_host" "$shop_url/orders/7")
grep -q '"path":"/orders/7"' <<<"$order" || fail "GET /v1/orders/7 through the proxy: $order"
closed=$(curl -s -i -X DELETE -H "$shop_host" -H 'Authorization: Bearer a-token-the-lambda-would-accept' "$shop_url/orders/7" | tr -d '\r')
grep -q '^HTTP/1.1 401' <<<"$closed" && grep -q '{"message":"Unauthorized"}' <<<"$closed" || fail "DELETE behind the Lambda authorizer: $closed"
ok "deployed: \$context and \$stageVariables in a MOCK template, CORS MOCK on {proxy+} echoing Origin, DEFAULT_4XX, the proxied order, the method behind an authorizer closed (401)"

apigw create-base-path-mapping --domain-name "$domain" --base-path shop --rest-api-id "$shop" --stage prod >/dev/null \
  || fail "create-base-path-mapping shop"
for _ in $(seq 1 100); do
  [ "$(https shop/v1/status -o /dev/null -w '%{http_code}')" = 200 ] && break
  sleep 0.05
done
status=$(https shop/v1/status)
[ "$status" = '{"stage":"prod","resource":"/v1/status","colour":"blue","user":"$context.authorizer.principalId"}' ] \
  || fail "https://$domain/shop/v1/status: $status"
ok "the migrated API over https://$domain/shop/v1/status"

# shape API: what must survive an export and a new import, as JSON: every
# resource by path with its methods (integrations and responses included;
# ids and default cache namespaces left out), and the gateway responses put.
shape() {
  local names
  names=$(apigw get-authorizers --rest-api-id "$1" --output json | jq -c '[.items[] | {key: .id, value: .name}] | from_entries')
  apigw get-resources --rest-api-id "$1" --embed methods --output json \
    | jq -S --argjson names "$names" '[.items[] | .id as $id | {path, methods: ((.resourceMethods // {}) | map_values(
        (if .methodIntegration.cacheNamespace == $id then del(.methodIntegration.cacheNamespace) else . end)
        | (if .authorizerId then .authorizerId = $names[.authorizerId] else . end)))}] | sort_by(.path)'
  apigw get-authorizers --rest-api-id "$1" --output json | jq -S '[.items[] | del(.id)] | sort_by(.name)'
  apigw get-gateway-responses --rest-api-id "$1" --output json | jq -S '[.items[] | select(.defaultResponse | not)] | sort_by(.responseType)'
}
# roundtrip API NAME: export API's prod stage in all four forms, import each
# and diff its shape with API's.
roundtrip() {
  local want form again
  want=$(shape "$1")
  grep -q '"methodIntegration"' <<<"$want" || fail "$2: no methods in its shape: $want"
  for form in oas30:application/json oas30:application/yaml swagger:application/json swagger:application/yaml; do
    apigw get-export --rest-api-id "$1" --stage-name prod --export-type "${form%%:*}" --parameters extensions=apigateway \
      --accepts "${form#*:}" "$run/$2-export" >/dev/null || fail "get-export $form of $2"
    again=$(apigw import-rest-api --body "fileb://$run/$2-export" --query id --output text) || fail "re-import of the $form export of $2"
    diff <(echo "$want") <(shape "$again") >"$run/$2.diff" || fail "$2: the $form export imports as another API:
$(cat "$run/$2.diff")"
  done
}
roundtrip "$shop" shop
ok "get-export of the migrated API in all four forms: each imports as the same API (resources, methods, integrations, responses, authorizers)"

# The authorizer is AWS's resource; opening its method lets calls through.
authorizer=$(apigw get-authorizers --rest-api-id "$shop" --output json | jq -c '[.items[] | {name, type, identitySource, authorizerResultTtlInSeconds}]')
[ "$authorizer" = '[{"name":"partner_auth","type":"TOKEN","identitySource":"method.request.header.Authorization","authorizerResultTtlInSeconds":300}]' ] \
  || fail "get-authorizers: $authorizer"
orders=$(apigw get-resources --rest-api-id "$shop" --query "items[?path=='/v1/orders/{id}'].id" --output text)
[ "$(apigw get-method --rest-api-id "$shop" --resource-id "$orders" --http-method DELETE --query authorizationType --output text)" = CUSTOM ] \
  || fail "get-method DELETE: not CUSTOM"
apigw update-method --rest-api-id "$shop" --resource-id "$orders" --http-method DELETE \
  --patch-operations op=replace,path=/authorizationType,value=NONE >/dev/null || fail "update-method authorizationType NONE"
apigw create-deployment --rest-api-id "$shop" --stage-name prod >/dev/null || fail "create-deployment after opening DELETE"
for _ in $(seq 1 100); do
  [ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE -H "$shop_host" "$shop_url/orders/7")" != 401 ] && break
  sleep 0.05
done
opened=$(curl -s -X DELETE -H "$shop_host" "$shop_url/orders/7")
grep -q '"method":"DELETE"' <<<"$opened" && grep -q '"path":"/orders/7"' <<<"$opened" || fail "DELETE after update-method NONE: $opened"
apigw delete-authorizer --rest-api-id "$shop" --authorizer-id "$(apigw get-authorizers --rest-api-id "$shop" --query 'items[0].id' --output text)" \
  || fail "delete-authorizer once no method uses it"
ok "get-authorizers, update-method authorizationType NONE opens the method (DELETE reaches the upstream), delete-authorizer"

swagger_doc=scripts/testdata/shop-swagger2.json
swagger=$(apigw import-rest-api --fail-on-warnings --body "fileb://$swagger_doc" --query id --output text) \
  || fail "import-rest-api --fail-on-warnings $swagger_doc"
models=$(apigw get-method --rest-api-id "$swagger" --resource-id "$(apigw get-resources --rest-api-id "$swagger" \
  --query "items[?path=='/{proxy+}'].id" --output text)" --http-method ANY --output json | jq -c '[.methodResponses["200"].responseModels, .methodResponses["404"].responseParameters]')
[ "$models" = '[{"application/json":"Empty"},{"method.response.header.X-Reason":false}]' ] || fail "Swagger 2.0 any-method \$refs: $models"
apigw create-deployment --rest-api-id "$swagger" --stage-name prod --variables "upstream=127.0.0.1:$echo_port" >/dev/null \
  || fail "create-deployment of $swagger"
roundtrip "$swagger" swagger
ok "a Swagger 2.0 export (\$refs in the any-method, OPTIONS on {proxy+}, no responses) imports without warnings and comes back the same"

log "all $checks AWS CLI checks passed ($($AWS --version 2>&1))"
