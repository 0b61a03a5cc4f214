#!/usr/bin/env bash
# The checks that need an NVIDIA GPU, in one command: the GPU tests, the benchmarks before and after a change,
# the comparison with Mitsuba 3, the long-run soak and compute-sanitizer's leak report.
#
#   bash benchmarks/gpu_checks.sh OUTDIR PART [PART ...]
#
# PART is one of
#   doctor      optixasync doctor
#   tests       pytest -m gpu (GPU_TEST_ARGS: more pytest arguments, e.g. a file list; GPU_TEST_TIMEOUT seconds)
#   benches     the benchmarks of this tree and of the tree in $BEFORE (a source tree: its optixasync package and
#               kernels), interleaved, each with its table in OUTDIR/benches.log (BENCHES: a subset)
#   mitsuba     benchmarks/compare_mitsuba.py (needs mitsuba importable)
#   views       benchmarks/bench_views.py: the views-and-outputs targets (RL steps into torch, the outputs' cost,
#               small stills with and without lanes, rays per second; torch optional)
#   soak        benchmarks/bench_longrun.py (SOAK_BUSY, SOAK_PT frames; SOAK_SIZE)
#   sanitizer   compute-sanitizer's leak check of examples/hello_triangle.py and a path-tracer still
# Each part's output goes to OUTDIR/<part>.log; the last lines of each are printed at the end.
# Exit status: 0 when every part ran and exited 0; 1 when a part failed (or timed out); 2 on bad arguments (no
# OUTDIR, no PART, an unknown PART: checked before anything runs). -h or --help prints this text.
set -uo pipefail
usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; echo "gpu_checks.sh: error: OUTDIR and at least one PART are needed" >&2; exit 2 ;;
esac
[ $# -ge 2 ] || { echo "gpu_checks.sh: error: no PART after OUTDIR $1 (see --help)" >&2; exit 2; }
for part in "${@:2}"; do
  case "$part" in
    doctor|tests|benches|mitsuba|views|soak|sanitizer) ;;
    *) echo "gpu_checks.sh: error: unknown part '$part' (doctor tests benches mitsuba views soak sanitizer)" >&2
       exit 2 ;;
  esac
done
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
shift
failed=0
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
export PYTHONUNBUFFERED=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

run_part() {  # name, timeout in seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*" | tee -a "$out/$name.log"
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "$@" >>"$out/$name.log" 2>&1
  local status=$?
  echo "== $name: exit $status after $((SECONDS - start)) s" | tee -a "$out/$name.log"
  [ "$status" -eq 0 ] || failed=1
}

bench() {  # tree label, script, arguments...
  local tree=$1 label=$2
  shift 2
  if [ "$tree" = before ]; then
    (cd "$BEFORE" && export PYTHONPATH="$BEFORE:$PYTHONPATH" && run_part benches "${BENCH_TIMEOUT:-300}" python "$@") || true
  else
    run_part benches "${BENCH_TIMEOUT:-300}" python "$@"
  fi
  echo "-- above: $label ($tree)" >>"$out/benches.log"
}

for part in "$@"; do
  case "$part" in
    doctor) run_part doctor 120 python -m optixasync doctor ;;
    tests)
      # shellcheck disable=SC2086
      run_part tests "${GPU_TEST_TIMEOUT:-480}" python -m pytest -m gpu -q -p no:cacheprovider -rfEs \
        --durations=30 --junitxml="$out/tests.xml" ${GPU_TEST_ARGS:-} ;;
    benches)
      : "${BEFORE:?benches needs BEFORE=path of the earlier source tree}"
      for b in ${BENCHES:-pipeline accel pathtracer textures viewer denoise}; do
        case "$b" in
          pipeline) args=(bench_pipeline.py) ;;
          accel) args=(bench_accel.py) ;;
          pathtracer) args=(bench_pathtracer.py --quick) ;;
          textures) args=(bench_textures.py --size 2048 --frames 100) ;;
          viewer) args=(bench_viewer.py --gpu --seconds 3) ;;
          denoise) args=(bench_denoise.py --frames 30 --repeats 3) ;;
          *) echo "unknown benchmark $b" | tee -a "$out/benches.log"; failed=1; continue ;;
        esac
        for tree in before after; do
          root=$([ "$tree" = before ] && echo "$BEFORE" || echo "$here")
          bench "$tree" "$b" "$root/benchmarks/${args[0]}" "${args[@]:1}"
        done
      done ;;
    mitsuba) run_part mitsuba 300 python benchmarks/compare_mitsuba.py --json "$out/mitsuba.json" ;;
    views) run_part views 600 python benchmarks/bench_views.py --json "$out/views.json" ;;
    soak)
      run_part soak 400 python benchmarks/bench_longrun.py --busy-frames "${SOAK_BUSY:-1000000}" \
        --pt-frames "${SOAK_PT:-20000}" --size "${SOAK_SIZE:-1024}" --out "$out/soak.json" ;;
    sanitizer)
      run_part sanitizer 240 compute-sanitizer --tool memcheck --leak-check full python examples/hello_triangle.py
      run_part sanitizer 300 compute-sanitizer --tool memcheck --leak-check full python examples/path_tracer.py \
        --width 64 --height 64 --spp 4 --out "$out/sanitizer_still.png" ;;
  esac
done
for log in "$out"/*.log; do
  [ -e "$log" ] || continue
  echo "######## $(basename "$log")"
  tail -n 40 "$log"
done
exit $failed
