#!/usr/bin/env bash
# GPU check (not a test): the nvidia pass (run.crosscheck=true) on real captures, what it costs and
# what the reports say of NVIDIA's summaries; then the lead command's first and warm runs on one
# cache. Prints each run's pass state, time and finding; RUN_ROOT (/tmp/cc) keeps the runs.
#   scripts/crosscheck-probe.sh   (on the GPU machine; needs nsys, ncu, target/release/stage2)
source .gpu/nsight-env.sh >/dev/null 2>&1
. scripts/hf-workloads.sh
nvidia-smi -L
root=${RUN_ROOT:-/tmp/cc}; rm -rf $root; mkdir -p $root
for v in eager static moeworker; do
  t0=$(date +%s.%N)
  target/release/stage2 profile --run-root $root --run-id cc-$v --cache-dir $root/cache-$v --nvtx-capture decode ncu.clock_control=none run.crosscheck=true -- python3 $(argv_of $v) > $root/cc-$v.log 2>&1
  echo "$v rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")"
  python3 - $root/cc-$v <<'PY'
import json,sys
d=sys.argv[1]; s=json.load(open(d+'/status.json'))
p=s['passes'].get('nvidia'); print('  nvidia pass:', p and (p['state'], p.get('duration_s'), p.get('reason'), p.get('warnings')))
f=[x for x in json.load(open(d+'/summary.json'))['findings'] if x['kind']=='nvidia_summaries']
for x in f: print('  finding:', x['role'], [ (e['quantity'], e['value']) for e in x['evidence']], x.get('differ'), x.get('self_nested'))
import os; print('  files:', sorted(os.listdir(d+'/nvidia')))
PY
  head -3 $root/cc-$v/nvidia/*_print_summary.csv 2>/dev/null | cut -c1-200
done
# lead: first then warm, same cache
for p in first warm; do
  t0=$(date +%s.%N)
  target/release/stage2 profile --run-root $root --run-id lead-$p --cache-dir $root/cache-lead --nvtx-capture prefill ncu.clock_control=none -- python3 $(argv_of lead) > $root/lead-$p.log 2>&1
  echo "lead $p rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t0, 1))")"; grep -h "ncu plan\|ncu pass: ok\|ncu pass: not" $root/lead-$p.log | cut -c1-200
done
[ -n "${OUT:-}" ] && (cd "$(dirname "$root")" && tar czf "$OUT/cc.tgz" --exclude="*.sqlite" --exclude="*.nsys-rep" --exclude="*.ncu-rep" --exclude="cache-*" "$(basename "$root")")
