#!/usr/bin/env bash
# Benchmark (not a test): a first run against a bare run of the same workload, alternated, in
# rounds, so a ratio is read beside the start-up noise of the machine (a bare run of one
# workload varies 12-20 s between runs here). Each round: the bare workload, then
# `stage2 profile` with a fresh metrics cache. Prints a Markdown row per run and the median
# ratio per variant.
#
#   scripts/bench-first-rounds.sh [VARIANT...]   variants as scripts/bench-gpu.sh (default: eager moeworker)
#   env: STAGE2_BIN, PYTHON, RUN_ROOT (tmp/rounds), ROUNDS (3), STAGE2_EXTRA (e.g. ncu.clock_control=none)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/rounds}
rounds=${ROUNDS:-3}
[ -x "$bin" ] || { echo "bench: no stage2 binary at $bin (cargo build --release)" >&2; exit 1; }
mkdir -p "$root"
"$py" $hf_workload --arch qwen2 --new-tokens 1 >/dev/null 2>&1
variants=("${@:-eager moeworker}")
echo "| variant | round | rc | bare (s) | first run (s) | first / bare | nsys pass (s) | capture start (s) | ncu pass (s) |"
echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
for r in $(seq 1 "$rounds"); do
  for v in ${variants[*]}; do
    args=$(argv_of "$v") || exit 2
    id="$v-$r-$(date -u +%H%M%S)"
    t0=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || { echo "bench: bare $v failed" >&2; continue; }
    t1=$(now)
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$root/cache-$id" \
      --nvtx-capture "$(capture_of "$v")" ${STAGE2_EXTRA:-} -- "$py" $args >"$root/$id.log" 2>&1
    rc=$?
    t2=$(now)
    "$py" - "$v" "$r" "$rc" "$t0" "$t1" "$t2" "$root/$id/status.json" <<'PY'
import json, sys
v, r, rc, t0, t1, t2, st = sys.argv[1:]
t0, t1, t2 = map(float, (t0, t1, t2))
try:
    p = json.load(open(st))["passes"]
except (OSError, ValueError, KeyError):
    p = {}
n, c = p.get("nsys", {}), p.get("ncu", {})
tm = (n.get("nsys") or {}).get("timing") or {}
f = lambda x: "-" if x is None else f"{x:.1f}"
print(f"| {v} | {r} | {rc} | {t1 - t0:.1f} | {t2 - t1:.1f} | {(t2 - t1) / (t1 - t0):.2f}x | "
      f"{f(n.get('duration_s'))} | {f(tm.get('capture_start_s'))} | {f(c.get('duration_s'))} |", flush=True)
PY
  done
done | tee "$root/rows.md"
"$py" - "$root/rows.md" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    if len(c) > 5 and c[5].endswith("x"):
        by.setdefault(c[0], []).append(float(c[5][:-1]))
for v, xs in by.items():
    print(f"{v}: median first / bare {statistics.median(xs):.2f}x over {len(xs)} rounds ({', '.join(f'{x:.2f}x' for x in xs)})")
PY
