#!/usr/bin/env bash
# Benchmark (not a test): what the baseline pass's range-time hook adds to each NVTX range the
# workload opens and closes, on this machine's CPU (no GPU: torch.cuda.nvtx is a stand-in whose
# calls do nothing, as in tests/cli_baseline.rs). For each setting, one process times N
# push/pop pairs; the hook's own cost is the difference. Prints a Markdown table, median of
# ROUNDS processes each.
#
#   scripts/hook-range-cost.sh [N] [ROUNDS]      (defaults 200000, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
rounds=${2:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/hook" "$tmp/times" "$tmp/wl/torch/cuda"
cp src/passes/workload/hook/sitecustomize.py "$tmp/hook/"
: > "$tmp/wl/torch/__init__.py"; : > "$tmp/wl/torch/cuda/__init__.py"
printf 'def range_push(msg): return 0\ndef range_pop(): return 0\ndef range_start(msg): return 7\ndef range_end(range_id): pass\n' > "$tmp/wl/torch/cuda/nvtx.py"
path="$tmp/hook:$tmp/wl"
bench='import sys, time
import torch.cuda.nvtx as nv
n = int(sys.argv[1])
t0 = time.perf_counter_ns()
for _ in range(n):
    nv.range_push("decode"); nv.range_pop()
print((time.perf_counter_ns() - t0) / n / 1e3)'
one() { PYTHONPATH="$path" "$@" python3 -c "$bench" "$n"; }
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
off=$(for _ in $(seq "$rounds"); do one env; done | median)
on=$(for _ in $(seq "$rounds"); do rm -f "$tmp"/times/*; one env STAGE2_RANGE_TIMES="$tmp/times"; done | median)
lines=$(cat "$tmp"/times/ranges.*.txt | wc -l)
echo "| setting | per push/pop pair (us) | added by the hook (us) |"
echo "|---|--:|--:|"
printf '| no hook (the stand-in calls alone) | %.3f | |\n' "$off"
printf '| STAGE2_RANGE_TIMES (one write(2) per closed range; %s lines written) | %.3f | %.3f |\n' "$lines" "$on" "$(echo "$on - $off" | bc -l)"
