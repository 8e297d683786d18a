#!/usr/bin/env bash
# `stage2 report` at production scale: the sample run's export repeated to N kernel launches
# (scripts/synth-export.py), report time and peak memory, against scripts/attribute.py, a
# plain Python sqlite3 script doing the range attribution alone, on the same file, side by
# side, and against the scan floor: SQLite reading every row of the tables the report reads
# (kernels, runtime calls, NVTX events) once, with nothing done with them. Prints one table.
#
#   scripts/bench-scale.sh [COPIES...]     (default 1024 4096 10240: 1.5M, 6M, 15M launches)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
tmp=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "| copies | kernel launches | export (MB) | scan floor (s) | stage2 report (s) | report / floor | peak RSS (MB) | attribute.py (s) | peak RSS (MB) | speed-up |"
echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1024 4096 10240)
for n in "${sizes[@]}"; do
  run="$tmp/r$n"
  rm -rf "$run"
  cp -r examples/sample-run "$run"
  rm -f "$run"/nsys/*.sqlite
  python3 scripts/synth-export.py examples/sample-run/nsys/run.sqlite "$run/nsys/run.sqlite" "$n" >/dev/null
  launches=$(sqlite3 "$run/nsys/run.sqlite" "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
  mb=$(( $(stat -c %s "$run/nsys/run.sqlite") / 1048576 ))
  /usr/bin/time -o "$tmp/t0" -f "%e %M" sqlite3 "$run/nsys/run.sqlite" \
    "SELECT total(start), total(end), total(correlationId), total(globalPid), total(demangledName) FROM CUPTI_ACTIVITY_KIND_KERNEL;
     SELECT total(start), total(end), total(correlationId), total(globalTid), total(nameId) FROM CUPTI_ACTIVITY_KIND_RUNTIME;
     SELECT total(start), total(end), total(globalTid), count(text) FROM NVTX_EVENTS;" >/dev/null
  /usr/bin/time -o "$tmp/t1" -f "%e %M" "$bin" report "$run" >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
  /usr/bin/time -o "$tmp/t2" -f "%e %M" python3 scripts/attribute.py "$run/nsys/run.sqlite" >/dev/null
  read -r s0 _ <"$tmp/t0"
  read -r s1 k1 <"$tmp/t1"
  read -r s2 k2 <"$tmp/t2"
  ratio=$(awk -v a="$s1" -v b="$s2" 'BEGIN { printf "%.1fx", b / a }')
  floor=$(awk -v a="$s1" -v b="$s0" 'BEGIN { printf "%.2fx", a / b }')
  echo "| $n | $launches | $mb | $s0 | $s1 | $floor | $((k1 / 1024)) | $s2 | $((k2 / 1024)) | $ratio |"
  rm -rf "$run"
done
