#!/usr/bin/env bash
# The GPU run of the launch wait (the wait inside optixLaunch, the launch queue that avoids it, graph patterns):
# one command, its tables printed at the end.
#
#   bash benchmarks/gpu_runs/stall.sh [OUTDIR] [PART ...]
#
# OUTDIR defaults to $OUT/stall (or bench_out/stall). PARTs, in this order by default (about 9 minutes on one GPU):
#   wait      bench_launch_wait.py: the raw rows (back-to-back launches: kernel length, launch and parameter size,
#             streams, pipelines, OptiX contexts; first blocked launch = the ring's depth), then the scheduler rows
#             under syncwatch, QUEUE_FRAMES (1000) steady-state frames at 1-4 in flight, busy kernel and path
#             tracer, with optix_queue_limit off and at QUEUE_LIMITS (default "auto": the ring depth the raw rows
#             measured), so before and after come from one call
#   tests     pytest -m gpu tests/scheduler tests/diagnostics tests/cuda, with OPTIXASYNC_TEST_QUEUE_LIMIT set to
#             the limit the wait part suggested (else the tests' own default, 1)
#   patterns  graph_patterns.py: every graph pattern in its own process (captured, nodes, replay = eager bits)
#   submit    bench_submit.py (host cost of the submit path; stubs, no GPU calls)
#   graphs    bench_graphs.py (frame graphs against eager frames)
# Each part logs to OUTDIR/<part>.log with a time limit of its own; the tables are printed at the end.
set -uo pipefail
out=${1:-${OUT:-bench_out}/stall}
[ $# -gt 0 ] && shift
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(wait tests patterns submit graphs)
mkdir -p "$out"
out=$(cd "$out" && pwd)
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
export PYTHONUNBUFFERED=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

run_part() {  # name, time limit in seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*" | tee -a "$out/$name.log"
  local start=$SECONDS
  timeout --signal=INT --kill-after=15 "$limit" "$@" >>"$out/$name.log" 2>&1
  local status=$?
  echo "== $name: exit $status after $((SECONDS - start)) s" | tee -a "$out/$name.log"
}

suggested_limit() {  # the ring depth the wait part measured, or nothing
  python - "$out/launch_wait.json" <<'PY' 2>/dev/null
import json, sys
value = json.load(open(sys.argv[1])).get("suggested_queue_limit")
print(value if value else "")
PY
}

nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | tee "$out/device.txt"
for part in "${parts[@]}"; do
  case "$part" in
    wait)
      run_part wait "${WAIT_TIMEOUT:-330}" python benchmarks/bench_launch_wait.py --watch \
        --frames "${QUEUE_FRAMES:-1000}" --in-flight "${IN_FLIGHT:-1,2,3,4}" --queue-limit "${QUEUE_LIMITS:-auto}" \
        --out "$out/launch_wait.json" ;;
    tests)
      limit=$(suggested_limit)
      OPTIXASYNC_TEST_QUEUE_LIMIT=$limit run_part tests "${TESTS_TIMEOUT:-150}" python -m pytest -m gpu -q \
        -p no:cacheprovider -rfEs tests/scheduler tests/diagnostics tests/cuda --junitxml="$out/tests.xml" ;;
    patterns)
      run_part patterns "${PATTERNS_TIMEOUT:-120}" python benchmarks/graph_patterns.py --out "$out/graph_patterns.json" ;;
    submit)
      run_part submit "${SUBMIT_TIMEOUT:-60}" python benchmarks/bench_submit.py --frames 10000 --warmup 1000 \
        --json "$out/submit.json" ;;
    graphs)
      run_part graphs "${GRAPHS_TIMEOUT:-120}" python benchmarks/bench_graphs.py --frames 500 --cloth-frames 100 \
        --tiny-frames 2000 --json "$out/graphs.json" ;;
    *) echo "unknown part $part (wait, tests, patterns, submit, graphs)" ;;
  esac
done

echo
echo "==================== $(cat "$out/device.txt" 2>/dev/null) ===================="
for part in "${parts[@]}"; do
  log="$out/$part.log"
  [ -f "$log" ] || continue
  echo
  echo "## $part"
  case "$part" in
    wait) sed -n '/^| spin us/,$p' "$log" ;;
    tests) grep -E "passed|failed|error|^FAILED|^ERROR|^SKIPPED" "$log" | tail -40 ;;
    patterns) sed -n '/^| pattern/,$p' "$log"; grep -E "CUDA driver" "$log" ;;
    *) grep -E "^\||^[A-Z].*(fps|target|p50)" "$log" | tail -40 ;;
  esac
  if ! grep -qE "^\|" "$log"; then grep -vE "^== " "$log" | tail -3; fi  # no table: say why
  grep -E "^== $part: exit" "$log" | tail -1
done
