#!/usr/bin/env bash
# chart.sh: check the deployment files render: docker-compose.yml (docker
# compose config, where Docker Compose is installed), and the Helm chart in
# deploy/helm/tollgate (helm lint --strict and helm template, with its
# ci/example-values.yaml that turns every optional part on, and with an
# existing Secret instead), and the refusals it promises (no admin credential,
# no database URL). Helm comes from scripts/services.sh helm. Used by make test.
set -euo pipefail
cd "$(dirname "$0")/.."
chart=deploy/helm/tollgate
helm=$(scripts/services.sh helm)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "chart: $*" >&2; exit 1; }

"$helm" lint --strict "$chart" -f "$chart/ci/example-values.yaml"
"$helm" template tollgate "$chart" -f "$chart/ci/example-values.yaml" >"$out/all.yaml"
for kind in "Deployment tollgate-gateway" "Deployment tollgate-admin" "Service tollgate-gateway" "Service tollgate-admin" \
  "Service tollgate-gateway-metrics" "Secret tollgate-secrets" "PodDisruptionBudget tollgate-gateway" \
  "HorizontalPodAutoscaler tollgate-gateway" "ServiceMonitor tollgate-gateway" "ServiceMonitor tollgate-admin"; do
  set -- $kind
  awk -v k="$1" -v n="$2" '/^kind: /{kk=$2} /^  name: /{if (kk==k && $2==n) f=1} END{exit !f}' "$out/all.yaml" \
    || fail "helm template renders no $1 $2"
done
grep -q 'args: \["serve", "--role=gateway"\]' "$out/all.yaml" || fail "no gateway role"
grep -q 'args: \["serve", "--role=admin"\]' "$out/all.yaml" || fail "no admin role"
grep -q 'image: registry.example.com/tollgate:v0.1.0' "$out/all.yaml" || fail "the image is not the values'"

"$helm" template tollgate "$chart" --set existingSecret=mine --set image.tag=v0.1.0 >"$out/existing.yaml"
grep -q '^kind: Secret' "$out/existing.yaml" && fail "an existing Secret still renders one"
grep -q 'name: mine' "$out/existing.yaml" || fail "the pods do not read the existing Secret"
if "$helm" template tollgate "$chart" >/dev/null 2>"$out/err"; then fail "renders without an admin credential"; fi
grep -q 'admin refuses to start without a credential' "$out/err" || fail "unclear refusal: $(cat "$out/err")"
if "$helm" template tollgate "$chart" --set secrets.TOLLGATE_ADMIN_TOKEN=x >/dev/null 2>"$out/err"; then fail "renders without a database URL"; fi
if docker compose version >/dev/null 2>&1; then
  docker compose -f docker-compose.yml config -q || fail "docker-compose.yml does not render"
  echo "chart: docker-compose.yml renders (docker compose config)"
elif command -v docker-compose >/dev/null; then
  docker-compose -f docker-compose.yml config -q || fail "docker-compose.yml does not render"
  echo "chart: docker-compose.yml renders (docker-compose config)"
else
  echo "chart: no Docker Compose here: docker-compose.yml not rendered"
fi
echo "chart: $chart lints and renders ($(grep -c '^kind: ' "$out/all.yaml") objects with every option on)"
