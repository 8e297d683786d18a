#!/usr/bin/env bash
# `stage2 report` time and peak memory against the number of distinct NVTX range names: the
# sample run's export with N extra push/pop ranges (fresh names) added. Prints one table;
# linear growth is the expectation (time per name roughly constant).
#
#   scripts/bench-range-names.sh [N...]      (default 20000 40000 80000; needs sqlite3)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| distinct names | report (s) | peak RSS (MB) |"
echo "|--:|--:|--:|"
for n in "${@:-20000 40000 80000}"; do
  for m in $n; do
    run="$tmp/r$m"
    cp -r examples/sample-run "$run"
    sqlite3 "$run/nsys/run.sqlite" "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < $m)
      INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid)
      SELECT 1000 + i * 10, 1005 + i * 10, 59, 'r' || i,
             (SELECT globalTid FROM NVTX_EVENTS WHERE eventType = 59 LIMIT 1) FROM c"
    /usr/bin/time -o "$tmp/time" -f "%e %M" "$bin" report "$run" >/dev/null 2>&1
    read -r secs kb <"$tmp/time"
    echo "| $m | $secs | $((kb / 1024)) |"
  done
done
