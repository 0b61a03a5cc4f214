"""The page in a real browser: headless Chromium (the system's, driven by Playwright) against the CPU source."""

from __future__ import annotations

import os
import time

import pytest

pytest.importorskip("aiohttp", reason="the viewer server needs aiohttp (pip install 'optixasync[viewer]')")
pytest.importorskip("playwright.sync_api", reason="the browser test needs Playwright for Python (pip install playwright)")

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from optixasync.viewer import CpuFrameSource, Viewer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                reason=f"no system Chromium at {CHROMIUM} (apt-get install chromium)")


def stats(page: Page) -> dict:
    return page.evaluate("window.viewerStats")


def wait_for(predicate, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` from Python (the page's CSP forbids the string evaluation wait_for_function uses)."""
    end = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.03)


def replies(page: Page, command: str) -> list:
    """The page's replies to ``command`` that name a file written, and every refusal."""
    return [r for r in stats(page)["replies"] if (r.get("command") == command and r.get("file"))
            or r["type"] == "ignored"]


def test_the_page_shows_frames_and_sends_input(tmp_path):
    source = CpuFrameSource(96, 64, max_samples=10**9)
    with Viewer(source, port=0, directory=tmp_path) as viewer, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 600})
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(viewer.url)

            # frames arrive and are drawn continuously
            wait_for(lambda: stats(page)["drawn"] >= 5, what="the first frames")
            drawn = stats(page)["drawn"]
            wait_for(lambda: stats(page)["drawn"] >= drawn + 5, what="more frames")
            first = stats(page)
            assert first["connected"] and first["width"] == 96 and first["height"] == 64

            # a drag on the image orbits the camera: the page receives frames with a new camera id
            box = page.locator(".oxa-view").bounding_box()
            x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            eye_before = viewer.state.snapshot().camera.eye
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x + 120, y + 30, steps=6)
            page.mouse.up()
            wait_for(lambda: stats(page)["cameraId"] > first["cameraId"], what="a frame with a new camera id")
            assert viewer.state.snapshot().camera.eye != eye_before
            assert max(stats(page)["cameraIds"]) > first["cameraId"]

            # keys move the camera too
            moved = stats(page)["cameraId"]
            page.locator(".oxa-view").focus()
            page.keyboard.press("w")
            wait_for(lambda: stats(page)["cameraId"] > moved, what="a frame after a key press")
            moved_eye = viewer.state.snapshot().camera.eye

            # the denoise toggle reaches the source, and its frames say so
            page.click(".oxa-denoise")
            wait_for(lambda: source.last_state is not None and source.last_state.settings.denoise, what="denoise on")
            wait_for(lambda: stats(page)["denoise"] is True, what="a denoised frame")

            # the spp control reaches the source
            page.fill(".oxa-spp", "4")
            page.press(".oxa-spp", "Tab")
            wait_for(lambda: source.last_state.settings.spp == 4, what="spp 4 at the source")
            wait_for(lambda: (stats(page)["header"]["stats"] or {}).get("spp") == 4, what="a frame of 4 spp")

            # the save button writes the current image beside the viewer, and the page says which file
            page.click(".oxa-save-png")
            wait_for(lambda: replies(page, "save"), what="the reply to save")
            reply = replies(page, "save")[-1]
            assert reply["type"] == "done", reply
            saved = tmp_path / reply["file"]
            from PIL import Image

            with Image.open(saved) as picture:
                assert picture.size == (96, 64)
            assert reply["file"] in page.inner_text(".oxa-message")

            # record a camera path while dragging, then play it back: the camera ends where the drag ended
            page.click(".oxa-record-path")
            wait_for(lambda: viewer.capture.path_recorder is not None, what="the path recorder")
            page.mouse.move(x, y)
            page.mouse.down()
            page.mouse.move(x - 150, y, steps=8)
            page.mouse.up()
            wait_for(lambda: viewer.state.snapshot().camera.eye != moved_eye, what="the drag to reach the state")
            time.sleep(0.3)
            end_eye = viewer.state.snapshot().camera.eye
            page.click(".oxa-record-path")
            wait_for(lambda: replies(page, "record"), what="the reply to record")
            assert (tmp_path / replies(page, "record")[-1]["file"]).is_file()
            page.click(".oxa-reset")
            wait_for(lambda: viewer.state.snapshot().camera.eye != end_eye, what="the reset")
            page.click(".oxa-play-path")
            wait_for(lambda: viewer.capture.player is not None, what="the player")
            assert viewer.capture.player.wait(10)
            assert viewer.state.snapshot().camera.eye == pytest.approx(end_eye, abs=1e-9)

            shot = tmp_path / "viewer.png"
            page.screenshot(path=str(shot))
            assert shot.stat().st_size > 1000
            assert "source fps" in page.inner_text(".oxa-overlay")
            assert not problems, problems
        finally:
            browser.close()
