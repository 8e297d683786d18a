#!/usr/bin/env bash
# Benchmark (not a test): a warm re-run and the shallow depth (--quick) against the bare workload,
# with the start-up's spread averaged out. One first `stage2 profile` fills a metrics cache; then
# N rounds, each the bare workload, a warm re-run on that cache and a --quick run on a cache of its
# own (only the machine's answer of which GPUs nsys can sample copied in, as any earlier run on
# the machine leaves it), alternated so all three see the same machine state. Prints each round
# and the medians (of the runs, and of each round's ratio).
#
#   scripts/bench-warm.sh [VARIANT...]      env: REPEATS (3), STAGE2_EXTRA, RUN_ROOT, PYTHON
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/hf-workloads.sh
. scripts/hf-workloads.sh
py=${PYTHON:-python3}
bin=${STAGE2_BIN:-target/release/stage2}
root=${RUN_ROOT:-tmp/bench-warm}
n=${REPEATS:-3}
mkdir -p "$root"
"$py" $hf_workload --arch qwen2 --new-tokens 1 >/dev/null 2>&1
echo "| variant | round | bare (s) | warm (s) | warm / bare | quick (s) | quick / bare |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for variant in "${@:-eager static}"; do
  args=$(argv_of "$variant") || exit 2
  cache="$root/cache-$variant"
  profile() {
    local id=$1 c=$2; shift 2
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$id" --cache-dir "$c" "$@" \
      --nvtx-capture "$(capture_of "$variant")" ${STAGE2_EXTRA:-} -- "$py" $args 2>&1 | stamp >"$root/$id.log"
    [ "${PIPESTATUS[0]}" = 0 ] || echo "bench: $id failed ($root/$id.log)" >&2
  }
  profile "$variant-first" "$cache"
  rounds=()
  for i in $(seq "$n"); do
    qcache="$root/cache-$variant-quick-$i"
    mkdir -p "$qcache" && cp -r "$cache/nsys-devices" "$qcache/" 2>/dev/null
    t0=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || echo "bench: bare $variant failed" >&2
    t1=$(now)
    profile "$variant-warm-$i" "$cache"
    t2=$(now)
    profile "$variant-quick-$i" "$qcache" --quick
    t3=$(now)
    rounds+=("$(awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN { printf "%.1f %.1f %.1f", b - a, c - b, d - c }')")
    read -r bare warm quick <<<"${rounds[-1]}"
    echo "| $variant | $i | $bare | $warm | $(awk -v b="$bare" -v w="$warm" 'BEGIN { printf "%.2fx", w / b }') | $quick | $(awk -v b="$bare" -v q="$quick" 'BEGIN { printf "%.2fx", q / b }') |"
  done
  printf '%s\n' "${rounds[@]}" | "$py" -c '
import statistics, sys
v = sys.argv[1]
p = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
b, w, q = (statistics.median(x[i] for x in p) for i in range(3))
rw = statistics.median(x[1] / x[0] for x in p)
rq = statistics.median(x[2] / x[0] for x in p)
print(f"| {v} | median | {b:.1f} | {w:.1f} | {w / b:.2f}x (rounds {rw:.2f}x) | {q:.1f} | {q / b:.2f}x (rounds {rq:.2f}x) |")' "$variant"
done
