#!/usr/bin/env bash
# Benchmark (not a test): a warm re-run against the bare workload with the start-up's spread
# averaged out. One first `stage2 profile` fills a metrics cache; then N pairs, each the bare
# workload and a warm re-run on that cache, alternated so both see the same machine state.
# Prints each pair and the medians (warm / bare of the medians, and the median of the pairs).
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
echo "| variant | pair | bare (s) | warm (s) | warm / bare |"
echo "|---|--:|--:|--:|--:|"
for variant in "${@:-eager static}"; do
  args=$(argv_of "$variant") || exit 2
  cache="$root/cache-$variant"
  profile() {
    # shellcheck disable=SC2086
    "$bin" profile --run-root "$root" --run-id "$1" --cache-dir "$cache" \
      --nvtx-capture "$(capture_of "$variant")" ${STAGE2_EXTRA:-} -- "$py" $args >"$root/$1.log" 2>&1
  }
  profile "$variant-first" || echo "bench: the first run of $variant failed ($root/$variant-first.log)" >&2
  pairs=()
  for i in $(seq "$n"); do
    t0=$(now)
    # shellcheck disable=SC2086
    "$py" $args >/dev/null 2>&1 || echo "bench: bare $variant failed" >&2
    t1=$(now)
    profile "$variant-warm-$i" || echo "bench: warm $variant failed ($root/$variant-warm-$i.log)" >&2
    t2=$(now)
    pairs+=("$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.1f %.1f", b - a, c - b }')")
    read -r bare warm <<<"${pairs[-1]}"
    echo "| $variant | $i | $bare | $warm | $(awk -v b="$bare" -v w="$warm" 'BEGIN { printf "%.2fx", w / b }') |"
  done
  printf '%s\n' "${pairs[@]}" | "$py" -c '
import statistics, sys
v = sys.argv[1]
p = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
b, w = statistics.median(x[0] for x in p), statistics.median(x[1] for x in p)
r = statistics.median(x[1] / x[0] for x in p)
print(f"| {v} | median | {b:.1f} | {w:.1f} | {w / b:.2f}x (median of pairs {r:.2f}x) |")' "$variant"
done
