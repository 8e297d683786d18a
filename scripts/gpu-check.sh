#!/usr/bin/env bash
# A quick check of a build on the GPU machine: a workload that fails before its range opens
# (exit 4, its own error named, no second run), and the README's lead command on a real
# transformers workload (nsys on prefill, ncu on decode), whose findings are printed.
#
#   source .gpu/nsight-env.sh && scripts/gpu-check.sh OUT
set -uo pipefail
out=${1:?usage: scripts/gpu-check.sh OUT}
stage2=./target/release/stage2
crash='import torch; torch.ones(4, device="cuda"); print("loading weights from /models/x", flush=True); raise RuntimeError("checkpoint /models/x not found")'
$stage2 profile --run-id crash --nvtx-capture decode ncu.clock_control=none -- python3 -c "$crash" \
  >"$out/crash.stdout" 2>"$out/crash.stderr"
echo "crash exit $?"
cat "$out/crash.stderr"
t0=$(date +%s.%N)
$stage2 profile --json --run-id lead --nvtx-capture prefill ncu.clock_control=none -- \
  python3 examples/workloads/hf_generate.py --arch qwen2 >"$out/lead.json" 2>"$out/lead.stderr"
echo "lead exit $? in $(echo "$(date +%s.%N) - $t0" | bc) s"
tail -n 8 "$out/lead.stderr"
python3 - "$out/lead.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(r["state"], r["exit_code"], r["reports"])
for f in r["findings"]:
    if f.get("abstain"):
        continue
    print(f["kind"], f["scope"].get("range"), [e["quantity"] + "=" + e["text"] for e in f["evidence"]][:4])
PY
cp tmp/stage2/lead/stakeholder_summary.md "$out/lead_stakeholder_summary.md"
cp tmp/stage2/lead/summary.json "$out/lead_summary.json"
