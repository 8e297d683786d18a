#!/usr/bin/env bash
# Probe (not a test): first runs of the bench variants (scripts/hf-workloads.sh) with defaults plus
# run.crosscheck=true and ncu.clock_control=none (the GPU machine asks it), each with a fresh
# metrics cache and no bare run: exit code, time, kernels.md's
# small-grid line, NVIDIA's agreement, the ncu prediction and every pass's state.
#
#   scripts/first-runs-check.sh VARIANT...   (on the GPU machine; STAGE2_BIN, RUN_ROOT)
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
bin=${STAGE2_BIN:-target/release/stage2}; r=${RUN_ROOT:-tmp/vc}; mkdir -p "$r"
python3 $hf_workload --arch qwen2 --new-tokens 1 >/dev/null 2>&1
for v in "$@"; do
  args=$(argv_of $v); cap=$(capture_of $v); t0=$(now)
  $bin profile --run-root $r --run-id $v --cache-dir $r/cache-$v --nvtx-capture $cap run.crosscheck=true ncu.clock_control=none -- python3 $args > $r/$v.log 2>&1
  rc=$?; t1=$(now)
  echo "== $v rc $rc $(secs $t0 $t1) s"
  sed -n 4p $r/$v/kernels.md | cut -c1-200
  python3 - $r/$v <<'PY'
import json,sys
d=sys.argv[1]; s=json.load(open(d+'/summary.json')); st=json.load(open(d+'/status.json'))
f={x['kind']:x for x in s['findings'] if 'abstain' not in x}
def ev(k,q):
    x=f.get(k); 
    return None if not x else next((e['text'] for e in x['evidence'] if e['quantity']==q),None)
g=f.get('nvidia_summaries',{}).get('grids')
print('small_grids', ev('small_grids','small_grid_share_pct'), '| nvidia nsys differ', ev('nvidia_summaries','nvidia_figures_differ'), 'of', ev('nvidia_summaries','nvidia_figures_compared'), '| grids compared', None if not g else g['named_ns']==g['kernel_ns'], '| ncu differ', ev('nvidia_ncu_summary','nvidia_figures_differ'))
a=st['passes'].get('ncu',{}).get('ncu',{}).get('actual',{})
print('ncu', a.get('kernels'), 'kernels', a.get('s'), 's, prediction', a.get('prediction_error_pct'), '| passes', {k:v.get('state') for k,v in st['passes'].items()})
PY
done
