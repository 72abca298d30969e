#!/usr/bin/env bash
# Benchmark the agent's full log-dir scan against `du -s` of the same tree.
#
#   scripts/bench-scan.sh                  10k partitions x 10 segments (100k segments)
#   PARTITIONS=1000 SEGMENTS=10 scripts/bench-scan.sh
#
# Environment: PARTITIONS, SEGMENTS (per partition), SEG_BYTES (.log size,
# sparse), RUNS (timed runs of each, default 5), WORKERS (scan workers,
# default the scanner's), BENCH_DIR (where the tree goes; kept if given,
# else a temp dir removed at the end).
#
# Both commands run in turn on the same warm tree (page cache dropping
# needs privileges this script does not assume): first one warm-up run of
# each, then RUNS alternating timed runs. It prints the median wall time
# and CPU time (user+sys) of each, their ratio, and memory: the scan's peak
# RSS (over the RSS of the same program scanning an empty log dir) per
# segment, and the live heap its result holds per segment. On Linux it
# also times `benchscan floor`, a walk that makes only the system calls a
# first scan cannot do without (du's listing and stats, each time index
# opened, measured and its last entries read, the active segment's
# indexes and log tail), from one goroutine, without the scanner: the
# lower bound of the scan's design, as a ratio to du's CPU.
set -euo pipefail

PARTITIONS=${PARTITIONS:-10000}
SEGMENTS=${SEGMENTS:-10}
SEG_BYTES=${SEG_BYTES:-1048576}
RUNS=${RUNS:-5}
WORKERS=${WORKERS:-0}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -n "${BENCH_DIR:-}" ]; then
  dir=$BENCH_DIR; mkdir -p "$dir"
else
  dir=$(mktemp -d /tmp/kdg-bench-scan.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
fi
command -v /usr/bin/time >/dev/null || { echo "bench-scan: needs GNU time at /usr/bin/time" >&2; exit 1; }

(cd "$here" && go build -o "$dir/benchscan" ./internal/logdirgen/benchscan)
tree=$dir/logdir-$PARTITIONS-$SEGMENTS
if [ ! -f "$tree/meta.properties" ]; then
  echo "generating $PARTITIONS partitions x $SEGMENTS segments in $tree ..." >&2
  "$dir/benchscan" gen "$tree" "$PARTITIONS" "$SEGMENTS" "$SEG_BYTES" >&2
fi
empty=$dir/empty-logdir
"$dir/benchscan" gen "$empty" 1 1 1024 >/dev/null

files=$(find "$tree" | wc -l)
echo "tree: $tree ($files entries, $(du -sh "$tree" | cut -f1) on disk)"
echo "go: $(go version | cut -d' ' -f3), cpus: $(nproc), load: $(cut -d' ' -f1-3 /proc/loadavg)"

# measure CMD...: prints "wall cpu maxrss_kb"
measure() {
  /usr/bin/time -f '%e %U %S %M' -o "$dir/time.out" "$@" >"$dir/cmd.out" 2>"$dir/cmd.err" || { cat "$dir/cmd.err" >&2; exit 1; }
  awk '{printf "%s %.3f %s\n", $1, $2+$3, $4}' "$dir/time.out"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Warm both.
measure du -s "$tree" >/dev/null
measure "$dir/benchscan" scan "$tree" 1 "$WORKERS" >/dev/null

: >"$dir/du.txt"; : >"$dir/scan.txt"; : >"$dir/floor.txt"
floor=false
"$dir/benchscan" floor "$empty" >/dev/null 2>&1 && floor=true
for _ in $(seq "$RUNS"); do
  measure du -s "$tree" >>"$dir/du.txt"
  measure "$dir/benchscan" scan "$tree" 1 "$WORKERS" >>"$dir/scan.txt"
  cat "$dir/cmd.out" >>"$dir/scan-lines.txt"
  if $floor; then measure "$dir/benchscan" floor "$tree" >>"$dir/floor.txt"; fi
done
du_wall=$(cut -d' ' -f1 "$dir/du.txt" | median); du_cpu=$(cut -d' ' -f2 "$dir/du.txt" | median)
sc_wall=$(cut -d' ' -f1 "$dir/scan.txt" | median); sc_cpu=$(cut -d' ' -f2 "$dir/scan.txt" | median)
sc_rss=$(cut -d' ' -f3 "$dir/scan.txt" | median)
base_rss=$(measure "$dir/benchscan" scan "$empty" 1 "$WORKERS" | cut -d' ' -f3)
segs=$(sed -n 's/.*segments=\([0-9]*\).*/\1/p' "$dir/scan-lines.txt" | tail -1)
live=$(sed -n 's/.*live_heap_bytes_per_segment=\([0-9]*\).*/\1/p' "$dir/scan-lines.txt" | median)

# Steady state: the agent's periodic full scans pass the previous result.
"$dir/benchscan" scan "$tree" $((RUNS + 1)) "$WORKERS" >"$dir/rescan.txt"
re_wall=$(grep 'mode=rescan' "$dir/rescan.txt" | sed -n 's/.*wall_ms=\([0-9.]*\).*/\1/p' | median)

echo
echo "segments scanned:            $segs   (load at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
echo "du -s          median wall:  ${du_wall}s   cpu: ${du_cpu}s   (runs: $(cut -d' ' -f1 "$dir/du.txt" | tr '\n' ' '))"
echo "scan (first)   median wall:  ${sc_wall}s   cpu: ${sc_cpu}s   (runs: $(cut -d' ' -f1 "$dir/scan.txt" | tr '\n' ' '))"
echo "scan (rescan)  median wall:  $(awk -v m="$re_wall" 'BEGIN{printf "%.3f", m/1000}')s (in process, previous result reused)"
awk -v a="$sc_wall" -v b="$du_wall" -v c="$sc_cpu" -v d="$du_cpu" -v r="$re_wall" 'BEGIN {
  printf "ratio scan/du: wall %.2fx  cpu %.2fx  rescan wall %.2fx   (goal <= 1.5x)\n", a/b, (d > 0 ? c/d : 0), (r/1000)/b }'
if $floor; then
  fl_wall=$(cut -d' ' -f1 "$dir/floor.txt" | median); fl_cpu=$(cut -d' ' -f2 "$dir/floor.txt" | median)
  echo "floor          median wall:  ${fl_wall}s   cpu: ${fl_cpu}s   (the system calls alone, one goroutine; runs: $(cut -d' ' -f1 "$dir/floor.txt" | tr '\n' ' '))"
  awk -v a="$fl_wall" -v b="$du_wall" -v c="$fl_cpu" -v d="$du_cpu" -v e="$sc_cpu" 'BEGIN {
    printf "ratio floor/du: wall %.2fx  cpu %.2fx   scan/floor cpu %.2fx\n", a/b, (d > 0 ? c/d : 0), (c > 0 ? e/c : 0) }'
fi
awk -v rss="$sc_rss" -v base="$base_rss" -v n="$segs" -v live="$live" 'BEGIN {
  printf "peak RSS %d KiB, empty-dir baseline %d KiB: %.0f bytes per segment; live heap of the result: %d bytes per segment   (goal <= 200)\n",
    rss, base, (rss-base)*1024/n, live }'
