# tollgate: build, test and demo without Docker. See README.md.
GO       ?= go
BIN      := bin

.PHONY: all build test services demo stop bench clean chromium web-vendor

all: build

## build: compile tollgate, the echo upstream and the demo setup into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/tollgate ./cmd/echo ./cmd/demo

## test: every test, against the real PostgreSQL and Redis (make services starts them) and a local
## three-master Redis Cluster (scripts/cluster.sh starts it here when it does not answer), then the
## AWS CLI conformance check (scripts/awscli.sh; installs Debian's awscli when it is missing)
test: chromium
	$(GO) vet ./...
	url=$${TOLLGATE_TEST_REDIS_CLUSTER_URL:-$$(scripts/cluster.sh)} && \
		TOLLGATE_TEST_REDIS_CLUSTER_URL=$$url $(GO) test -race -count=1 ./...
	GO=$(GO) scripts/awscli.sh
	@echo "console screenshots of the browser test: $(CURDIR)/.artifacts/"

## chromium: install Debian's Chromium when missing (the console's browser test needs it)
chromium:
	scripts/chromium.sh

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

## bench: tollgate against a bare reverse proxy on loopback, with wrk (2 to 2.5 minutes; README "Benchmarks")
bench:
	GO=$(GO) scripts/bench.sh $(BENCHFLAGS)

## stop: stop what make demo started
stop:
	scripts/demo.sh stop

clean:
	rm -rf $(BIN) .demo
