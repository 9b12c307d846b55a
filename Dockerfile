# syntax=docker/dockerfile:1

# Build stage: compiles the three schedlens binaries as static executables.
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION}-bookworm AS build

WORKDIR /src

# Download modules first so this layer is cached until go.mod/go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    go mod download

COPY . .
RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ \
        ./cmd/collector ./cmd/correlator ./cmd/api

# Final stage: distroless, no shell, runs as the "nonroot" user (65532).
# No ENTRYPOINT/CMD is set on purpose: docker-compose.yaml chooses the binary
# per service, e.g. command: ["/usr/local/bin/correlator", "serve"].
FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /out/collector /out/correlator /out/api /usr/local/bin/

USER nonroot:nonroot
