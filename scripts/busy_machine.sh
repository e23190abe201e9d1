#!/usr/bin/env bash
# The project's own test command, RUNS times in a row (default 10) with the CPU made
# busy on purpose: BUSY busy loops (default: one per core) run beside the two test
# workers for the whole time. Each run's output is kept in LOG_DIR. Exits non-zero
# unless every run passed. Run it after `bash .ci/run` has made the .venv.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-10}
busy=${BUSY:-$(nproc)}
logs=${LOG_DIR:-$(mktemp -d -t busy-machine.XXXXXX)}
mkdir -p "$logs"
pids=()
for _ in $(seq "$busy"); do yes >/dev/null & pids+=($!); done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
echo "$runs runs beside $busy busy loops on $(nproc) cores; logs in $logs"
passed=0
for i in $(seq "$runs"); do
  start=$(date +%s)
  if CI=true .venv/bin/pytest -p no:cacheprovider -n 2 -q >"$logs/run-$i.log" 2>&1; then
    passed=$((passed + 1)); verdict=passed
  else
    verdict=FAILED
  fi
  echo "run $i: $verdict in $(($(date +%s) - start)) s (load $(cut -d' ' -f1 /proc/loadavg)): $(tail -1 "$logs/run-$i.log")"
done
echo "$passed of $runs runs passed"
[ "$passed" -eq "$runs" ]
