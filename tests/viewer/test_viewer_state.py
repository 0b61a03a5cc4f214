"""Viewer state and input messages: versions, clamping, and malformed input refused without side effects."""

from __future__ import annotations

import json
import threading

import pytest

from optixasync.viewer import LIMITS, Settings, ViewerState
from optixasync.viewer._messages import BadMessage, apply_message, parse_message


def test_every_change_bumps_the_version_and_snapshots_are_immutable():
    state = ViewerState()
    first = state.snapshot()
    assert first.version == first.camera_id == 1
    state.move_camera("orbit", 0.1, 0.0)
    state.update_settings(denoise=True)
    now = state.snapshot()
    assert now.version == 3
    assert first.settings.denoise is False and now.settings.denoise is True
    assert first.camera != now.camera


def test_settings_are_clamped():
    state = ViewerState(settings=Settings(width=640, height=360))
    s = state.update_settings(spp=10**9, max_depth=0, width=1, height=10**6).settings
    assert s.spp == LIMITS["spp"][1]
    assert s.max_depth == LIMITS["max_depth"][0]
    assert s.width >= LIMITS["width"][0] and s.height <= LIMITS["height"][1]
    assert s.width * s.height <= LIMITS["pixels"][1]
    s = state.update_settings(width=8000, height=8000).settings
    assert s.width * s.height <= LIMITS["pixels"][1] and s.width == s.height
    assert state.update_settings(spp=3.6).settings.spp == 4


def test_starting_settings_are_clamped_field_by_field():
    import numpy as np

    s = ViewerState(settings=Settings(width=1, height=100000, spp=100000, max_depth=np.int64(3))).snapshot().settings
    assert s.width == LIMITS["width"][0] and s.height <= LIMITS["height"][1] and s.spp == LIMITS["spp"][1]
    assert s.max_depth == 3 and type(s.max_depth) is int


@pytest.mark.parametrize("changes", [{"spp": float("nan")}, {"spp": "4"}, {"denoise": 1}, {"colour": 1}, {"spp": True}])
def test_bad_settings_change_nothing(changes):
    state = ViewerState()
    before = state.snapshot()
    with pytest.raises((KeyError, TypeError, ValueError)):
        state.update_settings(**changes)
    assert state.snapshot() == before


def test_wait_for_change_wakes_on_a_change():
    state = ViewerState()
    version = state.version
    threading.Timer(0.05, state.update_settings, kwargs={"spp": 2}).start()
    view = state.wait_for_change(version, timeout=30.0)
    assert view.version == version + 1  # woken by the change (a timeout returns the unchanged version)
    assert state.wait_for_change(view.version, timeout=0.01).version == view.version


@pytest.mark.parametrize("text", [
    "not json{", "[]", "null", "42", '"orbit"', "{}",
    '{"type": "orbit", "dx": NaN, "dy": 0}',
    '{"type": "orbit", "dx": Infinity, "dy": 0}',
    '{"type": "zoom", "steps": 1e999}',
    '{"type": "orbit", "dx": "1", "dy": 0}',
    '{"type": "orbit", "dx": true, "dy": 0}',
    '{"type": "orbit", "dx": 1}',
    '{"type": "orbit", "dx": 1, "dy": 0, "extra": 1}',
    '{"type": "settings"}',
    '{"type": "settings", "spp": null}',
    '{"type": "settings", "denoise": "yes"}',
    '{"type": "settings", "spp": ' + "9" * 400 + "}",
    '{"type": "key", "key": "F13"}',
    '{"type": "key", "key": 5}',
    '{"type": "camera", "eye": [0, 0], "target": [0, 0, 0]}',
    '{"type": "ack", "seq": -1}',
    '{"type": "ack", "seq": 1.5}',
    '{"type": "launch_missiles"}',
    '{"type": "orbit", "dx": 0, "dy": 0, "id": "x"}',
    "[" * 3000 + "]" * 3000,
    json.dumps({"type": "orbit", "dx": 0, "dy": 0, "pad": "x" * 5000}),
])
def test_malformed_messages_raise_bad_message(text):
    with pytest.raises(BadMessage):
        parse_message(text)


def test_deltas_are_clamped_and_ids_kept():
    message = parse_message('{"type": "orbit", "dx": 1e300, "dy": -5, "id": 7}')
    assert message.fields == {"dx": 10.0, "dy": -5.0} and message.id == 7
    assert parse_message('{"type": "key", "key": "ArrowLeft"}').fields == {"key": "arrowleft"}


def test_apply_message_changes_the_state():
    state = ViewerState()
    view = apply_message(state, parse_message('{"type": "settings", "spp": 4, "denoise": true}'))
    assert view.settings.spp == 4 and view.settings.denoise
    view = apply_message(state, parse_message('{"type": "camera", "eye": [0, 0, 3], "target": [0, 0, 0], "fov": 500}'))
    assert view.camera.eye == pytest.approx((0.0, 0.0, 3.0)) and view.camera.fov == 120.0
    before = state.snapshot()
    with pytest.raises(BadMessage):  # eye == target: refused by the camera
        apply_message(state, parse_message('{"type": "camera", "eye": [1, 1, 1], "target": [1, 1, 1]}'))
    assert state.snapshot() == before
