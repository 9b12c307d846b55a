# schedlens developer targets. `make` (no target) builds the binaries into bin/.

GO ?= go
BENCH_ARGS ?=
DEMO_ARGS ?=
IMAGE_BASE ?=
IMAGE_TAG ?= dev

.DEFAULT_GOAL := build

.PHONY: build lab images standin-images test check-tree test-main test-lab vet bench demo demo-replay clean

build:
	$(GO) build -o bin/ ./cmd/...

# The lab is its own Go module (it imports k8s.io/kubernetes): building it the first time takes
# minutes, later builds seconds.
lab:
	cd lab && $(GO) build -o ../bin/ ./cmd/lab

# The schedlens image (collector, correlator, api; static binaries built on the host). The base
# is distroless static pinned by digest; `make images IMAGE_BASE=scratch` needs no registry.
images:
	IMAGE_BASE=$(IMAGE_BASE) IMAGE_TAG=$(IMAGE_TAG) scripts/images.sh

# Postgres and NATS images built from a debootstrap root, for machines without a registry.
standin-images:
	scripts/standin-images.sh

# The whole suite: the tree holds no build output, then the services' module, then the lab's
# (real kube-apiserver and kube-scheduler).
test: check-tree test-main test-lab

check-tree:
	bash scripts/check-tree.sh

test-main:
	$(GO) test -count=1 -timeout 20m ./...

test-lab:
	cd lab && $(GO) test -count=1 -timeout 30m ./...

vet:
	$(GO) vet ./...
	cd lab && $(GO) vet ./...

bench:
	$(GO) run ./cmd/schedlens-bench $(BENCH_ARGS)

# The lab demo: a real scheduler on simulated GPU nodes, schedlens beside it, the day20 experiment.
demo: lab
	bin/lab demo $(DEMO_ARGS)

# The replay demo: correlator + api, and the recorded sample replayed into them.
demo-replay:
	./scripts/demo.sh

clean:
	rm -rf bin build
