# tollgate: build, test and demo without Docker. See README.md.
GO       ?= go
BIN      := bin

.PHONY: all build test services demo stop bench clean

all: build

## build: compile tollgate, the echo upstream and the demo setup into bin/
build:
	$(GO) build -o $(BIN)/ ./cmd/tollgate ./cmd/echo ./cmd/demo

## test: every test, against the real PostgreSQL and Redis (make services starts them) and a local
## three-master Redis Cluster (scripts/cluster.sh starts it here when it does not answer)
test:
	$(GO) vet ./...
	url=$${TOLLGATE_TEST_REDIS_CLUSTER_URL:-$$(scripts/cluster.sh)} && \
		TOLLGATE_TEST_REDIS_CLUSTER_URL=$$url $(GO) test -race -count=1 ./...

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
