#!/usr/bin/env bash
# Fixture-making (not a test): the loops people run now, under `stage2 profile` (nsys only), with
# the final binary, their reports brought back to be read sentence by sentence: a torch.compile
# (reduce-overhead) decode loop, speculative decoding, a step loop that records its CUDA graphs in
# its first step (and one that records them again every 5 steps), and a top-p sampling loop whose
# sort emits CUB's own NVTX ranges. The last three without GPU metrics, so their exports stay
# small enough to keep. Everything kept is packed into one archive, OUT_DIR/read-through.tar.gz.
#
#   scripts/read-through.sh        env: OUT_DIR (default tmp/read-through), STAGE2_EXTRA, PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck disable=SC1091
[ -f .gpu/nsight-env.sh ] && source .gpu/nsight-env.sh >/dev/null 2>&1
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
bin=${STAGE2_BIN:-target/release/stage2}
py=${PYTHON:-python3}
root=/tmp/read-through
out=${OUT_DIR:-tmp/read-through}
mkdir -p "$root" "$out"
run() {
  local id=$1 range=$2 more=$3; shift 3
  # ONLY="a b": just those runs.
  [ -n "${ONLY:-}" ] && [[ " $ONLY " != *" $id "* ]] && return 0
  rm -rf "${root:?}/$id"
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --nvtx-capture "$range" ${STAGE2_EXTRA:-} $more \
    -- "$py" "$@" >"$root/$id.log" 2>&1 || echo "read-through: $id failed (see $root/$id.log)"
  mkdir -p "$out/$id/nsys"
  cp "$root/$id"/{kernels.md,stakeholder_summary.md,summary.json,status.json,config.yaml,env.json,inputs.yaml,kernels.csv} "$out/$id/" 2>/dev/null
  cp "$root/$id"/nsys/{cmd.txt,summary_*.csv} "$out/$id/nsys/" 2>/dev/null
  local sz
  sz=$(stat -c %s "$root/$id/nsys/run.sqlite" 2>/dev/null || echo 0)
  [ "$sz" -lt 3000000 ] && cp "$root/$id/nsys/run.sqlite" "$out/$id/nsys/"
  echo "$id: export $sz bytes; $(grep -c . "$root/$id/kernels.md") lines of kernels.md"
}
# shellcheck disable=SC2046
run compile decode "--quick" $(argv_of compile)
# shellcheck disable=SC2046
run spec decode "--quick --auto-nvtx" $(argv_of spec) --no-nvtx
run graphrec step "--no-ncu --no-gpu-metrics" examples/workloads/graph_loop.py --record-in-step --steps 20 --hidden 1024 --layers 4
run topp step "--no-ncu --no-gpu-metrics" examples/workloads/topp_loop.py
run rerecord step "--no-ncu --no-gpu-metrics" examples/workloads/graph_loop.py --record-in-step --rerecord-every 5 --steps 20 --hidden 1024 --layers 4
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")" && echo "packed: $out.tar.gz"
