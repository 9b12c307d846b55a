# schedlens developer targets. `make` (no target) builds the binaries into bin/.

GO ?= go
BENCH_ARGS ?=
DEMO_ARGS ?=
IMAGE_BASE ?=
IMAGE_TAG ?= dev

.DEFAULT_GOAL := build

FUZZTIME ?= 30s
# STRICT=1 makes a test that cannot reach what it needs (chromium, a Docker engine, a service)
# fail instead of skip; CI=true implies it (scripts/test.sh).
STRICT ?=
TEST_STEPS ?= check-tree test-main test-lab test-fuzz

.PHONY: build lab deps screenshots images standin-images test check-tree test-main test-lab test-fuzz fuzz fuzz-ci vet bench demo demo-replay clean

build:
	$(GO) build -o bin/ ./cmd/...

# The lab is its own Go module (it imports k8s.io/kubernetes): building it the first time takes
# minutes, later builds seconds.
lab:
	GO=$(GO) scripts/build-lab.sh

# The schedlens image (collector, correlator, api; static binaries built on the host). The base
# is distroless static pinned by digest; `make images IMAGE_BASE=scratch` needs no registry.
images:
	IMAGE_BASE=$(IMAGE_BASE) IMAGE_TAG=$(IMAGE_TAG) scripts/images.sh

# Postgres and NATS images built from a debootstrap root, for machines without a registry.
standin-images:
	scripts/standin-images.sh

# The whole suite: the tree holds no build output, then the services' module, then the lab's
# (real kube-apiserver and kube-scheduler), then a short fuzz of every fuzz target; at the end,
# the tests that skipped for want of chromium or Docker, by name (`make deps` installs both).
test:
	@STRICT=$(STRICT) scripts/test.sh $(MAKE) $(TEST_STEPS)

# What the whole suite needs beyond Go: PostgreSQL and NATS started, chromium, a Docker engine,
# the stand-in images (the steps .ci/run takes).
deps:
	scripts/deps.sh

check-tree:
	bash scripts/check-tree.sh

test-main:
	$(GO) test -count=1 -timeout 20m ./...

test-lab:
	cd lab && $(GO) test -count=1 -timeout 30m ./...

# Fuzzing (docs/security.md): `make fuzz` runs every fuzz target coverage-guided for FUZZTIME
# each (`make fuzz FUZZTIME=5m`); `make fuzz-ci` runs the seed corpora as tests, then every
# target for 8 s without coverage instrumentation (no rebuild), within 150 s of fuzzing. A crash
# writes its input to <package>/testdata/fuzz/<target>/: commit it with the fix.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) ./scripts/fuzz.sh

fuzz-ci:
	$(GO) test -count=1 -run '^Fuzz' ./internal/...
	FUZZ_QUICK=1 FUZZTIME=8s FUZZ_BUDGET=150 GO=$(GO) ./scripts/fuzz.sh

test-fuzz: fuzz-ci

vet:
	$(GO) vet ./...
	cd lab && $(GO) vet ./...

# The scaling story (sizes × mixes against raw COPY and naive INSERT, with each timed phase's CPU
# profile), then the lag (10 k/s and 20 k/s), read, workload, memory (10 k and 50 k pods), soak
# and UI render runs (docs/architecture.md#throughput, docs/operations.md#sizing); each run's
# output is kept in $(BENCH_DIR) and the last step prints issue 27's table of figures beside
# their goals from it. With BENCH_ARGS, one run with those flags.
BENCH_DIR ?= bin/bench
# bench-run NAME, FLAGS: one run, its output shown and kept in $(BENCH_DIR)/NAME.txt; a failed run
# fails the target.
bench-run = bin/schedlens-bench $(2) > $(BENCH_DIR)/$(1).txt; s=$$?; cat $(BENCH_DIR)/$(1).txt; exit $$s

bench:
	$(GO) build -o bin/schedlens-bench ./cmd/schedlens-bench
ifeq ($(strip $(BENCH_ARGS)),)
	rm -rf $(BENCH_DIR) && mkdir -p $(BENCH_DIR)
	$(call bench-run,throughput,-json -cpu-profile $(BENCH_DIR)/cpu)
	$(call bench-run,lag-10k,-lag -json)
	$(call bench-run,lag,-lag -lag-rate 20000 -json)
	$(call bench-run,reads,-reads -json)
	$(call bench-run,workloads,-workloads -json)
	$(call bench-run,memory-10000,-memory -memory-pods 10000 -json)
	$(call bench-run,memory-50000,-memory -memory-pods 50000 -json)
	$(call bench-run,soak,-soak -json)
	$(GO) test ./internal/ui -run 'Test(Thousand|FiveThousand)PodRunRender$$' -count=1 -v > $(BENCH_DIR)/ui.txt; s=$$?; cat $(BENCH_DIR)/ui.txt; exit $$s
	bin/schedlens-bench -table $(BENCH_DIR)
else
	bin/schedlens-bench $(BENCH_ARGS)
endif

# The lab demo: a real scheduler on simulated GPU nodes, schedlens beside it, the day20 experiment.
demo: lab
	bin/lab demo $(DEMO_ARGS)

# The README's and docs' screenshots (docs/img), from the lab demo's data; `make test` fails when
# a view changed since they were made.
screenshots:
	GO=$(GO) scripts/screenshots.sh

# The replay demo: correlator + api, and the recorded sample replayed into them.
demo-replay:
	./scripts/demo.sh

clean:
	rm -rf bin build
