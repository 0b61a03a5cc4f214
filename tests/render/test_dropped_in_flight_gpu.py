"""On a GPU: a pipeline, its scheduler and its frames dropped with frames in flight, in every order, leave the CUDA
context usable (each order in a process of its own: an illegal address would poison every later CUDA call).

The repro: a ``RenderPipeline``, a ``FrameScheduler(ctx, 3, params_dtype=pipeline.params_dtype)``, 3 frames of
``pipeline.record(frame, spp=64)``, then ``del`` of both (and the frames) without ``close()`` and
``gc.collect()``: on an H100 the next query failed with ``cudaErrorIllegalAddress`` before the frames' sets were
held behind their fences. The CPU test of the same drops is ``test_dropped_in_flight.py``.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
ORDERS = list(itertools.permutations(("pipeline", "scheduler", "frames")))

CHILD = r"""
import gc, sys
import numpy as np
from optixasync import Context
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import cornell_box
from optixasync.scheduler import FrameScheduler

order, thread = sys.argv[1].split(","), sys.argv[2] == "thread"
ctx = Context()
pipeline = RenderPipeline(ctx, cornell_box(), RenderOptions(width=512, height=512, spp=1))
sched = FrameScheduler(ctx, 3, params_dtype=pipeline.params_dtype, options={"completion_thread": thread})
frames = []
for _ in range(3):
    with sched.frame() as f:
        pipeline.record(f, spp=64)
    frames.append(f)
    frames.append(f.handle)
holders = {"pipeline": [pipeline], "scheduler": [sched], "frames": frames}
del pipeline, sched, frames, f
for name in order:
    holders[name].clear()
    gc.collect()
used = ctx.memory.used_bytes()  # the issue's "next query"
ctx.device.synchronize()
with RenderPipeline(ctx, cornell_box(), RenderOptions(width=32, height=32, spp=4)) as again:
    image = again.render()
assert image.shape == (32, 32, 3) and np.isfinite(image).all() and image.max() > 0, image.max()
ctx.close()
print("ok", used)
"""


@pytest.mark.parametrize("thread", ["thread", "no-thread"])
@pytest.mark.parametrize("order", ORDERS, ids="-then-".join)
def test_a_pipeline_dropped_with_frames_in_flight_leaves_the_context_usable(order, thread):
    done = subprocess.run([sys.executable, "-c", CHILD, ",".join(order), thread], capture_output=True, text=True,
                          timeout=300, cwd=REPO)
    assert done.returncode == 0 and done.stdout.startswith("ok"), (
        f"dropping {' then '.join(order)} ({thread}): status {done.returncode}\n{done.stderr[-3000:]}")
