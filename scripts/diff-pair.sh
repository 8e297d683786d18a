#!/usr/bin/env bash
# Make the CI-gate example pairs on the GPU machine and print one table: a baseline, a second
# run of the same workload, and a run with extra work in every decode step, each with
# `stage2 profile --repeat N`; then `stage2 diff` of baseline against each, per scope.
#
#   scripts/diff-pair.sh            (env: STAGE2_BIN, RUN_ROOT=tmp/diff, REPEAT=3,
#                                    EXTRA_WORK=8, STAGE2_EXTRA: extra overrides for profile)
set -uo pipefail
cd "$(dirname "$0")/.."
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/diff}
py=${PYTHON:-python3}
w="examples/workloads/hf_generate.py --arch qwen2 --layers 2 --new-tokens 8"
profile() { # ID EXTRA_WORKLOAD_ARGS...
  local id=$1; shift
  # shellcheck disable=SC2086
  "$bin" profile --run-root "$root" --run-id "$id" --nvtx-capture decode --repeat "${REPEAT:-3}" \
    ${STAGE2_EXTRA:-} -- "$py" $w "$@"
  echo "== profile $id: rc $?"
}
profile base
profile same
profile slow --extra-work "${EXTRA_WORK:-8}"
echo
echo "| A | B | scope | exit | stage2's line |"
echo "|---|---|---|--:|---|"
for b in same slow; do
  for scope in total kernels ranges; do
    out=$("$bin" diff "$root/base" "$root/$b" --scope "$scope" --fail-above 5 \
      --out "$root/diff-base-$b.md" 2>&1 >/dev/null)
    rc=$?
    "$bin" diff "$root/base" "$root/$b" --json --out "$root/diff-base-$b.json" >/dev/null 2>&1
    line=$(printf '%s\n' "$out" | grep -E "regression|inconclusive|stage2 diff:" | tail -1)
    echo "| base | $b | $scope | $rc | ${line//|/\\|} |"
  done
done
