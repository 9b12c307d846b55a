# schedlens developer targets. `make` (no target) builds the binaries into bin/.

GO ?= go
BENCH_ARGS ?=

.DEFAULT_GOAL := build

.PHONY: build test vet bench demo clean

build:
	$(GO) build -o bin/ ./cmd/...

test:
	$(GO) test -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

bench:
	$(GO) run ./cmd/schedlens-bench $(BENCH_ARGS)

demo:
	./scripts/demo.sh

clean:
	rm -rf bin
