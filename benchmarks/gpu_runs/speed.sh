#!/usr/bin/env bash
# One GPU call for the speed-by-commit run: the table of trees by scenes (Mitsuba 3 beside, af8dcb6 and the
# working tree twice), the Nsight Compute profile of af8dcb6 against the working tree (generic and specialized),
# the path tracer's GPU tests and the Mitsuba parity tests, generic and then with OPTIXASYNC_SPECIALIZE=1.
#
#   bash benchmarks/gpu_runs/speed.sh      (the trees under .trees/, from
#                                                                  `git archive` of af8dcb6, 195a6c2, b0a8186)
# Writes its tables and logs under $OUT (default bench_out/speed).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench_out/speed}
mkdir -p "$OUT"
status=0
# step NAME COMMAND...: its output in $OUT/NAME.txt, the tail printed, a failure remembered in the exit status.
step() {
    local name=$1; shift
    echo "== $name: $*"
    "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    tail -n 40 "$OUT/$name.txt"
    [ "$rc" -eq 0 ] || { echo "== $name failed (exit $rc)"; status=1; }
}
trees=(--tree af8dcb6=.trees/af8dcb6 --tree 195a6c2=.trees/195a6c2 --tree b0a8186=.trees/b0a8186)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
step commits python benchmarks/bench_commits.py "${trees[@]}" --specialize --mitsuba --repeat 2 --again af8dcb6 \
    --again work --again work+spec --out "$OUT/commits.json"
# The register budget of the path tracer's module, swept on the working tree (generic and specialized).
for regs in 56 64 72 96; do
    step "registers_$regs" env OPTIXASYNC_MAX_REGISTERS=$regs python benchmarks/bench_commits.py --specialize \
        --scene cornell64 --scene material64 --runs 3 --out "$OUT/registers_$regs.json"
done
step profile python benchmarks/profile_pathtracer.py --tree af8dcb6=.trees/af8dcb6 --specialize --out "$OUT/profile"
step pytest_render python -m pytest -m gpu tests/render -q -p no:cacheprovider
step pytest_render_specialized env OPTIXASYNC_SPECIALIZE=1 python -m pytest -m gpu tests/render -q -p no:cacheprovider
exit $status
