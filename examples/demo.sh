#!/usr/bin/env bash
# The demonstration: start `steward up` on a fresh data folder, run a few jobs, show the results, stop.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
steward="$root/bin/steward"
data=$(mktemp -d "${TMPDIR:-/tmp}/steward-demo.XXXXXX")
port=$("$root/node_modules/.bin/node" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
export STEWARD_URL="http://127.0.0.1:$port"

echo "== steward up --data $data --port $port --agents 2 --slots 2"
STEWARD_LOG_LEVEL=warn "$steward" up --data "$data" --port "$port" --agents 2 --slots 2 &
up_pid=$!
trap 'kill $up_pid 2>/dev/null; wait $up_pid 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 150); do
  if [ -s "$data/admin-token" ] && STEWARD_TOKEN=$(cat "$data/admin-token") "$steward" hosts --json 2>/dev/null | grep -q local-2; then break; fi
  sleep 0.2
done
export STEWARD_TOKEN=$(cat "$data/admin-token")

echo; echo "== steward hosts"; "$steward" hosts
echo; echo "== steward submit examples/hello/job.yaml --wait"
hello=$("$steward" submit "$root/examples/hello/job.yaml" --wait)
echo "job $hello succeeded; its stdout:"; "$steward" logs "$hello"
"$steward" fetch "$hello" --to "$data/out/hello"
echo "fetched counts.txt:"; head -3 "$data/out/hello/counts.txt"

echo; echo "== steward submit examples/pi/job.yaml (an array of 20 tasks)"
pi=$("$steward" submit "$root/examples/pi/job.yaml")
retry=$("$steward" submit "$root/examples/retry/job.yaml")
"$steward" ps
"$steward" wait "$pi" "$retry" --timeout 120
"$steward" fetch "$pi" --to "$data/out/pi"
echo "mean of the 20 estimates of pi: $(cat "$data"/out/pi/*/pi.txt | awk '{s+=$1} END {printf "%.5f", s/NR}')"

echo; echo "== steward show $retry (failed once, retried, succeeded)"
"$steward" show "$retry"
echo; echo "== checkpoint and migration: examples/counter/job.yaml counts to 80, migrated halfway"
counter=$("$steward" submit "$root/examples/counter/job.yaml")
until "$steward" logs "$counter" 2>/dev/null | grep -q '^step 40$'; do sleep 0.2; done
from=$("$steward" show "$counter" --json | grep -m1 '"host"' | tr -d ' ",' | cut -d: -f2)
echo "at step 40 on $from: steward migrate $counter"
"$steward" migrate "$counter"
"$steward" wait "$counter" --timeout 120
echo "the counter's second attempt began with: $("$steward" logs "$counter" | head -1)"
"$steward" show "$counter" | sed -n '1,9p'

echo; echo "== steward ps --all"; "$steward" ps --all
echo; echo "demo finished: every job succeeded"
