#!/usr/bin/env bash
# One GPU call for the reliability run: frames in flight that outlive their pipeline, motion blur with a partial
# shutter, the GPU tests that had gone stale, the fuzz suite as CI runs it, and compute-sanitizer.
#
#   bash benchmarks/gpu_runs/rel.sh          (ALL_GPU=1: also pytest -m gpu, per folder)
#
# Steps, each with its output in $OUT/<step>.txt (default bench_out/rel) and its last lines printed:
#   dropped       tests/render/test_dropped_in_flight_gpu.py: the pipeline, its scheduler and its frames dropped
#                 with 3 frames of 64 spp in flight, in all 6 orders, with and without the completion thread, each
#                 in its own process (an illegal address on an H100 before the frames' holds)
#   dropped_cpu   the same drops over the stub (CPU), for the record beside it
#   motion        tests/render/test_motion_gpu.py (the partial shutter (0.25, 0.75) covered +0.83% more than the
#                 analytic time average), then benchmarks/probe_motion_shutter.py: per shutter and instant, the GPU's
#                 covered sum, centroid and extent against the analytic ones
#   stale         the three tests that expected 'depth' to be an unknown output, and the whole bad-input matrix
#   fuzz          tests/fuzz (fixed seed and corpus: the answer must be the same as on the CPU machine)
#   sanitizer     compute-sanitizer memcheck --leak-check full of examples/hello_triangle.py and a 64x64 path-tracer
#                 still (allocations held at exit are listed by the leak report)
#   gpu_<folder>  with ALL_GPU=1: pytest -m gpu of each test folder in a process of its own
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench_out/rel}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
status=0
step() {  # NAME COMMAND...: its output in $OUT/NAME.txt, the tail printed, a failure remembered in the exit status
    local name=$1; shift
    echo "== $name: $*"
    local start=$SECONDS
    timeout --signal=INT --kill-after=20 "${STEP_TIMEOUT:-900}" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    tail -n 30 "$OUT/$name.txt"
    echo "== $name: exit $rc after $((SECONDS - start)) s"
    [ "$rc" -eq 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
python -m optixasync doctor >"$OUT/doctor.txt" 2>&1; tail -n 5 "$OUT/doctor.txt"
pytest=(python -m pytest -q -p no:cacheprovider -rs)
step dropped "${pytest[@]}" -m gpu tests/render/test_dropped_in_flight_gpu.py -v
step dropped_cpu "${pytest[@]}" tests/render/test_dropped_in_flight.py -v
step motion "${pytest[@]}" -m gpu tests/render/test_motion_gpu.py -v
step motion_probe python benchmarks/probe_motion_shutter.py --spp 1024
step stale "${pytest[@]}" -m gpu -v \
    "tests/render/test_pathtracer_gpu.py::test_bad_input_is_a_value_error_and_the_context_stays_usable" \
    "tests/test_bad_input_matrix_gpu.py"
step fuzz "${pytest[@]}" tests/fuzz
if command -v compute-sanitizer >/dev/null; then
    step sanitizer_hello compute-sanitizer --tool memcheck --leak-check full python examples/hello_triangle.py
    step sanitizer_still compute-sanitizer --tool memcheck --leak-check full python examples/path_tracer.py \
        --width 64 --height 64 --spp 4 --out "$OUT/sanitizer_still.png"
else
    echo "== sanitizer: compute-sanitizer is not on PATH (it ships with the CUDA toolkit)"; status=1
fi
if [ "${ALL_GPU:-0}" = 1 ]; then
    for folder in tests/*/ tests/test_*gpu.py; do
        name=$(basename "$folder" .py)
        step "gpu_$name" "${pytest[@]}" -m gpu "$folder"
    done
fi
exit $status
