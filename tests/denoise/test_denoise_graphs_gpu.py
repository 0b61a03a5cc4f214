"""The Denoise stage in a render pipeline's frame graphs, on the GPU: eager with its reason by default; with
``Denoise(capture=True)`` the frame's OptiX launch is refused inside the capture first (``LAUNCH_NOT_REPLAYABLE``),
so the frames run eagerly with that reason, still equal to eager frames bit for bit.

These tests carry the ``gpu`` marker and skip where OIDN's CUDA device is not available.
"""

from __future__ import annotations

import pytest

from optixasync.denoise import Denoise
from optixasync.denoise._stage import UNCHECKED
from optixasync.program._pipeline import LAUNCH_NOT_REPLAYABLE
from optixasync.render import RenderOptions, RenderPipeline, Tonemap
from optixasync.scene import cornell_box

pytestmark = pytest.mark.gpu

FRAMES = 12


def denoised_frames(ctx, graphs: bool, capture: bool):
    stage = Denoise(capture=capture)
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=64, height=64, max_depth=4),
                        stages=[stage, Tonemap()], graphs=graphs) as p:
        images = []
        for result in p.frames(FRAMES):
            with result:
                images.append(result["image"].copy())
        return images, p.scheduler.stats.graphs.as_dict(), repr(stage)


def test_denoised_frames_run_eagerly_with_their_reason_by_default(ctx, oidn_cuda):
    eager, _, _ = denoised_frames(ctx, False, False)
    graph, counts, stage = denoised_frames(ctx, True, False)
    assert counts["replays"] == counts["captures"] == 0
    assert counts["eager_reasons"] == {f"stage {stage}: {UNCHECKED}": FRAMES}
    for a, b in zip(eager, graph, strict=True):
        assert a.tobytes() == b.tobytes()


def test_denoised_frames_asked_to_capture_replay_or_fall_back_with_the_refusal(ctx, oidn_cuda):
    eager, _, _ = denoised_frames(ctx, False, False)
    graph, counts, _ = denoised_frames(ctx, True, True)
    print(f"\nDenoise(capture=True): {counts}")
    # The frame's OptiX launch comes before the stage: its refusal (LAUNCH_NOT_REPLAYABLE) is the reason given.
    assert counts["replays"] == 0 and counts["eager_reasons"].get(LAUNCH_NOT_REPLAYABLE, 0) >= FRAMES - 4, counts
    for a, b in zip(eager, graph, strict=True):
        assert a.tobytes() == b.tobytes()
