#!/usr/bin/env bash
# Make sure a Docker engine answers, with docker-compose and debootstrap beside it: install
# Debian's docker.io, docker-compose and debootstrap with apt when missing, and start dockerd in
# the background (log /var/log/dockerd.log) when no engine answers. Idempotent: a no-op on a
# machine that has all of it running. Used by .ci/run.
set -euo pipefail
log() { printf '[docker] %s\n' "$*"; }

missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if ((${#missing[@]})); then
	log "installing ${missing[*]} with apt"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
	log "Docker engine answers ($(docker info --format '{{.ServerVersion}}'))"
	exit 0
fi
log "starting dockerd (log /var/log/dockerd.log)"
nohup dockerd >>/var/log/dockerd.log 2>&1 &
for ((i = 0; i < 60; i++)); do
	if docker info >/dev/null 2>&1; then
		log "Docker engine up after ${i}s"
		exit 0
	fi
	sleep 1
done
log "ERROR: dockerd did not answer within 60s; see /var/log/dockerd.log" >&2
tail -n 20 /var/log/dockerd.log >&2 || true
exit 1
