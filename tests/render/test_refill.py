"""Parameter blocks written again (:mod:`optixasync.render._refill`): a refill of the same inputs writes the sample
counts only, bit for bit what a full fill writes; any other change, or a foreign write into the block, fills it
whole."""

from __future__ import annotations

import weakref

import numpy as np

from optixasync.render import RenderOptions
from optixasync.render._layout import PATH_PARAMS, SCENE_RECORD
from optixasync.render._params import fill_params
from optixasync.render._refill import ParamsRefill
from optixasync.scene import Camera

OPTIONS = RenderOptions(width=64, height=32)
BASIS = Camera((0, 0, 3), (0, 0, 0)).basis(64, 32)


def full(sample_offset: int, spp: int, accumulate: bool) -> bytes:
    params = np.zeros((1,), PATH_PARAMS).reshape(())
    fill_params(params, options=OPTIONS, camera=None, basis=BASIS, accum=0x1000, scene=np.zeros((), SCENE_RECORD),
                sample_offset=sample_offset, spp=spp, image=0x2000, accumulate=accumulate)
    return params.tobytes()


def block(sample_offset: int = 0, spp: int = 1, accumulate: bool = False) -> np.ndarray:
    params = np.zeros((1,), PATH_PARAMS).reshape(())
    params[...] = np.frombuffer(full(sample_offset, spp, accumulate), PATH_PARAMS)[0]
    return params


def test_a_refill_of_the_same_inputs_writes_what_a_full_fill_writes():
    refill, params, static = ParamsRefill(PATH_PARAMS), block(), (OPTIONS, BASIS)
    refill.remember(params, static, b"scene")
    for offset, spp, accumulate in ((1, 1, True), (2, 3, True), (0, 7, False), (4_000_000_000, 5, True)):
        assert refill.counts_only(params, static, b"scene", offset, spp, accumulate)
        assert params.tobytes() == full(offset, spp, accumulate)


def test_other_inputs_or_a_foreign_write_fill_the_block_whole():
    refill, params, static = ParamsRefill(PATH_PARAMS), block(), (OPTIONS, BASIS)
    refill.remember(params, static, b"scene")
    assert not refill.counts_only(params, (OPTIONS, Camera((1, 0, 3), (0, 0, 0)).basis(64, 32)), b"scene", 1, 1, True)
    assert not refill.counts_only(params, static, b"another handle", 1, 1, True)
    assert not refill.counts_only(block(), static, b"scene", 1, 1, True)  # another block
    params["seed"] = 7  # written by someone else since
    assert not refill.counts_only(params, static, b"scene", 1, 1, True)
    assert int(params["sample_offset"]) == 0  # nothing was written


class Buffer:
    """Stands for a device buffer among a block's inputs (the accumulation, a frame slot's output)."""


def test_a_remembered_block_keeps_none_of_its_buffers_alive_and_is_forgotten_with_them():
    refill, params = ParamsRefill(PATH_PARAMS), block()
    accum, image = Buffer(), Buffer()
    refill.remember(params, (OPTIONS, BASIS, accum, None, image), b"scene")
    assert refill.counts_only(params, (OPTIONS, BASIS, accum, None, image), b"scene", 1, 1, True)
    gone = weakref.ref(image)
    del image  # its owner let it go (a closed scheduler's slot): the remembered block does not keep it
    assert gone() is None
    assert refill._blocks == {}  # forgotten with it: a new object at the same address is never taken for it
    assert not refill.counts_only(params, (OPTIONS, BASIS, accum, None, Buffer()), b"scene", 2, 1, True)
    static = (OPTIONS, BASIS, accum, None, Buffer())
    refill.remember(params, static, b"scene")
    assert refill.counts_only(params, static, b"scene", 3, 1, True)
    refill.clear()
    assert refill._blocks == {}
