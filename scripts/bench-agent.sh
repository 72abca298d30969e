#!/usr/bin/env bash
# Benchmark the running agent, the process users run: `kafka-disk-guard run
# --log-dirs <generated tree>` offline (no cluster), at one or more scales.
#
#   scripts/bench-agent.sh                        100k and 1M segments
#   SCALES=1000x10 IDLE=10 APPEND=10 scripts/bench-agent.sh   a quick try
#
# For each scale (PARTITIONSxSEGMENTS, segments per partition) it prints:
#   - ready: seconds from the process start to /readyz answering 200, the
#     CPU the start took and the bytes it read from the disk (a cold page
#     cache: the first full scan reads every segment's time index);
#   - idle: after IDLE seconds with nothing written, the RSS (from /proc)
#     and the Go heap (go_memstats_heap_inuse_bytes from the guard's own
#     /metrics), and the CPU the process used over those seconds, in % of
#     one core;
#   - append: the same over APPEND seconds while a generated broker
#     (internal/logdirgen/benchappend) appends APPEND_RATE bytes/s to
#     APPEND_PARTITIONS partitions of a new topic, rolling at
#     APPEND_SEGMENT bytes and deleting old segments.
#
# Environment: SCALES (default "10000x10 100000x10"), IDLE (default 60),
# APPEND (default 60), APPEND_PARTITIONS (100), APPEND_RATE (10485760),
# APPEND_SEGMENT (1048576), SEG_BYTES (closed .log size, sparse; 1048576),
# BENCH_DIR (where trees go; kept if given, else a temp dir removed at the
# end), GUARD_ENV (extra environment for the guard, e.g. GOMEMLIMIT=230MiB),
# GUARD_ARGS (extra flags, e.g. --metrics.per-partition).
# The machine's load average is printed beside every CPU figure: on a
# shared machine take them more than once.
set -euo pipefail

SCALES=${SCALES:-"10000x10 100000x10"}
IDLE=${IDLE:-60}
APPEND=${APPEND:-60}
APPEND_PARTITIONS=${APPEND_PARTITIONS:-100}
APPEND_RATE=${APPEND_RATE:-10485760}
APPEND_SEGMENT=${APPEND_SEGMENT:-1048576}
SEG_BYTES=${SEG_BYTES:-1048576}
GUARD_ENV=${GUARD_ENV:-}
GUARD_ARGS=${GUARD_ARGS:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${BENCH_DIR:-}" ]; then
  dir=$BENCH_DIR; mkdir -p "$dir"
else
  dir=$(mktemp -d /tmp/kdg-bench-agent.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
fi
(cd "$here" && go build -o "$dir/kafka-disk-guard" ./cmd/kafka-disk-guard &&
  go build -o "$dir/benchscan" ./internal/logdirgen/benchscan &&
  go build -o "$dir/benchappend" ./internal/logdirgen/benchappend)
hz=$(getconf CLK_TCK)
echo "go: $(go version | cut -d' ' -f3), cpus: $(nproc), inotify max_user_watches: $(cat /proc/sys/fs/inotify/max_user_watches 2>/dev/null || echo '?')"

# cpu_ticks PID: user+system clock ticks of the process.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
hwm_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }
metric() { curl -fsS "http://$addr/metrics" | awk -v m="$1" '$1 == m {printf "%.0f", $2}'; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
# window SECONDS: prints "cpu% load" for the guard over the next SECONDS.
window() {
  local t0 c0 t1 c1
  t0=$(date +%s.%N); c0=$(cpu_ticks "$pid")
  sleep "$1"
  t1=$(date +%s.%N); c1=$(cpu_ticks "$pid")
  awk -v c="$((c1 - c0))" -v hz="$hz" -v a="$t0" -v b="$t1" -v l="$(load)" 'BEGIN {printf "%.2f%% of a core (load %s)", 100*c/hz/(b-a), l}'
}
# start_cost PID: the CPU the process used so far and what it read from
# the disk (read_bytes of /proc/PID/io: pages that were not in the page
# cache). The first full scan reads every time index: a start that reads
# gigabytes found the tree out of the page cache, and its ready time is
# the disk's, not the agent's.
start_cost() {
  awk -v hz="$hz" '{printf "CPU user %.1fs sys %.1fs", $14/hz, $15/hz}' "/proc/$1/stat"
  awk '$1 == "read_bytes:" {printf ", read from disk %.0f MB", $2/1e6}' "/proc/$1/io" 2>/dev/null || true
}
mem() {
  awk -v r="$(rss_kb "$pid")" -v h="$(metric go_memstats_heap_inuse_bytes)" -v a="$(metric go_memstats_heap_alloc_bytes)" -v n="$segs" 'BEGIN {
    printf "RSS %.1f MB (%.0f B/segment), heap in use %.1f MB, heap alloc %.1f MB (%.0f B/segment)", r/1024, r*1024/n, h/1e6, a/1e6, a/n }'
}

for scale in $SCALES; do
  parts=${scale%x*}; per=${scale#*x}; segs=$((parts * per))
  tree=$dir/logdir-$parts-$per
  if [ ! -f "$tree/meta.properties" ]; then
    echo "generating $parts partitions x $per segments in $tree ..." >&2
    "$dir/benchscan" gen "$tree" "$parts" "$per" "$SEG_BYTES" >&2
  fi
  port=$((20000 + RANDOM % 20000)); addr=127.0.0.1:$port
  echo
  echo "== $parts partitions x $per segments = $segs segments (load $(load))"
  start=$(date +%s.%N)
  env $GUARD_ENV "$dir/kafka-disk-guard" run --log-dirs "$tree" --web.listen-address "$addr" --log.level warn $GUARD_ARGS \
    >"$dir/guard.out" 2>"$dir/guard.err" &
  pid=$!
  until curl -fsS -o /dev/null "http://$addr/readyz" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { cat "$dir/guard.err" >&2; exit 1; }
    sleep 0.05
  done
  ready=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b-a}')
  echo "ready after:      ${ready}s   RSS at ready $(( $(rss_kb "$pid") / 1024 )) MB   (load $(load))"
  echo "                  start: $(start_cost "$pid")"
  cpu=$(window "$IDLE")
  echo "idle ${IDLE}s:         CPU $cpu"
  echo "                  $(mem), peak RSS $(( $(hwm_kb "$pid") / 1024 )) MB"
  "$dir/benchappend" "$tree" "$APPEND_PARTITIONS" "$APPEND_RATE" "$APPEND_SEGMENT" "${APPEND}s" >"$dir/append.out" &
  apid=$!
  until grep -q started "$dir/append.out"; do kill -0 "$apid" || exit 1; sleep 0.1; done
  cpu=$(window "$APPEND")
  wait "$apid"
  echo "appending ${APPEND}s:    CPU $cpu   ($(tail -1 "$dir/append.out"))"
  echo "                  $(mem), peak RSS $(( $(hwm_kb "$pid") / 1024 )) MB"
  kill "$pid"; wait "$pid" || true
done
