"""The viewer with the GPU path tracer as its source (a render pipeline), driven by the protocol client (no browser
on a GPU host)."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")


@pytest.fixture()
def gpu_viewer(ctx):
    from optixasync.scene import cornell_box
    from optixasync.viewer import PathTracerSource, Viewer

    source = PathTracerSource(cornell_box(), 256, 192, ctx=ctx)
    with Viewer(source, port=0) as viewer:
        yield viewer, source
    source.close()
    assert source.error is None, source.error


def test_path_traced_frames_reach_the_client_and_follow_the_camera(gpu_viewer, run_async):
    from optixasync.viewer import ProtocolClient

    viewer, source = gpu_viewer

    async def scenario():
        async with ProtocolClient(viewer.url) as client:
            frames = [await client.next_frame(60) for _ in range(10)]
            ids = [f.frame_id for f in frames]
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
            image = frames[-1].decode()
            assert image.shape == (192, 256, 3) and 5 < image.mean() < 250  # the lit Cornell box, not black
            reply = await client.orbit(0.2, 0.0)
            moved = await client.wait_for_camera(reply["camera_id"], timeout=30)
            assert moved.camera_id == reply["camera_id"]
            later = [await client.next_frame(30) for _ in range(5)]
            assert all(f.camera_id == reply["camera_id"] for f in later)
            assert later[-1].samples >= later[0].samples  # accumulating again after the restart
            moved_image = later[-1].decode().astype(np.int16)
            assert np.abs(moved_image - image.astype(np.int16)).mean() > 2  # the camera really moved
            for denoise in (False, True):
                reply = await client.settings(denoise=denoise)
                frame = await client.wait_for_camera(reply["camera_id"], timeout=30)
                assert frame.header["stats"]["denoise"] is (denoise and source.denoise_available)
            # another size: a pipeline of its own (the old one closed), frames of the new size
            reply = await client.settings(width=128, height=96)
            resized = await client.wait_for_camera(reply["camera_id"], timeout=60)
            assert resized.decode().shape == (96, 128, 3) and resized.frame_id > frame.frame_id

    run_async(scenario())
    assert source.loops > 15 and source.published > 15
