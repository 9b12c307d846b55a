#!/usr/bin/env bash
# The README's first command: build the three binaries, start the correlator and the api on this
# machine's Postgres and NATS, replay the sample experiment (testdata/sample.jsonl) through
# `collector replay`, print what the API serves, and keep the API up until Ctrl-C.
#   --exit   stop after the summary
# Honours SCHEDLENS_DATABASE_URL, SCHEDLENS_NATS_URL, SCHEDLENS_HTTP_ADDR, SCHEDLENS_METRICS_ADDR.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

exit_after=0
[[ "${1:-}" == "--exit" ]] && exit_after=1

export SCHEDLENS_DATABASE_URL="${SCHEDLENS_DATABASE_URL:-postgres://root@127.0.0.1:5432/schedlens?sslmode=disable}"
export SCHEDLENS_NATS_URL="${SCHEDLENS_NATS_URL:-nats://127.0.0.1:4222}"
export SCHEDLENS_HTTP_ADDR="${SCHEDLENS_HTTP_ADDR:-127.0.0.1:8080}"
export SCHEDLENS_METRICS_ADDR="${SCHEDLENS_METRICS_ADDR:-127.0.0.1:9091}"
api="http://${SCHEDLENS_HTTP_ADDR/#:/127.0.0.1:}"

bash scripts/services.sh
db="$(sed -E 's|.*/([^/?]+)(\?.*)?$|\1|' <<<"$SCHEDLENS_DATABASE_URL")"
server="${SCHEDLENS_DATABASE_URL%/*}/postgres"
if ! psql "$server" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
	echo "[demo] creating database $db"
	psql "$server" -qc "CREATE DATABASE \"$db\""
fi

echo "[demo] building bin/collector bin/correlator bin/api"
go build -o bin/ ./cmd/collector ./cmd/correlator ./cmd/api

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

bin/correlator serve >bin/correlator.log 2>&1 &
pids+=($!)
bin/api >bin/api.log 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
	curl -fsS "$api/readyz" >/dev/null 2>&1 && break
	sleep 0.2
done
curl -fsS "$api/readyz" >/dev/null || { echo "[demo] api not ready; see bin/api.log and bin/correlator.log" >&2; exit 1; }

echo "[demo] replaying testdata/sample.jsonl"
bin/collector replay testdata/sample.jsonl
want=$(grep -c . testdata/sample.jsonl)
for _ in $(seq 1 150); do
	n=$(curl -fsS "$api/v1/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events_total"])')
	[[ "$n" -ge "$want" ]] && break
	sleep 0.2
done

python3 - "$api" <<'PY'
import json, sys, urllib.request
api = sys.argv[1]
get = lambda p: json.load(urllib.request.urlopen(api + p))
s = get("/v1/stats")
print(f"\nstored {s['events_total']} events about {s['pods_total']} pods ({s['dead_letters_total']} dead letters): {s['by_kind']}")
pods = get("/v1/pods?experiment=day20&limit=1000")["pods"]
print(f"\n{'pod':28} {'node':11} {'pending':>8} {'start':>6} {'load':>6} {'→1st ok':>8} {'FailSch':>7} {'restarts':>8}  ended")
fmt = lambda v: "-" if v is None else f"{v:.2f}"
for p in pods:
    d, c = p["durations"], p["counts"]
    print(f"{p['pod']['name']:28} {p['pod']['node'] or '-':11} {fmt(d['pending']):>8} {fmt(d['start']):>6} {fmt(d['model_load']):>6} "
          f"{fmt(d['ready_to_first_success']):>8} {c['failed_scheduling']:>7} {c['restarts']:>8}  {p['ended_reason'] or 'censored: ' + ','.join(p['censored'])}")
uid = pods[0]["pod"]["uid"]
print(f"\none timeline: curl -s {api}/v1/pods/{uid}/timeline")
PY
if ((exit_after)); then exit 0; fi
echo "[demo] API up at $api (metrics at http://$SCHEDLENS_METRICS_ADDR/metrics); Ctrl-C stops it"
wait
