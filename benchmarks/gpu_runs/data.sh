#!/usr/bin/env bash
# Batches and datasets on a GPU: the GPU tests of the dataset
# writer, the training source and the views; the RL loop's table (1,024, 4,096 and 16,384 worlds at 64x64, 1,024 at
# 128x128, with and without the completion thread, and a cProfile of the steps), the outputs' cost and the stills;
# the dataset writer (10,000 samples at 256x256 of image, depth, normal and mesh ids: NPY, PNG by imagecodecs, PNG
# by Pillow; then a run killed and resumed, compared byte for byte); the training source into torch.
#
#   OUT=/some/folder bash benchmarks/gpu_runs/data.sh [PART ...]     (PARTS: tests views dataset training cpu)
#
# All the parts take about 11 minutes: in two device calls, "tests views" (about 6) and "dataset training cpu"
# (about 5).
#
# Extra packages (torch, pycocotools, imagecodecs, mitsuba) must be installed; RUN_PREFIX, when set, is a
# command prefix put before each part; every log goes to $OUT/<part>.log and the tables are printed at the end.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"
out=${OUT:?set OUT to the folder of the logs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests views dataset training cpu)

wrap=()  # RUN_PREFIX split into words: timeout runs programs, not shell functions
[ -n "${RUN_PREFIX:-}" ] && read -r -a wrap <<<"$RUN_PREFIX"

run_part() {  # name, timeout in seconds, command...
  local name=$1 limit=$2
  shift 2
  echo "== $name: $*" | tee -a "$out/$name.log"
  local start=$SECONDS
  timeout --signal=INT --kill-after=20 "$limit" "${wrap[@]}" "$@" >>"$out/$name.log" 2>&1
  echo "== $name: exit $? after $((SECONDS - start)) s" | tee -a "$out/$name.log"
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
folder=$(mktemp -d /tmp/optixasync-data.XXXXXX)
for part in "${parts[@]}"; do
  case "$part" in
    tests)
      run_part tests 150 python -m pytest -m gpu -q -p no:cacheprovider -rfEs \
        tests/render/test_training_gpu.py tests/render/test_views_gpu.py --junitxml="$out/tests.xml" ;;
    views)
      run_part views 200 python benchmarks/bench_views.py --parts rl --worlds 1024,4096,16384 \
        --sizes 64 --completion-thread both --steps 150 --warmup 20 --profile 25 --json "$out/views_rl.json"
      run_part views 60 python benchmarks/bench_views.py --parts rl --worlds 1024 --sizes 128 \
        --steps 150 --json "$out/views_rl128.json"
      run_part views 120 python benchmarks/bench_views.py --parts outputs,stills --outputs-detail \
        --json "$out/views_outputs.json" ;;
    dataset)
      run_part dataset 170 python benchmarks/bench_dataset.py --parts gpu,resume --count 10000 \
        --formats npy-only,npy,png-pillow --folder "$folder" --json "$out/dataset.json" ;;
    training)
      run_part training 60 python benchmarks/bench_dataset.py --parts training --batches 200 \
        --training-views 64,256 --json "$out/training.json" ;;
    cpu)
      run_part cpu 60 python benchmarks/bench_dataset.py --cpu --samples 400
      run_part cpu 60 python benchmarks/bench_step.py --worlds 1024,4096 ;;
    *) echo "unknown part $part (tests views dataset training cpu)" ;;
  esac
done
rm -rf "$folder"
for part in "${parts[@]}"; do
  echo
  echo "######## $part"
  grep -E '^(\||#|==|FAILED|ERROR|[0-9]+ (passed|failed))' "$out/$part.log" 2>/dev/null | tail -80
done
