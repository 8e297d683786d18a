#!/usr/bin/env bash
# What stage2's Python hook costs the workload, without any profiler: the transformers
# generate() workload (eager, 64 new tokens, best of 3 measured generate() calls) with no NVTX,
# with its own hand-written phase marks, with the hook's automatic phases, and with the hook's
# Python sampling at 200 and 1000 Hz. Prints one table; every row is run side by side here.
#
#   scripts/hook-overhead.sh        (env: PYTHON=python3, ARGS=extra workload arguments)
set -uo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
hook=$(mktemp -d)
trap 'rm -rf "$hook"' EXIT
cp src/passes/hook/sitecustomize.py "$hook/"
w=(examples/workloads/hf_generate.py --arch qwen2 --new-tokens 64 --repeat 3 ${ARGS:-})
run() { # name, env..., -- extra args
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local line
  line=$(env "${envs[@]}" "$py" "${w[@]}" "$@" 2>"$hook/$name.err" | grep '^hf_generate') || {
    echo "| $name | failed: $(tail -1 "$hook/$name.err") | | |"; return; }
  local ms tps
  ms=$(sed -E 's/.*generate ([0-9.]+) ms.*/\1/' <<<"$line")
  tps=$(sed -E 's/.*\(([0-9]+) tokens\/s\).*/\1/' <<<"$line")
  awk -v n="$name" -v ms="$ms" -v t="$tps" -v b="${base:-$ms}" \
    'BEGIN { printf "| %s | %.1f | %.3f | %s | %+.1f%% |\n", n, ms, ms / 64, t, 100 * (ms - b) / b }'
  [ -n "${base:-}" ] || base=$ms
}
echo "| setting | generate (ms) | per new token (ms) | tokens/s | vs no NVTX |"
echo "|---|--:|--:|--:|--:|"
base=
run no-nvtx PYTHONPATH= -- --no-nvtx
run hand-marks PYTHONPATH= --
run auto-nvtx PYTHONPATH="$hook" STAGE2_AUTO_NVTX=1 -- --no-nvtx
run sampling-200hz PYTHONPATH="$hook" STAGE2_PY_SAMPLE_HZ=200 STAGE2_PY_SAMPLE_DIR="$hook" -- --no-nvtx
run sampling-1000hz PYTHONPATH="$hook" STAGE2_PY_SAMPLE_HZ=1000 STAGE2_PY_SAMPLE_DIR="$hook" -- --no-nvtx
run auto+200hz PYTHONPATH="$hook" STAGE2_AUTO_NVTX=1 STAGE2_PY_SAMPLE_HZ=200 STAGE2_PY_SAMPLE_DIR="$hook" -- --no-nvtx
