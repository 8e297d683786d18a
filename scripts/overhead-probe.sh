#!/usr/bin/env bash
# Probe (not a test): where a --quick run spends its time beside the workload: each start-up
# probe timed alone, then stage2 profile --quick with every console line timestamped, with and
# without GPU-metrics sampling, on the eager generate() workload.
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
py=python3; w="examples/workloads/hf_generate.py --arch qwen2"
$py $w --new-tokens 1 >/dev/null 2>&1
t=$(date +%s.%N); $py $w >/dev/null 2>&1; echo "bare: $(echo "$(date +%s.%N) - $t" | bc)"
for c in "nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader" "nvidia-smi" "nsys --version" "ncu --version" "git rev-parse HEAD"; do
  t=$(date +%s.%N); $c >/dev/null 2>&1; echo "probe $c: $(echo "$(date +%s.%N) - $t" | bc)"; done
echo "--- quick, timestamped"
target/release/stage2 profile --run-root /tmp/oh --run-id q1 --quick --nvtx-capture decode ncu.clock_control=none -- $py $w 2>&1 | stamp
echo "--- nsys alone, same flags as cmd.txt"
cat /tmp/oh/q1/nsys/cmd.txt | head -5
echo "--- quick without sampling"
target/release/stage2 profile --run-root /tmp/oh --run-id q2 --quick --nvtx-capture decode --no-gpu-metrics ncu.clock_control=none -- $py $w 2>&1 | stamp | tail -8
python3 -c "import json; s=json.load(open('/tmp/oh/q1/status.json')); print({k:(v.get('duration_s'), (v.get('nsys') or {}).get('timing')) for k,v in s['passes'].items()})"
