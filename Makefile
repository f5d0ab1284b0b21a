# deadbolt — run `make help` for the targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
PKGS    := ./...
# compat/matrix/gopinned is a module of its own (pinned client versions);
# ./... stops at its go.mod, so lint and test-go vet it separately.
PINNED  := compat/matrix/gopinned

.PHONY: help build static docker run test test-go race bench fuzz lint deps clean

help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-z-]+:.*## /{printf "  %-8s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/deadbolt
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/deadbolt ./cmd/deadbolt

static: ## build bin/deadbolt-static: linux, no cgo, for the Docker image (FROM scratch)
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/deadbolt-static ./cmd/deadbolt

docker: static ## build the image deadbolt:$(VERSION) (and :latest) from bin/deadbolt-static; pulls no base image
	docker build -t deadbolt:$(VERSION) -t deadbolt:latest .

run: build ## run a single in-memory node on 127.0.0.1:6379
	./bin/deadbolt --addr 127.0.0.1:6379

deps: ## install what the tests need (redis-server, redis-cli, openssl) when missing
	@scripts/deps.sh

test: test-go compat chaos ## everything CI runs: Go tests under -race, the client matrix, a 3½-minute chaos run

test-go: deps compat-deps build ## install missing test dependencies, vet, then run every Go test under -race
	$(GO) vet $(PKGS)
	cd $(PINNED) && $(GO) vet ./...
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || (echo "gofmt: files above need formatting" && exit 1)
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	@docker info >/dev/null 2>&1 || echo "make test: no Docker daemon: the Docker image was not built or run (TestDockerImage skipped)"
	@echo "the raw system call paths (raft transport, log appends), which -race builds replace:"
	$(GO) test -count=1 -timeout 10m . ./cluster/...

race: test-go ## alias of test-go (the Go tests always run under -race)

bench: deps build ## benchmarks: state machine, EVAL, the lock pair's ACL and metrics cost, lock/unlock vs redis-server (plain and TLS), memory per Redisson lock vs redis-server and a restart with 5,000,000 locks, then 3-node cluster (plain, --tls-cluster) and 1 node on disk vs redis fsync-always and etcd, 1000-SET pipelines (BENCHBASE: a reference build) and PING during KEYS/SCAN over 1M keys (BENCHFLAGS), then 20 leader kills (failover)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./fsm/ ./luaexec/ ./acl/
	$(GO) test -run '^$$' -bench 'LockUnlock(ACL|Metrics)?$$' -count 3 .
	$(GO) run ./cmd/deadbolt-bench -tls $(BENCHFLAGS)
	$(GO) run ./cmd/deadbolt-bench -memory -memory-locks 500000,5000000 -memory-restart 5000000 -deadbolt-bin bin/deadbolt
	@command -v etcd >/dev/null || { echo "bench: etcd missing, installing Debian etcd-server etcd-client"; apt-get update -qq && apt-get install -y -qq etcd-server etcd-client; }
	$(GO) run ./cmd/deadbolt-bench -cluster -systems deadbolt,deadbolt-tls,deadbolt1,redis,etcd -deadbolt-bin bin/deadbolt $(BENCHFLAGS)
	$(GO) run ./cmd/deadbolt-bench -pipeline -duration 3s -deadbolt-bin bin/deadbolt $(if $(BENCHBASE),-base-bin $(BENCHBASE)) $(BENCHFLAGS)
	$(GO) run ./cmd/deadbolt-bench -longread -deadbolt-bin bin/deadbolt $(BENCHFLAGS)
	$(GO) run ./cmd/deadbolt-failover -kills 20 -bin bin/deadbolt

fuzz: ## run each fuzz target for a while (FUZZTIME=30s)
	@scripts/fuzz.sh $${FUZZTIME:-30s}

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)
	$(GO) vet $(PKGS)
	cd $(PINNED) && $(GO) vet ./...

clean: ## remove build output
	rm -rf bin

.PHONY: chaos
chaos: ## fault-injection test, real nodes in network namespaces, needs root (DURATION=3m30s; TARGET=redis: Redis + Sentinel; CHAOSFLAGS); the upgrade nemesis swaps nodes to a build of an older commit (scripts/oldbuild.sh)
	$(GO) build -race -ldflags "$(LDFLAGS)" -o bin/deadbolt-race ./cmd/deadbolt
	$(GO) build -o bin/deadbolt-chaos ./cmd/deadbolt-chaos
	@if [ "$(TARGET)" = redis ] && ! command -v redis-sentinel >/dev/null; then apt-get update -qq && apt-get install -y -qq redis-server redis-sentinel; fi
	@old=; if [ "$(or $(TARGET),deadbolt)" = deadbolt ]; then \
		old=$$(GO=$(GO) scripts/oldbuild.sh) || { if [ "$$CI" = true ]; then exit 1; fi; old=; echo "chaos: no older build: no upgrade nemesis"; }; \
	fi; \
	echo ./bin/deadbolt-chaos --bin bin/deadbolt-race --duration $(or $(DURATION),3m30s) --target $(or $(TARGET),deadbolt) $${old:+--old-bin $$old} $(CHAOSFLAGS); \
	./bin/deadbolt-chaos --bin bin/deadbolt-race --duration $(or $(DURATION),3m30s) --target $(or $(TARGET),deadbolt) $${old:+--old-bin $$old} $(CHAOSFLAGS)

.PHONY: compat compat-deps
compat-deps: ## install the compatibility matrix's clients when missing (Debian python3-redis, redis-tools, redis-server; npm ci)
	@compat/matrix/deps.sh

compat: compat-deps build ## client compatibility matrix: real clients × connection modes, one leader SIGKILL (COMPATFLAGS; docs/COMPATIBILITY.md)
	$(GO) build -o bin/compat-go ./compat/matrix/go
	cd $(PINNED) && $(GO) build -o ../../../bin/compat-gopinned .
	$(GO) build -o bin/deadbolt-compat ./cmd/deadbolt-compat
	./bin/deadbolt-compat $(COMPATFLAGS)
