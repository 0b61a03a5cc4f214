"""The bounded filter cache: its logic with fake filters, then with OIDN's CPU device (frame slots, bound)."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.denoise import Denoiser
from optixasync.denoise._cache import FilterCache


class FakeFilters:
    """Records what the cache asks for; values are lists of the args they were bound to."""

    def __init__(self, fail_create: bool = False, fail_rebind: bool = False) -> None:
        self.log: list[tuple[str, object]] = []
        self.fail_create = fail_create
        self.fail_rebind = fail_rebind
        self.live: list[list[object]] = []

    def create(self, args: object) -> list[object]:
        if self.fail_create:
            raise RuntimeError("create failed")
        value = [args]
        self.live.append(value)
        self.log.append(("create", args))
        return value

    def rebind(self, value: list[object], args: object) -> None:
        if self.fail_rebind:
            raise RuntimeError("rebind failed")
        value.append(args)
        self.log.append(("rebind", args))

    def release(self, value: list[object]) -> None:
        self.live.remove(value)
        self.log.append(("release", value[-1]))

    def cache(self, capacity: int) -> FilterCache:
        return FilterCache(capacity, self.create, self.rebind, self.release)


def test_hits_do_not_create() -> None:
    fake = FakeFilters()
    cache = fake.cache(3)
    first = cache.get("a", "A")
    assert cache.get("a", "A") is first
    assert cache.stats.hits == 1 and cache.stats.created == 1 and fake.log == [("create", "A")]


def test_n_slots_n_buffer_sets_each_reuse_their_own() -> None:
    fake = FakeFilters()
    cache = fake.cache(3)
    values = {key: cache.get(key, key.upper()) for key in "abc"}
    for _frame in range(30):
        for key in "abc":
            assert cache.get(key, key.upper()) is values[key]
    assert cache.stats.created == 3 and cache.stats.rebound == 0 and cache.stats.hits == 90
    assert len(cache) == 3


def test_bound_holds_and_least_recently_used_is_taken_over() -> None:
    fake = FakeFilters()
    cache = fake.cache(2)
    a = cache.get("a", "A")
    cache.get("b", "B")
    cache.get("a", "A")  # b is now the least recently used
    c = cache.get("c", "C")
    assert len(cache) == 2 and list(cache.keys()) == ["a", "c"]
    assert c is not a and c == ["B", "C"]  # b's filters, re-bound to C
    assert cache.stats.created == 2 and cache.stats.rebound == 1
    assert len(fake.live) == 2  # nothing was released: queued work may still use b's filters
    for key in "defgh":
        cache.get(key, key.upper())
        assert len(cache) <= 2
    assert len(fake.live) == 2 and cache.stats.created == 2


def test_failed_create_leaves_no_entry() -> None:
    fake = FakeFilters(fail_create=True)
    cache = fake.cache(2)
    with pytest.raises(RuntimeError, match="create failed"):
        cache.get("a", "A")
    assert len(cache) == 0 and "a" not in cache and cache.stats.created == 0


def test_failed_rebind_parks_the_entry_until_clear() -> None:
    fake = FakeFilters()
    cache = fake.cache(1)
    cache.get("a", "A")
    fake.fail_rebind = True
    with pytest.raises(RuntimeError, match="rebind failed"):
        cache.get("b", "B")
    # out of the cache, but not released: work queued before the failure may still use its filters
    assert len(cache) == 0 and len(fake.live) == 1 and cache.stats.released == 0
    fake.fail_rebind = False
    cache.get("b", "B")
    assert cache.stats.created == 2 and len(fake.live) == 2
    cache.clear()  # the caller's fence has passed: the parked entry goes too
    assert fake.live == [] and cache.stats.released == 2


def test_clear_releases_everything() -> None:
    fake = FakeFilters()
    cache = fake.cache(4)
    for key in "abc":
        cache.get(key, key)
    cache.clear()
    assert len(cache) == 0 and fake.live == [] and cache.stats.released == 3


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        FilterCache(0, lambda a: a, lambda v, a: None, lambda v: None)


# ---------------------------------------------------------------- with OIDN's CPU device


def _reference(scene, width: int, height: int) -> np.ndarray:
    out = np.zeros_like(scene.noisy)
    with Denoiser(width, height, {"albedo": True, "normal": True, "clean_aux": True}, device="cpu") as den:
        den.denoise(scene.noisy, out, scene.albedo, scene.normal)
    return out


def test_frame_slots_commit_once_per_buffer_set(oidn_cpu, scene_factory) -> None:
    h, w, slots = 64, 96, 3
    scenes = [scene_factory(h, w, seed=s) for s in range(slots)]
    references = [_reference(s, w, h) for s in scenes]
    buffers = [(s.noisy.copy(), np.zeros_like(s.noisy), s.albedo.copy(), s.normal.copy()) for s in scenes]
    options = {"albedo": True, "normal": True, "clean_aux": True, "max_filters": slots}
    with Denoiser(w, h, options, device="cpu") as den:
        for color, output, albedo, normal in buffers:
            den.prepare(color, output, albedo, normal)
        assert den.stats.commits == slots and den.stats.filter_sets_created == slots
        for frame in range(2 * slots):
            color, output, albedo, normal = buffers[frame % slots]
            output[...] = 0.0
            den.denoise(color, output, albedo, normal)
            np.testing.assert_allclose(output, references[frame % slots], rtol=1e-4, atol=1e-4)
        stats = den.stats
    assert stats.commits == slots, "a steady-state frame must not commit"
    assert stats.filter_sets_created == slots and stats.filter_sets_rebound == 0
    assert stats.frames == 2 * slots and stats.cache_hits == 2 * slots  # prepare created them; every frame hits


def test_cache_bound_holds_and_rebound_filters_are_correct(oidn_cpu, scene_factory) -> None:
    h, w = 48, 64
    scenes = [scene_factory(h, w, seed=s) for s in range(5)]
    references = [_reference(s, w, h) for s in scenes]
    options = {"albedo": True, "normal": True, "clean_aux": True, "max_filters": 2}
    with Denoiser(w, h, options, device="cpu") as den:
        for round_ in range(2):
            for scene, reference in zip(scenes, references, strict=True):
                out = np.zeros_like(scene.noisy)
                den.denoise(scene.noisy.copy(), out, scene.albedo.copy(), scene.normal.copy())
                np.testing.assert_allclose(out, reference, rtol=1e-4, atol=1e-4, err_msg=f"round {round_}")
                assert den.stats.cached <= 2
        stats = den.stats
    assert stats.filter_sets_created == 2
    assert stats.filter_sets_rebound == 2 * len(scenes) - 2
