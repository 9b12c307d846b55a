#!/usr/bin/env bash
# Build the stand-in Postgres and NATS images the compose and testcontainers tests use when no
# container registry is reachable (CI here): a Debian bookworm root made by debootstrap from the
# Debian mirror apt already uses, imported as a base image, and Debian's postgresql-15 and
# nats-server installed on it (deploy/docker/standin/). Everything is cached: the debootstrap
# tarball under $SCHEDLENS_CACHE_DIR (default /var/cache/schedlens), and each image is built only
# when `docker image inspect` does not find it with the label of its Dockerfile's hash.
#
#   scripts/standin-images.sh        # prints the two image names when done
#
# Images: schedlens-standin/debian:bookworm, schedlens-standin/postgres:15,
# schedlens-standin/nats:2.9. Needs root (debootstrap), docker and debootstrap.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

cache="${SCHEDLENS_CACHE_DIR:-/var/cache/schedlens}"
base=schedlens-standin/debian:bookworm
log() { printf '[standin-images] %s\n' "$*"; }

# mirror is the first Debian archive URI in apt's sources (deb822 or one-line format).
mirror() {
	local uri
	uri="$(grep -hs -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)"
	if [[ -z "$uri" ]]; then
		uri="$(grep -hs -E '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | grep -v security | head -n1 || true)"
	fi
	echo "${uri:-http://deb.debian.org/debian}"
}

if ! docker image inspect "$base" >/dev/null 2>&1; then
	tarball="$cache/debootstrap-bookworm-minbase.tar"
	if [[ ! -s "$tarball" ]]; then
		command -v debootstrap >/dev/null || { log "ERROR: debootstrap not installed (apt-get install debootstrap)" >&2; exit 1; }
		mkdir -p "$cache"
		root="$(mktemp -d "$cache/rootfs.XXXXXX")"
		trap 'rm -rf "$root"' EXIT
		m="$(mirror)"
		log "debootstrap --variant=minbase bookworm from $m (about 2 minutes, once)"
		debootstrap --variant=minbase bookworm "$root" "$m" >"$cache/debootstrap.log" 2>&1 ||
			{ log "ERROR: debootstrap failed, see $cache/debootstrap.log" >&2; exit 1; }
		# The image's apt talks to the same mirror.
		echo "deb $m bookworm main" >"$root/etc/apt/sources.list"
		tar -C "$root" -c . >"$tarball.tmp"
		mv "$tarball.tmp" "$tarball"
		rm -rf "$root"
		trap - EXIT
	fi
	log "docker import $tarball as $base"
	docker import - "$base" <"$tarball" >/dev/null
fi

build() { # name dir
	local name="$1" dir="$2" hash
	hash="$(cat "$dir"/* | sha256sum | cut -c1-16)"
	if [[ "$(docker image inspect -f '{{index .Config.Labels "io.schedlens.standin"}}' "$name" 2>/dev/null || true)" == "$hash" ]]; then
		log "$name up to date"
		return
	fi
	log "building $name from $dir"
	local out
	if ! out="$(DOCKER_BUILDKIT=0 docker build -q --label "io.schedlens.standin=$hash" -t "$name" "$dir" 2>&1)"; then
		printf '%s\n' "$out" >&2
		log "ERROR: building $name failed" >&2
		exit 1
	fi
}
build schedlens-standin/postgres:15 deploy/docker/standin/postgres
build schedlens-standin/nats:2.9 deploy/docker/standin/nats
log "ready: schedlens-standin/postgres:15 schedlens-standin/nats:2.9"
