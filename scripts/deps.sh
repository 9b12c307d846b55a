#!/usr/bin/env bash
# Install and start what the whole test suite needs beyond Go: PostgreSQL and NATS running
# (scripts/services.sh), Debian's Chromium for the web UI's browser tests, a Docker engine with
# docker-compose and debootstrap (scripts/docker.sh) and the stand-in Postgres/NATS images the
# container tests run (scripts/standin-images.sh). Idempotent: what is there already is left
# alone. `make deps`; .ci/run runs it before `make test`. Needs root (apt, dockerd, debootstrap).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
bash scripts/services.sh
if [ ! -x /usr/bin/chromium ]; then
	echo "[deps] installing chromium for the browser tests"
	apt-get update -q >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
fi
bash scripts/docker.sh
bash scripts/standin-images.sh
