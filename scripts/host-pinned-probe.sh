#!/usr/bin/env bash
# Probe (not a test): how much pinned host memory PyTorch's host allocator holds in each bench
# variant (torch.cuda.host_memory_stats() at the workload's exit, through a sitecustomize on
# PYTHONPATH), the suspected cause of ncu's replay cost per kernel varying 0.2-1.3 s between
# workloads (scripts/replay-cost-probe.py: 4 GB pinned made a kernel cost 3.2 s against 0.22).
#   scripts/host-pinned-probe.sh VARIANT...
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/hf-workloads.sh
hook=$(mktemp -d)
cat >"$hook/sitecustomize.py" <<'PY'
import atexit, os, sys
def _report():
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    f = getattr(torch.cuda, "host_memory_stats", None)
    s = f() if f else {}
    keys = [k for k in s if "bytes" in k and ("peak" in k or "current" in k)]
    print("PINNED", os.getpid(), {k: s[k] for k in keys} if keys else (list(s)[:20] or "no host_memory_stats"),
          "device reserved", torch.cuda.memory_reserved(), file=sys.stderr, flush=True)
atexit.register(_report)
PY
for v in "$@"; do
  if [ "$v" = synthetic-pinned ]; then args="/tmp/synth.py 0 1 pinned"; else args=$(argv_of "$v"); fi
  echo "== $v"
  # shellcheck disable=SC2086
  PYTHONPATH="$hook" python3 $args 2>&1 | grep PINNED
done
