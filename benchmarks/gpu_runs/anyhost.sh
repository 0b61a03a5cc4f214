#!/usr/bin/env bash
# The GPU side of the CPU device's checks, in one command (run from the repository root on a GPU machine):
#
#   bash benchmarks/gpu_runs/anyhost.sh            # outputs under $OUT (default ./gpu_out)
#
# 1. the GPU tests of the CPU device (tests/render/test_cpu_device_gpu.py: its image against the GPU's on the
#    Cornell box and the material scene) and of the commands it touches (render --device cpu beside the GPU's);
# 2. benchmarks/bench_devices.py: Msamples/s of the CPU device and of the GPU, Cornell box and material scene,
#    256x256 at 8 spp (the CPU's numbers of this machine beside the GPU's), then 1024x1024 at 64 spp on the GPU;
# 3. the doc-claims records: docs/checked.json updated from the tests' JUnit report with the GPU's name.
# Extra packages (mitsuba) must be installed; RUN_PREFIX, when set, is a command prefix put before each step.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=${OUT:-$here/gpu_out}
mkdir -p "$out"
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export OPTIXASYNC_COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
wrap=()
[ -n "${RUN_PREFIX:-}" ] && read -r -a wrap <<<"$RUN_PREFIX"
status=0
step() {  # name, command...
  local name=$1
  shift
  echo "== $name: $*"
  "${wrap[@]}" "$@" 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc"
  [ "$rc" -eq 0 ] || status=1
}
step tests python -m pytest -q -p no:cacheprovider -rfEs --junitxml="$out/tests.xml" \
  tests/render/test_cpu_device_gpu.py tests/render/test_cpu_pipeline.py tests/render/test_cli_cpu.py \
  tests/viewer/test_viewer_cpu_device.py tests/render/test_pathtracer_gpu.py tests/test_docs_checked.py
step devices python benchmarks/bench_devices.py --json "$out/devices.json"
step devices_large python benchmarks/bench_devices.py --devices gpu --size 1024 --spp 64 --json "$out/devices_large.json"
step checked python docs/checked.py --junit "$out/tests.xml" --where gpu --out "$out/checked.json"
echo "######## tables"
grep -h "^|" "$out/devices.log" "$out/devices_large.log" 2>/dev/null
exit $status
