#!/usr/bin/env bash
# Make sure PostgreSQL and NATS (JetStream) run on this machine, starting them when they are down,
# and wait until both answer. Used by .ci/run and scripts/demo.sh.
set -euo pipefail

log() { printf '[services] %s\n' "$*"; }

PG_HOST=127.0.0.1
PG_PORT=5432
NATS_HOST=127.0.0.1
NATS_PORT=4222
WAIT_SECONDS=60

pg_up() {
	pg_isready -q -h "$PG_HOST" -p "$PG_PORT" >/dev/null 2>&1
}

nats_up() {
	bash -c "</dev/tcp/${NATS_HOST}/${NATS_PORT}" >/dev/null 2>&1
}

# --- PostgreSQL -------------------------------------------------------------
if pg_up; then
	log "PostgreSQL already answering on ${PG_HOST}:${PG_PORT}"
else
	pg_version="$(ls /etc/postgresql)"
	log "starting PostgreSQL: pg_ctlcluster --skip-systemctl-redirect ${pg_version} main start"
	pg_ctlcluster --skip-systemctl-redirect "${pg_version}" main start
fi

# --- NATS -------------------------------------------------------------------
if nats_up; then
	log "NATS already listening on ${NATS_HOST}:${NATS_PORT}"
else
	log "starting NATS (JetStream) on ${NATS_HOST}:${NATS_PORT}, store /var/lib/nats-server, log /var/log/nats-server.log"
	mkdir -p /var/lib/nats-server
	start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
		-a "$NATS_HOST" -p "$NATS_PORT" -js -sd /var/lib/nats-server -l /var/log/nats-server.log
fi

# --- Wait for both ----------------------------------------------------------
log "waiting up to ${WAIT_SECONDS}s for PostgreSQL and NATS to answer"
pg_ok=0
nats_ok=0
for ((i = 0; i < WAIT_SECONDS; i++)); do
	pg_up && pg_ok=1 || pg_ok=0
	nats_up && nats_ok=1 || nats_ok=0
	if ((pg_ok && nats_ok)); then
		break
	fi
	sleep 1
done

if ! ((pg_ok && nats_ok)); then
	((pg_ok)) || log "ERROR: PostgreSQL did not answer on ${PG_HOST}:${PG_PORT} within ${WAIT_SECONDS}s (pg_isready failed)" >&2
	((nats_ok)) || log "ERROR: NATS did not accept connections on ${NATS_HOST}:${NATS_PORT} within ${WAIT_SECONDS}s (see /var/log/nats-server.log)" >&2
	exit 1
fi
log "PostgreSQL and NATS are up"

