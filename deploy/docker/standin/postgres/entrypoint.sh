#!/bin/sh
# First start: initdb with POSTGRES_USER as the superuser and POSTGRES_PASSWORD as its password,
# then create POSTGRES_DB; every start: run postgres as the postgres user, listening on all
# addresses of the container.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
	echo "entrypoint: POSTGRES_PASSWORD is required" >&2
	exit 1
fi
mkdir -p "$PGDATA"
chown postgres:postgres "$PGDATA"
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
	pw="$(mktemp)"
	printf '%s' "$POSTGRES_PASSWORD" > "$pw"
	chown postgres "$pw"
	runuser -u postgres -- initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pw" \
		--auth-local=trust --auth-host=scram-sha-256 >/dev/null
	rm -f "$pw"
	echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
	if [ "$POSTGRES_DB" != "postgres" ]; then
		echo "CREATE DATABASE \"$POSTGRES_DB\";" | runuser -u postgres -- postgres --single -D "$PGDATA" postgres >/dev/null
	fi
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*' "$@"
