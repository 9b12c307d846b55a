#!/usr/bin/env bash
# Build the schedlens image (see Dockerfile): static binaries on the host, staged in build/image/
# with a passwd/group entry for uid 65532 and a CA bundle, then `docker build` on that context.
#
#   scripts/images.sh                      # FROM distroless static, pinned by digest
#   IMAGE_BASE=scratch scripts/images.sh   # no registry needed (what CI uses)
#
# IMAGE_NAME (default schedlens) and IMAGE_TAG (default dev) name the result. Re-running with
# unchanged sources rebuilds nothing: Go's build cache makes the binaries in seconds and Docker's
# layer cache reuses the COPY of identical files.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

IMAGE_NAME="${IMAGE_NAME:-schedlens}"
IMAGE_TAG="${IMAGE_TAG:-dev}"
GO="${GO:-go}"
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"

log() { printf '[images] %s\n' "$*"; }

stage=build/image
rm -rf "$stage"
mkdir -p "$stage/usr/local/bin" "$stage/etc/ssl/certs"
log "building static binaries into $stage/usr/local/bin"
CGO_ENABLED=0 GOOS=linux "$GO" build -trimpath -ldflags='-s -w' -o "$stage/usr/local/bin/" \
	./cmd/collector ./cmd/correlator ./cmd/api
cp deploy/docker/passwd deploy/docker/group "$stage/etc/"
if [[ ! -s "$CA_BUNDLE" ]]; then
	log "ERROR: no CA bundle at $CA_BUNDLE (apt-get install ca-certificates, or set CA_BUNDLE)" >&2
	exit 1
fi
cp "$CA_BUNDLE" "$stage/etc/ssl/certs/ca-certificates.crt"
chmod -R go-w "$stage"

build_args=()
if [[ -n "${IMAGE_BASE:-}" ]]; then
	build_args+=(--build-arg "BASE_IMAGE=${IMAGE_BASE}")
fi
log "docker build -t ${IMAGE_NAME}:${IMAGE_TAG} (base: ${IMAGE_BASE:-the default of the Dockerfile})"
# The classic builder: Debian's docker.io has no buildx plugin, and nothing here needs BuildKit.
# Its output is shown only when it fails (it warns that it is deprecated on every run).
if ! out="$(DOCKER_BUILDKIT=0 docker build -q "${build_args[@]}" -t "${IMAGE_NAME}:${IMAGE_TAG}" . 2>&1)"; then
	printf '%s\n' "$out" >&2
	log "ERROR: docker build failed" >&2
	exit 1
fi
log "built ${IMAGE_NAME}:${IMAGE_TAG} ($(docker image inspect -f '{{.Id}}' "${IMAGE_NAME}:${IMAGE_TAG}"))"
