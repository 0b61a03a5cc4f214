#!/usr/bin/env bash
# USD stages on a GPU, in one command: the GPU tests of the USD reader, the tutorial "A USD scene" (its GPU
# block renders the tutorial's stage), the load benchmark, and `optixasync render` of the sample stage (a still
# and frames of the time samples), each with its output under $OUT.
#
#   bash benchmarks/gpu_runs/usd.sh
#
# Needs usd-core installed (the usd extra: pip install -e ".[usd]"); Mitsuba 3 is
# optional (its comparison is skipped without it). Prints each part's last lines and a table of the renders.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=${OUT:-$here/gpu_out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

if ! python -c "import pxr" 2>/dev/null; then
  echo "usd.sh: pxr is not importable: install the usd extra (pip install -e ".[usd]")" >&2
  exit 1
fi

part() {  # name, timeout, command...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*"
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$out/$name.log" 2>&1
  local status=$?
  tail -n 15 "$out/$name.log"
  echo "== $name: exit $status after $((SECONDS - start)) s"
}

part tests 600 python -m pytest -m gpu -q -p no:cacheprovider tests/render/test_usd_gpu.py \
  "tests/test_docs_snippets.py" -k "usd" -rs
part load 300 python benchmarks/bench_usd_load.py --repeats 3 --out "$out/usd_load.md"

python - "$out" <<'PY' >"$out/stages.log" 2>&1
import sys
sys.path.insert(0, "tests/render")
from usd_scenes import write_sample_stage, write_slide_stage

write_sample_stage(f"{sys.argv[1]}/sample.usdc")
write_slide_stage(f"{sys.argv[1]}/slide.usda")
PY
part still 300 optixasync render --scene "$out/sample.usdc" --width 960 --height 540 --spp 256 \
  --out "$out/usd_sample.png"
mkdir -p "$out/slide"
part frames 300 optixasync render --scene "$out/slide.usda" --frames 24 --dt 0.0417 --width 256 --height 256 \
  --spp-per-frame 16 --out "$out/slide/usd_slide.png"

echo
echo "| part | result |"
echo "|---|---|"
for name in tests load still frames; do
  echo "| $name | $(grep -E 'passed|failed|Msamples|wrote|GPU time|prims' "$out/$name.log" | tail -n 1) |"
done
cat "$out/usd_load.md" 2>/dev/null
