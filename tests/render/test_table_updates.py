"""Material colours and light strength rewritten in place equal the tables of the varied scene built anew.

The tables are the library's own (``SceneTables``) placed in host memory by the host build's placement; the
updated tables are read back from that memory and compared, record by record, with those of a scene whose
materials and lights were changed before building (addresses excepted: two placements differ in them).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from host_build import HostPlacement

from optixasync.render import check_scene
from optixasync.render._emitters import EMITTER_TRIANGLE
from optixasync.render._environment import ENVIRONMENT_RECORD
from optixasync.render._layout import LIGHT_RECORD, MATERIAL_RECORD
from optixasync.render._table_updates import TableUpdates
from optixasync.render._tables import SceneTables
from optixasync.scene import (
    Camera,
    DirectionalLight,
    Environment,
    Material,
    PointLight,
    Scene,
    SpotLight,
    cube,
    rectangle,
)

#: Record fields that are addresses (or texture handles), which differ between two placements.
ADDRESSES = {"table", "color_texture", "roughness_texture", "emission_texture", "normal_texture", "data"}


def scene_of(colours=((0.5, 0.5, 0.5), (0.8, 0.2, 0.1), (0.3, 0.6, 0.2)), scale=1.0) -> Scene:
    floor = rectangle(np.array([[2, 0, 0, 0], [0, 0, 2, 0], [0, -2, 0, 0]]), Material(colours[0], name="floor"))
    box = cube(np.diag([0.3, 0.3, 0.3, 1.0]), Material(colours[1], bsdf="plastic", alpha=0.2, name="box"))
    lamp = rectangle(np.array([[0.3, 0, 0, 0], [0, 0, 0.3, 1.5], [0, -0.3, 0, 0]]),
                     Material(colours[2], emission=(4.0 * scale, 3.0 * scale, 2.0 * scale), name="lamp"))
    lights = [PointLight((0, 1, 1), (2.0 * scale, 2.0 * scale, 1.0 * scale)),
              SpotLight((1, 1, 0), (-1, -1, 0), (3.0 * scale, 1.0 * scale, 1.0 * scale)),
              DirectionalLight((0, -1, 0.2), (0.5 * scale, 0.5 * scale, 0.6 * scale))]
    scene = Scene([floor, box, lamp], Camera((0, 1, 3), (0, 0, 0)), Environment(radiance=(0.2, 0.3, 0.4),
                                                                                  scale=1.5 * scale), lights)
    return check_scene(scene)


def placed(placement: HostPlacement, address: int, dtype: np.dtype) -> np.ndarray:
    array = next(a for a in placement.keep if a.ctypes.data == address)
    return np.frombuffer(array.tobytes(), dtype)


def assert_records_equal(got: np.ndarray, want: np.ndarray, rtol: float = 0.0, skip=()) -> None:
    for name in got.dtype.names:
        if name in ADDRESSES or name in skip:
            continue
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, err_msg=name)


def tables_of(scene: Scene) -> tuple[SceneTables, HostPlacement]:
    placement = HostPlacement()
    return SceneTables(scene, placement), placement


def test_updated_tables_equal_the_varied_scene_built_anew():
    scene = scene_of()
    tables, placement = tables_of(scene)
    updates = TableUpdates(tables, placement)
    before_lights = placed(placement, tables.lights.pointer, LIGHT_RECORD).copy()
    colours = ((0.1, 0.9, 0.4), (0.7, 0.7, 0.2), (0.3, 0.6, 0.2))
    new = {m: replace(m, reflectance=c) for m, c in zip(tables.materials.materials, colours, strict=True)}
    updates.apply(updates.check(new, light_scale=0.6), stream=None)

    want, want_placement = tables_of(scene_of(colours, scale=0.6))
    assert_records_equal(placed(placement, tables.materials.base, MATERIAL_RECORD),
                         placed(want_placement, want.materials.base, MATERIAL_RECORD))
    # the light records (types, selection probabilities) are those of the scaled scene, and did not change
    lights = placed(placement, tables.lights.pointer, LIGHT_RECORD)
    assert lights.tobytes() == before_lights.tobytes()
    assert_records_equal(lights, placed(want_placement, want.lights.pointer, LIGHT_RECORD), rtol=1e-6)
    kinds = [k.name for k, _s, _p in tables.lights.sources]
    assert kinds == [k.name for k, _s, _p in want.lights.sources] and len(kinds) == 5
    for name, address, want_address in zip(kinds, tables.lights.addresses, want.lights.addresses, strict=True):
        if name == "triangles":
            got_e = placed(placement, address, EMITTER_TRIANGLE)
            want_e = placed(want_placement, want_address, EMITTER_TRIANGLE)
            assert_records_equal(got_e, want_e, skip={"pdf", "alias_q", "alias"})
            np.testing.assert_allclose(got_e["pdf"], want_e["pdf"], rtol=1e-6)
            np.testing.assert_array_equal(got_e["radiance"][0], np.float32([2.4, 1.8, 1.2]))
        elif name == "environment":
            got_env = placed(placement, address, ENVIRONMENT_RECORD)
            assert_records_equal(got_env, placed(want_placement, want_address, ENVIRONMENT_RECORD),
                                 skip={"texels", "marginal_cdf", "conditional_cdf"})
            assert got_env["scale"][0] == np.float32(1.5 * 0.6)
        else:
            got_l = placed(placement, address, np.uint8)
            assert got_l.tobytes() == placed(want_placement, want_address, np.uint8).tobytes(), name
    # back to the scene's strength: the scene's own bytes again
    updates.apply(updates.check(light_scale=1.0), stream=None)
    fresh, fresh_placement = tables_of(scene_of(colours))
    for name, address, fresh_address in zip(kinds, tables.lights.addresses, fresh.lights.addresses, strict=True):
        if name in ("point", "spot", "directional"):
            assert placed(placement, address, np.uint8).tobytes() == \
                placed(fresh_placement, fresh_address, np.uint8).tobytes(), name
        elif name == "environment":
            assert placed(placement, address, ENVIRONMENT_RECORD)["scale"][0] == np.float32(1.5)
    np.testing.assert_array_equal(placed(placement, tables.lights.addresses[kinds.index("triangles")],
                                         EMITTER_TRIANGLE)["radiance"][0], np.float32([4.0, 3.0, 2.0]))


def test_an_update_of_nothing_writes_nothing():
    tables, placement = tables_of(scene_of())
    updates = TableUpdates(tables, placement)
    before = [a.tobytes() for a in placement.keep]
    updates.apply(updates.check(), stream=None)
    updates.apply(updates.check(light_scale=1.0), stream=None)
    assert [a.tobytes() for a in placement.keep] == before


@pytest.mark.parametrize("change, match", [
    (lambda m: replace(m, emission=(1.0, 1.0, 1.0)), "changes its emission .scale the lights"),
    (lambda m: replace(m, bsdf="conductor"), "changes its bsdf"),
    (lambda m: replace(m, two_sided=True), "changes its two_sided"),
    (lambda m: "red", "must be a Material"),
])
def test_changes_that_need_a_new_pipeline_are_refused(change, match):
    tables, placement = tables_of(scene_of())
    updates = TableUpdates(tables, placement)
    floor = tables.materials.materials[0]
    with pytest.raises((TypeError, ValueError), match=match):
        updates.check({floor: change(floor)})


def test_a_plastic_table_change_and_strangers_are_refused():
    tables, placement = tables_of(scene_of())
    updates = TableUpdates(tables, placement)
    box = tables.materials.materials[1]
    updates.check({box: replace(box, reflectance=(0.1, 0.1, 0.1))})  # the colour is in the record alone
    with pytest.raises(ValueError, match="precomputed table"):
        updates.check({box: replace(box, alpha=0.5)})
    with pytest.raises(ValueError, match="not one of the scene's materials"):
        updates.check({Material((0.1, 0.2, 0.3), name="other"): Material((0.1, 0.2, 0.3))})
    for bad in (0.0, -1.0, float("nan"), True, "2"):
        with pytest.raises(ValueError, match="light_scale must be a finite number > 0"):
            updates.check(light_scale=bad)
