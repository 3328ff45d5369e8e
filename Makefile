# tollgate: build, test and demo without Docker. See README.md.
GO       ?= go
GOFMT    ?= gofmt
BIN      := bin

.PHONY: all build test test-short services demo stop bench clean chromium test-locale stop-cluster chart web-vendor

all: build

# VERSION is what `tollgate version` prints: git describe of this checkout.
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null)

## build: compile tollgate, the echo upstream and the demo setup into bin/
build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN)/ ./cmd/tollgate ./cmd/echo ./cmd/demo

## test: go vet and every test with the race detector, against the real PostgreSQL and Redis (make services
## starts them) and a local three-master Redis Cluster (scripts/cluster.sh starts it when it does not answer),
## then the AWS CLI conformance check (scripts/awscli.sh) and the Helm chart's lint (scripts/chart.sh). vet builds
## with -race too, so the tests reuse its build: a first run compiles each package once, and vet lists them as it
## compiles (README "Tests").
test: chromium test-locale
	@echo "== gofmt: every Go file formatted"
	@unformatted=$$($(GOFMT) -l .) && if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	@echo "== go vet -race: compiles every package (a first run lists them as they compile)"
	$(GO) vet -race -v ./...
	@echo "== go test -race: each package prints ok when its tests pass (cmd/tollgate takes longest)"
	url=$${TOLLGATE_TEST_REDIS_CLUSTER_URL:-$$(scripts/cluster.sh)} && \
		TOLLGATE_TEST_REDIS_CLUSTER_URL=$$url $(GO) test -race -count=1 ./...
	@echo "== AWS CLI conformance check (scripts/awscli.sh)"
	GO=$(GO) scripts/awscli.sh
	@echo "== the Helm chart lints and renders (scripts/chart.sh; builds helm with go install the first time)"
	GO=$(GO) scripts/chart.sh
	@echo "console screenshots of the browser test: $(CURDIR)/.artifacts/"
	@echo "the test Redis Cluster (scripts/cluster.sh) keeps running for the next make test; make stop-cluster stops it"

## test-short: the edit-test loop: go test -short without the race detector, results cached for packages
## that did not change; no vet, no browser test, no AWS CLI check (make test before you land)
test-short:
	url=$${TOLLGATE_TEST_REDIS_CLUSTER_URL:-$$(scripts/cluster.sh)} && \
		TOLLGATE_TEST_REDIS_CLUSTER_URL=$$url $(GO) test -short ./...

## chromium: install Debian's Chromium when missing (the console's browser test needs it)
chromium:
	scripts/chromium.sh

## test-locale: generate the de_DE.UTF-8 locale two store tests run PostgreSQL's messages in (they skip without it)
test-locale:
	scripts/services.sh locale

## chart: helm lint --strict and helm template of deploy/helm/tollgate (scripts/chart.sh; make test runs it)
chart:
	GO=$(GO) scripts/chart.sh

## stop-cluster: stop the test Redis Cluster make test starts (scripts/cluster.sh) and leaves running for the next run
stop-cluster:
	scripts/cluster.sh stop

## web-vendor: re-vendor the console's npm libraries (web/package.json) into web/static/vendor/ (needs Node; building tollgate does not)
web-vendor:
	cd web && npm ci --ignore-scripts --no-audit --no-fund
	mkdir -p web/static/vendor/uplot
	cp web/node_modules/uplot/dist/uPlot.esm.js web/node_modules/uplot/dist/uPlot.min.css web/node_modules/uplot/LICENSE web/static/vendor/uplot/

## services: make sure PostgreSQL and Redis answer on 127.0.0.1 (installs and starts them if needed)
services:
	scripts/services.sh

## demo: start everything, create a demo API, plan and key, and show a request proxied then throttled
demo: services build
	scripts/demo.sh

## bench: tollgate against the tuned bare proxy and the naive one-EVALSHA peer on loopback (one Redis and a three-master cluster), with wrk (about 5 minutes; docs/benchmarks.md)
bench:
	GO=$(GO) scripts/bench.sh $(BENCHFLAGS)

## stop: stop what make demo started
stop:
	scripts/demo.sh stop

clean:
	rm -rf $(BIN) .demo
