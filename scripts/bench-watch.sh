#!/usr/bin/env bash
# CPU cost of live watching (issue 4): the guard's CPU while idle and while
# a producer writes about 50 MB/s into a real broker, in one run.
#
#   scripts/bench-watch.sh [seconds per phase, default 30]
#
# Starts a broker (scripts/kafka.sh) and the guard (`run`, observe mode) as
# separate processes, and reads the guard's user+system CPU time from
# /proc/PID/stat before and after each phase. The producer is Kafka's own
# ProducerPerformance tool (1000-byte records at 50,000 records/s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
secs=${1:-30}
work=$(mktemp -d /tmp/kdg-bench-watch.XXXX)
port=$((21000 + RANDOM % 5000))
guard_pid=""
cleanup() {
  [ -n "$guard_pid" ] && kill "$guard_pid" 2>/dev/null && wait "$guard_pid" 2>/dev/null || true
  scripts/kafka.sh down --dir "$work/broker" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/kafka-disk-guard" ./cmd/kafka-disk-guard
scripts/kafka.sh up --dir "$work/broker" --port "$port" >/dev/null
logdir=$work/broker/data
scripts/kafka.sh tool org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$port" \
  --create --topic bench --partitions 4 --config segment.bytes=16777216 >/dev/null 2>&1

"$work/kafka-disk-guard" run --log-dirs "$logdir" --web.listen-address 127.0.0.1:0 --log.level warn 2>"$work/guard.log" &
guard_pid=$!
sleep 3
kill -0 "$guard_pid" || { cat "$work/guard.log"; echo "guard did not start" >&2; exit 1; }

hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$guard_pid/stat"; }
measure() { # label seconds command...
  local label=$1 s=$2; shift 2
  local t0 c0 c1 t1
  t0=$(date +%s.%N); c0=$(cpu_ticks)
  if [ $# -gt 0 ]; then "$@"; else sleep "$s"; fi
  c1=$(cpu_ticks); t1=$(date +%s.%N)
  awk -v l="$label" -v c0="$c0" -v c1="$c1" -v t0="$t0" -v t1="$t1" -v hz="$hz" \
    'BEGIN { cpu=(c1-c0)/hz; wall=t1-t0; printf "%-28s wall %6.1f s  guard cpu %6.2f s  = %5.2f%% of one core\n", l, wall, cpu, 100*cpu/wall }'
}

measure "idle" "$secs"
records=$((50000 * secs))
produce() {
  scripts/kafka.sh tool org.apache.kafka.tools.ProducerPerformance --topic bench --num-records "$records" \
    --record-size 1000 --throughput 50000 \
    --producer-props "bootstrap.servers=127.0.0.1:$port" acks=1 linger.ms=5 batch.size=262144 compression.type=none \
    > "$work/perf.log" 2>&1 || true
}
measure "producing ~50 MB/s" "$secs" produce
grep -E 'records sent' "$work/perf.log" | tail -n 1 | sed 's/^/producer: /'
echo "segments on disk: $(find "$logdir" -name '*.log' | wc -l), bytes: $(du -sb "$logdir" | cut -f1)"
