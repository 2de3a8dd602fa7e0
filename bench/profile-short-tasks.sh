#!/usr/bin/env bash
# Where a short task's time goes, machine-wide: an array of `true` tasks (2,000 unless TASKS is
# given) on `steward up --agents 1 --slots 4`, run twice, each on a fresh data folder:
#   1. under `perf record -a -g` for the first STEWARD_PROFILE_SECONDS (1.5) of the run: every
#      process's samples, split by thread (up's main thread, the SQLite writer, V8's helpers, the
#      launcher and its children before exec, the jobs, idle), and the main thread's system calls;
#   2. under `strace -c -f` attached to up's process: the system calls of up's threads, a task.
# Then the same `true` under `xargs -P 4` with perf, for the split beside it. The `--cpu-prof` of
# `npm run -s bench -- --only end-to-end` shows the JavaScript side; this shows the rest.
#
#   bash bench/profile-short-tasks.sh [TASKS]
#
# perf's window should end before the run does (2,000 tasks take 2 to 4 s on a 2-core machine): with
# fewer tasks, set a shorter STEWARD_PROFILE_SECONDS, or the idle time after the run is counted too.
#
# Needs perf (Debian: linux-perf) and strace; run it on an otherwise quiet machine, as root (perf
# -a). Prints a report on stdout; the perf data stays in the folder it names.
set -euo pipefail

REPOSITORY=$(cd "$(dirname "$0")/.." && pwd)
STEWARD=$REPOSITORY/bin/steward
TASKS=${1:-2000}
SECONDS_PROFILED=${STEWARD_PROFILE_SECONDS:-1.5}
for tool in perf strace curl; do
  command -v "$tool" >/dev/null || { echo "profile-short-tasks: $tool is not installed" >&2; exit 2; }
done
[[ $TASKS =~ ^[1-9][0-9]*$ ]] || { echo "profile-short-tasks: TASKS must be a positive number, not '$TASKS'" >&2; exit 2; }

OUT=$(mktemp -d /tmp/steward-profile-XXXXXX)
UP=
# Stops up and whatever it left in its folder (the launcher outlives its agent by design).
cleanup() {
  if [[ -n $UP ]]; then
    kill "$UP" 2>/dev/null || true
    wait "$UP" 2>/dev/null || true
    UP=
  fi
  for proc in /proc/[0-9]*; do
    [[ $(readlink "$proc/cwd" 2>/dev/null) == "$OUT"/run* ]] && kill -9 "${proc#/proc/}" 2>/dev/null || true
  done
  rm -rf "$OUT"/run*
}
trap cleanup EXIT

# Starts up on a fresh folder; sets UP, STEWARD_URL and STEWARD_TOKEN.
start_up() {
  local dir=$OUT/run$1 port
  mkdir -p "$dir"
  port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  (cd "$dir" && exec "$STEWARD" up --data "$dir/data" --port "$port" --agents 1 --slots 4 >"$dir/log" 2>&1) &
  UP=$!
  export STEWARD_URL=http://127.0.0.1:$port
  for _ in $(seq 200); do
    curl -sf "$STEWARD_URL/healthz" >/dev/null && [[ -s $dir/data/admin-token ]] && break
    sleep 0.05
  done
  STEWARD_TOKEN=$(cat "$dir/data/admin-token")
  export STEWARD_TOKEN
  # The agent joined and measured its speed: the run below is the tasks alone.
  sleep 1
}

submit_and_wait() {
  echo "{command: [\"true\"], array: {count: $TASKS}}" | "$STEWARD" submit - --wait >/dev/null
}

export PATH=$REPOSITORY/node_modules/.bin:$PATH

echo "== $TASKS \`true\` tasks on up --agents 1 --slots 4, perf record -a -g over ${SECONDS_PROFILED} s" >&2
start_up 1
perf record -a -g -o "$OUT/up.data" -- sleep "$SECONDS_PROFILED" >/dev/null 2>&1 &
PERF=$!
START=$(date +%s.%N)
submit_and_wait
END=$(date +%s.%N)
wait $PERF || {
  echo "profile-short-tasks: perf record failed (it needs root, or a low kernel.perf_event_paranoid)" >&2
  exit 1
}
UP_PID=$UP
cleanup

echo "== the same under strace -c -f of up's threads" >&2
start_up 2
strace -qq -c -f -p "$UP" -o "$OUT/strace.txt" &
STRACE=$!
sleep 0.3
submit_and_wait
kill -INT $STRACE
wait $STRACE 2>/dev/null || true
cleanup

echo "== $TASKS \`true\` under xargs -P 4, perf record -a -g" >&2
perf record -a -g -o "$OUT/xargs.data" -- bash -c "seq $TASKS | xargs -P 4 -n 1 true" >/dev/null 2>&1

# The reports below cut perf's long output short (head): a closed pipe is not a failure there.
set +o pipefail

# The share of the machine's samples by command name (threads of one name summed), and by thread.
by_command() {
  perf report -i "$1" --no-children --sort comm -g none --stdio 2>/dev/null | grep '%' | head -"$2"
}

echo "Steward up ($TASKS tasks in $(awk "BEGIN { printf \"%.2f\", $END - $START }") s; perf over the first ${SECONDS_PROFILED} s)."
echo "Share of the machine's samples by command (up's main thread is MainThread, pid $UP_PID; the"
echo "launcher's vfork children count as launcher until they exec; true: the jobs; swapper: idle):"
by_command "$OUT/up.data" 10
awk "BEGIN { exit !($END - $START < $SECONDS_PROFILED) }" &&
  echo "  (the run ended before perf's window did: idle time after it is counted; set STEWARD_PROFILE_SECONDS lower)"
echo
echo "By thread (tid:name; up's main thread is $UP_PID):"
perf report -i "$OUT/up.data" --no-children --sort pid -g none --stdio 2>/dev/null | grep '%' | head -12
echo
echo "up's main thread in the kernel, by system call (inclusive share of the machine's samples):"
perf report -i "$OUT/up.data" --children --tid="$UP_PID" --sort sym -g none --stdio 2>/dev/null |
  grep -E '\[k\] (ksys_[a-z0-9]+|__x64_sys_[a-z0-9_]+|__do_sys_[a-z0-9_]+)$' | head -12 |
  awk '{ printf "  %s  %s\n", $1, $4 }'
echo
echo "up's threads under strace -c -f, system calls a task (of $TASKS):"
awk -v n="$TASKS" '$1 ~ /^[0-9.]+$/ && $NF != "total" { printf "  %7.2f  %s\n", $4 / n, $NF }' \
  "$OUT/strace.txt" | sort -rn | head -16
echo
echo "xargs -P 4, share of the machine's samples by command:"
by_command "$OUT/xargs.data" 5
echo
echo "perf data: $OUT/up.data, $OUT/xargs.data (perf report -i FILE); strace: $OUT/strace.txt"
trap - EXIT
cleanup
