#!/usr/bin/env bash
# What CPU sampling costs in the nsys pass, on the transformers generate() workload, and what
# it leaves in the SQLite export. Prints one table (nsys pass seconds per setting, run side by
# side) and the sampling tables of the export.
#
#   scripts/sampling-overhead.sh          (env: STAGE2_BIN, RUN_ROOT=tmp/sampling, STAGE2_EXTRA)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/sampling}
w="examples/workloads/hf_generate.py --arch qwen2 --layers 2 --new-tokens 8"
mkdir -p "$root"
nsys --version
nsys profile --help 2>&1 | grep -iE -- "--sample|python|backtrace|--cpuctxsw|sampling-period|sampling-frequency" | head -30
declare -A settings=(
  [none]="nsys.sample=none"
  [cpu]="nsys.sample=process-tree"
  [cpu-python]="nsys.sample=process-tree nsys.extra_args=[--python-sampling=true,--python-sampling-frequency=1000]"
)
rows=()
for name in none cpu cpu-python; do
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$name" --nvtx-capture decode --no-ncu \
    ${settings[$name]} ${STAGE2_EXTRA:-} -- python3 $w > "$root/$name.log" 2>&1
  rc=$?
  secs=$(python3 -c "import json; print('%.1f' % json.load(open('$root/$name/status.json'))['passes']['nsys']['duration_s'])" 2>/dev/null || echo "?")
  rows+=("| $name | ${settings[$name]} | $rc | $secs |")
done
echo
echo "| setting | overrides | rc | nsys pass (s) |"
echo "|---|---|--:|--:|"
printf '%s\n' "${rows[@]}"
for name in cpu cpu-python; do
  db="$root/$name/nsys/run.sqlite"
  echo "== $name: tables with rows"
  python3 - "$db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for (t,) in c.execute("select name from sqlite_master where type='table' order by name"):
    n = c.execute(f'select count(*) from "{t}"').fetchone()[0]
    if n and any(k in t.upper() for k in ("SAMPL", "CALLCHAIN", "PYTHON", "COMPOSITE", "STACK", "FRAME", "SYMBOL", "BACKTRACE")):
        cols = [r[1] for r in c.execute(f'pragma table_info("{t}")')]
        print(t, n, cols)
        for row in c.execute(f'select * from "{t}" limit 3'):
            print("   ", row)
PY
done
