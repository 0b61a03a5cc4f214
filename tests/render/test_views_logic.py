"""Views, worlds and outputs of the render pipeline on the CPU: its logic over stand-ins of the GPU, and NVRTC.

What a pipeline asks of its integrator for batches (variants, buffers and their shapes, leases of device
outputs), what the program carries for each output set (an output not asked for is not in the raygen), the CuPy
kernels compiling, and every piece of bad input refused with a message naming the argument before GPU work.
"""

from __future__ import annotations

import dataclasses
import re
from types import SimpleNamespace

import numpy as np
import pytest
from fake_gpu import RADIANCE, FakeContext, FakeIntegrator, device_array, install

import optixasync.render._device_worlds as device_worlds
from optixasync.cuda import Context, ExportedArray
from optixasync.program import CompileOptions, compile_ptx
from optixasync.render import (
    DeviceOutputs,
    RenderOptions,
    RenderPipeline,
    Tonemap,
    Views,
    Worlds,
    WriteImages,
    id_names,
    label_map,
    segment,
)
from optixasync.render._device_outputs import OutputLeases
from optixasync.render._device_worlds import PLACE_SOURCE, DeviceWorlds
from optixasync.render._graphs import BATCHED
from optixasync.render._lanes import ADD_LANES_SOURCE, lane_count
from optixasync.render._layout import OUTPUT_RECORD, PATH_PARAMS, VIEW_RECORD
from optixasync.render._path import COMPILE_OPTIONS
from optixasync.render._source import pathtracer_source
from optixasync.render._worlds import WorldLayout, place_host
from optixasync.scene import (
    Camera,
    Curves,
    CustomPrimitives,
    Material,
    MeshMotion,
    Scene,
    Spheres,
    cornell_box,
    cube,
    rectangle,
    sphere,
)

W, H = 8, 6


class FakeStream:
    """A stream handle the stand-in frames carry (``__cuda_stream__`` and ``ptr``, as CuPy's)."""

    ptr = 0x5000

    def __cuda_stream__(self):
        return 0, self.ptr


class FakeWorlds(DeviceWorlds):
    """The worlds without a GPU: the real checks of the transforms, their moves recorded."""

    def __init__(self, ctx, device_scene, layout, stream) -> None:  # no super().__init__(): it uploads and builds
        self.ctx, self.layout = ctx, layout
        self.moves: list = []
        self.offsets = device_array(layout.offsets)
        self._records = [device_array(np.zeros(16, np.uint8)), device_array(np.zeros(16, np.uint8))]
        self._current = 0
        self._scene_record = device_scene.record.copy()
        self.accel = SimpleNamespace(handle=0xA5, close=lambda: None, ready=SimpleNamespace(order=lambda stream: 0))
        self.steps, self.moved = 0, False

    def move(self, transforms, stride, stream) -> None:
        self.moves.append((np.array(transforms), stride))
        self.moved = True


@pytest.fixture
def gpu(monkeypatch):
    install(monkeypatch)
    monkeypatch.setattr("optixasync.render._pipeline.create_stream", FakeStream)
    monkeypatch.setattr(device_worlds, "DeviceWorlds", FakeWorlds)


def poses(count: int) -> np.ndarray:
    m = np.tile(np.eye(4), (count, 1, 1))
    m[:, 0, 3] = np.arange(count)
    return m


def views(count: int = 3, **kw) -> Views:
    return Views.pinhole([10.0, 10.0, W / 2, H / 2], poses(count), **kw)


def pipeline(**kwargs) -> RenderPipeline:
    options = kwargs.pop("options", RenderOptions(width=W, height=H, spp=4))
    return RenderPipeline(FakeContext(), kwargs.pop("scene", cornell_box()), options, **kwargs)


# --- what the pipeline asks of the integrator ---------------------------------------------------------------------


def test_a_batch_of_views_launches_once_with_batched_outputs(gpu):
    p = pipeline(views=views(3), outputs=("radiance", "depth", "mesh_id", "rays"))
    with p.scheduler.frame() as frame:
        buffers = p.record(frame, 2)
    (launch,) = frame.launches
    assert launch.batch.views == 3 and not launch.batch.worlds and launch.batch.lanes == 1
    assert {k: v.shape for k, v in buffers.items()} == {"radiance": (3, H, W, 4), "depth": (3, H, W, 1),
                                                        "mesh_id": (3, H, W, 1), "rays": (3, 3)}
    assert buffers["mesh_id"].dtype == np.uint32 and buffers["rays"].dtype == np.uint64
    assert p.accumulation.shape == (3, H, W, 4)
    record = launch.batch.record
    assert record["num_views"] == 3 and record["views"] != 0 and record["jitter"] == 1
    # every variant is a batch's, with only the outputs asked for
    assert FakeIntegrator.instances[0].variants == [frozenset({"radiance", "depth", "mesh_id", "rays", "+views"})] * 2 \
        + [frozenset({"+views"})]


def test_outputs_beyond_the_colour_take_a_batch_of_the_camera(gpu):
    p = pipeline(outputs=("image", "depth"))
    with p.scheduler.frame() as frame:
        buffers = p.record(frame, 1)
    (launch,) = frame.launches
    assert launch.batch.views == 1 and buffers["depth"].shape == (H, W, 1) and buffers["image"].shape == (H, W, 4)
    plain = pipeline(outputs=("image",))
    with plain.scheduler.frame() as frame:
        plain.record(frame, 1)
    assert frame.launches[0].batch is None  # the colour alone: the single-camera raygen


def test_a_batch_frame_asked_for_as_a_graph_runs_eagerly_and_says_why(gpu):
    p = pipeline(views=views(2), outputs=("radiance", "depth"))
    with p.scheduler.frame() as frame:
        p.record(frame, 1, graph=True)
    assert frame.eager_reason == BATCHED and frame.work is None  # enqueued at record, not left for a capture
    assert len(frame.launches) == 1 and frame.launches[0].batch.views == 2


def test_an_orthographic_camera_with_a_far_plane_is_a_view_whose_rays_end_there(gpu):
    """Its record's ray length is zfar - znear (the single camera's); every other view's rays have no end."""
    ortho = Camera.orthographic_at((0, 1, 4), (0, 1, 0), xmag=1.0, ymag=1.0, znear=0.5, zfar=10.0)
    records = Views.cameras([cornell_box().camera, ortho]).records(W, H, 0, np.zeros(2, np.uint32))
    assert records["ray_length"].tolist() == [np.float32(1e16), 9.5]
    assert ortho.basis(W, H).ray_length == 9.5
    posed = Views.pinhole([W, W, W / 2, H / 2], np.eye(4)[None]).records(W, H, 0, np.zeros(1, np.uint32))
    assert posed["ray_length"].tolist() == [np.float32(1e16)]
    scene = cornell_box()
    scene.camera = ortho  # the scene's camera as a batch's one view: every check passes, then GPU work begins
    with pytest.raises(AssertionError, match="the context was used"):
        RenderPipeline(Untouchable(), scene, RenderOptions(width=W, height=H), outputs=("image", "depth"))


def test_an_orthographic_camera_without_a_far_plane_is_an_orthographic_view(gpu):
    from optixasync.render._views import VIEW_CAMERA, VIEW_ORTHOGRAPHIC

    ortho = Camera.orthographic_at((0, 1, 4), (0, 1, 0), xmag=2.0, ymag=1.5, znear=0.5)
    views = Views.cameras([cornell_box().camera, ortho])
    records = views.records(40, 30, 0, np.zeros(2, np.uint32))
    assert list(records["kind"]) == [VIEW_CAMERA, VIEW_ORTHOGRAPHIC] and records["convention"][1] == 0
    assert (records["fx"][1], records["fy"][1], records["cx"][1], records["cy"][1]) == (10.0, 10.0, 20.0, 15.0)
    pose = records["to_world"][1].reshape(3, 4)
    np.testing.assert_allclose(pose[:, 3], [0, 1, 3.5])  # on the near plane
    np.testing.assert_allclose(pose[:, 2], [0, 0, -1])  # looking at the target
    np.testing.assert_allclose(pose[:, 1], [0, -1, 0], atol=1e-12)  # OpenCV: y down
    scene = cornell_box()
    scene.camera = ortho
    p = pipeline(scene=scene, outputs=("image", "depth"))
    with p.scheduler.frame() as frame:
        p.record(frame, 1)
    assert frame.launches[0].batch.views == 1


def test_views_records_follow_the_views_and_their_poses(gpu):
    p = pipeline(views=views(2, seeds=[3, 4]), outputs=("radiance",))
    ctx = p.ctx
    for _ in range(2):
        with p.scheduler.frame() as frame:
            p.record(frame, 1)
    records = [u for u in ctx.uploads if u.dtype == np.uint8 and u.nbytes == 2 * VIEW_RECORD.itemsize]
    assert len(records) == 1  # unchanged views: uploaded once
    moved = poses(2)
    moved[:, 1, 3] = 5.0
    with p.scheduler.frame() as frame:
        p.record(frame, 1, poses=moved)
    records = [np.frombuffer(u.tobytes(), dtype=VIEW_RECORD)
               for u in ctx.uploads if u.dtype == np.uint8 and u.nbytes == 2 * VIEW_RECORD.itemsize]
    assert len(records) == 2 and (records[1]["to_world"][:, 7] == 5.0).all()
    batch = frame.launches[0].batch.record
    assert batch["prev_views"] != batch["views"]  # the motion vectors see the launch before


def test_a_small_still_is_spread_over_lanes_of_one_sample(gpu):
    off = pipeline(options=RenderOptions(width=W, height=H, spp=40))  # lanes are asked for: off by default
    np.testing.assert_array_equal(off.render(), RADIANCE)
    (frame,) = off.scheduler.frames
    assert [(la.spp, la.lanes, la.batch) for la in frame.launches] == [(40, 1, None)]
    assert frozenset({"+views"}) not in FakeIntegrator.instances[-1].variants
    p = pipeline(options=RenderOptions(width=W, height=H, spp=40, sample_lanes=0))
    linear = p.render()
    np.testing.assert_array_equal(linear, RADIANCE)
    (frame,) = p.scheduler.frames
    lanes = lane_count(W, H, 1, 40)
    assert lanes == 40  # one lane per sample: every sample in one launch
    assert [(la.spp, la.lanes, la.accumulate) for la in frame.launches] == [(40, 40, False)]
    p = pipeline(options=RenderOptions(width=W, height=H, spp=150, sample_lanes=0))
    np.testing.assert_array_equal(p.render(), RADIANCE)
    (frame,) = p.scheduler.frames
    assert [la.lanes for la in frame.launches] == [64, 64, 22] and [la.offset for la in frame.launches] == [0, 64, 128]
    big = pipeline(options=RenderOptions(width=1024, height=1024, spp=4, sample_lanes=0))
    assert big.still_lanes(4) == 1 and frozenset({"+views"}) not in FakeIntegrator.instances[-1].variants


def test_a_still_of_a_batch_has_the_views_axis(gpu):
    p = pipeline(views=views(2), outputs=("radiance",), options=RenderOptions(width=W, height=H, spp=3))
    assert p.render().shape == (2, H, W, 3)
    assert p.render_sums(0, 2).shape == (2, H, W, 4)


def test_steps_lease_their_outputs_and_a_held_lease_is_never_rewritten(gpu):
    p = pipeline(views=views(2), outputs=("radiance", "depth"), frames_in_flight=1)
    first = p.step()
    assert isinstance(first, DeviceOutputs) and set(first) == {"radiance", "depth"}
    assert isinstance(first["depth"], ExportedArray) and first["depth"].shape == (2, H, W, 1)
    second = p.step()  # the one slot comes round while the first is held: other buffers
    held = first["depth"].array
    assert second["depth"].array is not held
    first.release()
    second.release()
    third = p.step()  # released: the slot's first buffers again
    assert third["depth"].array is held
    with pytest.raises(RuntimeError, match="released"):
        first["depth"]
    assert p._leases.held() == 1
    with third:
        pass
    assert p._leases.held() == 0


def test_exported_outputs_order_their_consumers_on_the_gpu(monkeypatch):
    waits, recorded = [], []
    monkeypatch.setattr("optixasync.cuda._export._wait", lambda handle, event: waits.append((handle, event)))
    monkeypatch.setattr("optixasync.cuda._export.record_event", lambda stream: recorded.append(stream.ptr) or "done")

    class Array:
        dtype, shape = np.dtype(np.float32), (2, 2)
        __cuda_array_interface__ = {"shape": (2, 2), "typestr": "<f4", "data": (0x1000, False), "version": 2}

        def __dlpack__(self, **kw):
            return ("capsule", kw["stream"])

        def __dlpack_device__(self):
            return (2, 0)

    exported = ExportedArray(Array(), "frame end", 0x5000)
    assert exported.__dlpack__(stream=0x7000) == ("capsule", -1)  # the capsule itself asks for no more ordering
    assert waits == [(0x7000, "frame end")] and exported.consumers == {0x7000}
    exported.__dlpack__()  # no stream: the legacy default stream, as the protocol says
    assert waits[-1] == (1, "frame end")
    assert exported.__cuda_array_interface__["stream"] == 0x5000
    assert exported.consumers_done() == ["done", "done"] and sorted(recorded) == [1, 0x7000]
    with pytest.raises(BufferError):
        exported.__dlpack__(stream=0x7000, copy=True)


def test_leases_wait_for_the_consumers_of_a_released_generation(monkeypatch):
    waited = []
    monkeypatch.setattr("optixasync.render._device_outputs.wait_event", lambda s, e: waited.append((s, e)))
    leases = OutputLeases()
    leases.hold(0, 0)
    assert leases.generation(0) == 1 and leases.generation(1) == 0
    leases.release(0, 0, ["consumer done"])
    assert leases.generation(0) == 0
    leases.before_write(0, 0, "frame stream")
    assert waited == [("frame stream", "consumer done")]
    leases.before_write(0, 0, "frame stream")
    assert len(waited) == 1  # once


# --- worlds -------------------------------------------------------------------------------------------------------


def tabletop(objects: int = 3) -> Scene:
    meshes = [cube(np.diag([3, 0.1, 3, 1.0]), Material((0.5, 0.5, 0.5)), "table")]
    meshes += [sphere((k - 1.0, 0.4, 0.0), 0.2, Material((0.8, 0.3, 0.2)), subdivisions=1, name=f"ball{k}")
               for k in range(objects)]
    facing_down = np.array([[0.3, 0, 0, 0], [0, 0, -0.3, 3.0], [0, 0.3, 0, 0]])  # the square's front turned to -y
    meshes.append(rectangle(facing_down, Material((0, 0, 0), (5, 5, 5)), "lamp"))
    return Scene(meshes, Camera((0, 2, 4), (0, 0, 0)))


def test_worlds_move_by_their_transforms_on_the_frames_stream(gpu):
    scene = tabletop()
    p = pipeline(scene=scene, worlds=Worlds(4, movable=["ball0", "ball2"]), outputs=("radiance", "mesh_id"))
    assert p.views.count == 4 and list(p.views.worlds) == [0, 1, 2, 3]  # the scene's camera in each world
    transforms = np.tile(np.eye(4, dtype=np.float32)[:3], (4, 2, 1, 1))
    with p.scheduler.frame() as frame:
        buffers = p.record(frame, 1, transforms=transforms)
    worlds = p._batch.worlds
    assert len(worlds.moves) == 1 and worlds.moves[0][1] == 12
    batch = frame.launches[0].batch
    assert batch.worlds and batch.scene["instanced"] == 1 and batch.scene["handle"] == 0xA5
    assert batch.record["meshes_per_world"] == len(scene.meshes) and buffers["mesh_id"].shape == (4, H, W, 1)
    assert FakeIntegrator.instances[-1].variants[0] == frozenset({"radiance", "mesh_id", "+views", "+worlds"})


def test_world_layout_cells_do_not_overlap_and_records_place_every_mesh():
    scene = tabletop()
    layout = WorldLayout.of(scene, Worlds(27, movable=[1]))
    size = layout.cell_hi - layout.cell_lo
    offsets = layout.offsets[:, :3]
    gaps = np.abs(offsets[:, None] - offsets[None]) - size  # per axis: > 0 where two cells are apart
    apart = (gaps > 0).any(axis=2) | np.eye(27, dtype=bool)
    assert apart.all()
    from optixasync.render._params import mesh_records

    base = mesh_records(scene, [0] * 5, [0] * 5, np.zeros(5), [0] * 5)
    records = layout.records(base, scene)
    assert len(records) == 27 * 5
    w = 13
    to_world = records[w * 5 + 2]["to_world"].reshape(3, 4)
    np.testing.assert_allclose(to_world[:, 3], offsets[w], atol=1e-6)
    placed, normal, mirrored = place_host(np.array([[1, 0, 0, 1], [0, -1, 0, 2], [0, 0, 1, 3]]), [10, 0, 0])
    assert mirrored and placed[3] == 11 and placed[7] == 2  # a mirror, moved into the cell at x = 10
    np.testing.assert_allclose(normal.reshape(3, 3), np.diag([1, -1, 1]))


# --- ids and labels -----------------------------------------------------------------------------------------------


def test_ids_map_back_to_the_scene_and_to_labels():
    scene = tabletop(2)
    names = id_names(scene)
    assert names["meshes"] == ["table", "ball0", "ball1", "lamp"]
    assert len(names["materials"]) == 3 and names["materials"][1] is scene.meshes[1].material
    table = label_map(scene, {"ball0": 7, "ball1": 7, "table": 2}, background=0)
    np.testing.assert_array_equal(table, [2, 7, 7, 0, 0])
    ids = np.array([[0, 1, 0xFFFFFFFF], [3, 2, 1]], np.uint32)
    np.testing.assert_array_equal(segment(ids, table), [[2, 7, 0], [0, 7, 7]])
    by_rule = label_map(scene, lambda k, mesh: 1 if mesh.name.startswith("ball") else 0)
    np.testing.assert_array_equal(by_rule, [0, 1, 1, 0, 0])
    with pytest.raises(KeyError, match="no mesh named 'chair'"):
        label_map(scene, {"chair": 1})


# --- the program: what each output set carries ----------------------------------------------------------------------


def test_an_output_not_asked_for_is_not_in_the_raygen():
    """Each raygen reads the address of exactly the outputs of its set: the others' code is not in it."""
    from optixasync.render._outputs import OUTPUTS, VARIANT_VIEWS

    sets = [("radiance",), ("radiance", "depth", "mesh_id"), ("depth", "motion", "rays"),
            tuple(n for n in OUTPUT_RECORD.names)]
    masks = [VARIANT_VIEWS | sum(OUTPUTS[n].bit for n in s) for s in sets]
    program = pathtracer_source(masks)
    ptx = compile_ptx(program.text, "views_outputs.cu", dataclasses.replace(COMPILE_OPTIONS,
                                                                            include_dirs=program.include_dirs))
    base = PATH_PARAMS.fields["out"][1]
    for names, mask in zip(sets, masks, strict=True):
        body = ptx.split(f".entry __raygen__outputs_{mask}(")[1].split(".entry")[0]
        read = {int(x) for x in re.findall(r"\[params\+(\d+)\]", body)}
        found = {n for n in OUTPUT_RECORD.names if base + OUTPUT_RECORD.fields[n][1] in read}
        assert found == set(names) & set(OUTPUT_RECORD.names), (names, found)
        assert ".local" not in body and not re.search(r"\.f64\b", body)


@pytest.mark.parametrize("source, entry", [(PLACE_SOURCE, "place_worlds"), (ADD_LANES_SOURCE, "add_lanes")])
def test_the_batch_kernels_compile_with_nvrtc(source, entry):
    ptx = compile_ptx(source, f"{entry}.cu", CompileOptions(use_fast_math=True))
    assert re.search(rf"\.entry\s+{entry}\s*\(", ptx) and ".local" not in ptx


# --- bad input: refused, naming the argument, before GPU work ---------------------------------------------------------


class Untouchable(Context):
    """An open context whose every use (GPU work) fails the test."""

    handle = 0xC0DE

    def __init__(self) -> None:
        pass

    def __getattribute__(self, name):
        if name in ("handle", "require_open", "__class__"):
            return object.__getattribute__(self, name)
        raise AssertionError(f"the context was used ({name}) before the input was checked")


def many_meshes(count: int) -> Scene:
    meshes = [cube(np.diag([0.1, 0.1, 0.1, 1]) + np.eye(4, k=3) * k, Material((0.5,) * 3), f"m{k}")
              for k in range(count - 1)]
    meshes.append(cube(None, Material((0, 0, 0), (1, 1, 1)), "lamp"))
    return Scene(meshes, Camera((0, 0, 5), (0, 0, 0)))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"outputs": ("radiance", "zbuffer")}, ValueError, "unknown output 'zbuffer'"),
    ({"integrator": "gbuffer", "outputs": ("radiance",)}, ValueError, "'gbuffer' integrator cannot write 'radiance'"),
    ({"views": "cameras"}, TypeError, "views must be an optixasync.render.Views"),
    ({"worlds": 4}, TypeError, "worlds must be an optixasync.render.Worlds"),
    ({"views": views(2), "stages": [WriteImages("/tmp/x.png", "image")]}, ValueError, "takes one image"),
    ({"views": Views.pinhole([10, 10, 4, 3], poses(3), worlds=[0, 1, 5]), "worlds": Worlds(2)}, ValueError,
     "views.worlds names world 5"),
    ({"views": views(3), "worlds": Worlds(2)}, ValueError, "3 views for 2 worlds"),
    ({"views": views(128), "options": RenderOptions(width=4096, height=4096)}, ValueError, "launch limit of 2"),
    ({"worlds": Worlds(2, movable=["nothing"])}, KeyError, "no mesh named 'nothing'"),
    ({"worlds": Worlds(2, movable=[7])}, ValueError, "emissive"),
    ({"worlds": Worlds(2, movable=[99])}, ValueError, "mesh index 99 out of range"),
])
def test_bad_batches_fail_before_gpu_work(kwargs, error, match):
    options = kwargs.pop("options", RenderOptions(width=W, height=H))
    with pytest.raises(error, match=match):
        RenderPipeline(Untouchable(), cornell_box(), options, **kwargs)
    assert Tonemap.batches  # the stages that take a batch say so


def scene_with(kind: str) -> Scene:
    """The Cornell box with spheres, curves, a custom primitive or a moving mesh."""
    scene = cornell_box()
    if kind == "spheres":
        scene.add(Spheres([[0.0, 1.0, 0.0], [0.3, 1.0, 0.0]], 0.1))
    elif kind == "curves":
        scene.add(Curves.from_strands([np.array([[0.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.1, 1.5, 0.0]])], 0.02, "linear"))
    elif kind == "custom":
        scene.add(CustomPrimitives("disk", [[0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.2]]))
    else:
        shift = [np.array([[1.0, 0, 0, x], [0, 1, 0, 0], [0, 0, 1, 0]]) for x in (0.0, 0.1)]
        scene.meshes[0].motion = MeshMotion(transforms=shift)
    return scene


@pytest.mark.parametrize("kind", ["spheres", "curves", "custom", "motion"])
@pytest.mark.parametrize("kwargs, named", [
    ({"views": views(2)}, "views"),
    ({"worlds": Worlds(2)}, "worlds"),
    ({"integrator": "gbuffer", "outputs": ("albedo",)}, "integrator='gbuffer'"),
    ({"outputs": ("image", "depth", "mesh_id")}, r"outputs \['depth', 'mesh_id'\]"),
    ({"options": RenderOptions(width=W, height=H, sample_lanes=0)}, "sample_lanes=0"),
])
def test_batches_on_shapes_custom_primitives_or_motion_fail_before_gpu_work(kind, kwargs, named):
    """A batch's raygens know mesh records only (record ids, motion vectors): refused, naming the argument."""
    kwargs = dict(kwargs)  # one dict for every kind
    options = kwargs.pop("options", RenderOptions(width=W, height=H))
    with pytest.raises(ValueError, match=f"^{named} is not supported yet on scenes with spheres, curves, custom "
                                         "primitives or motion: a batch's raygens know mesh records only"):
        RenderPipeline(Untouchable(), scene_with(kind), options, **kwargs)


def test_batches_on_shapes_name_every_argument_asked_for():
    with pytest.raises(ValueError, match=r"^views and worlds and outputs \['depth'\] are not supported yet"):
        RenderPipeline(Untouchable(), scene_with("spheres"), RenderOptions(width=W, height=H), views=views(2),
                       worlds=Worlds(2), outputs=("image", "depth"))


def test_the_colour_of_one_camera_on_shapes_is_no_batch(gpu):
    """The single camera's outputs on a scene with spheres or motion: its raygen, no batch's, nothing refused."""
    for kind in ("spheres", "motion"):
        p = pipeline(scene=scene_with(kind), outputs=("image", "radiance", "albedo", "normal"))
        assert not p.batched and not p._lanes
        with p.scheduler.frame() as frame:
            p.record(frame, 1)
        assert frame.launches[0].batch is None


def test_too_many_instances_is_an_id_overflow_before_gpu_work():
    with pytest.raises(ValueError, match="instance ids would overflow"):
        RenderPipeline(Untouchable(), many_meshes(32), RenderOptions(width=W, height=H), worlds=Worlds(2**20))


@pytest.mark.parametrize("make, error, match", [
    (lambda: Views.pinhole([10, 10, 4, 3], np.zeros((2, 3, 3))), ValueError, r"poses must be \(B, 4, 4\)"),
    (lambda: Views.pinhole([10, 10, 4, 3], np.tile(2 * np.eye(4), (2, 1, 1))), ValueError, "orthonormal"),
    (lambda: Views.pinhole([10, 10, 4, 3], np.full((1, 4, 4), np.nan)), ValueError, "finite"),
    (lambda: Views.pinhole([0, 10, 4, 3], poses(1)), ValueError, "positive fx and fy"),
    (lambda: Views.pinhole([[10, 10, 4, 3]] * 3, poses(2)), ValueError, "intrinsics must be"),
    (lambda: Views.pinhole([10, 10, 4, 3], poses(1), convention="directx"), ValueError, "convention must be"),
    (lambda: Views.pinhole([10, 10, 4, 3], poses(2), seeds=[1]), ValueError, "seeds must be 2"),
    (lambda: Views.cameras(["camera"]), TypeError, "Camera objects"),
    (lambda: Worlds(0), ValueError, "worlds.count"),
    (lambda: Worlds(2, extent=((0, 0, 0), (0, 1, 1))), ValueError, "worlds.extent"),
])
def test_bad_views_and_worlds(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_too_many_views(monkeypatch):
    monkeypatch.setattr("optixasync.render._views.MAX_VIEWS", 4)
    with pytest.raises(ValueError, match="1 to 4 views"):
        Views.pinhole([10, 10, 4, 3], poses(5))


class ForeignTensor:
    """A DLPack tensor on CUDA device 1 (the context is on device 0)."""

    def __init__(self, shape) -> None:
        self.shape = shape

    def __dlpack_device__(self):
        return (2, 1)

    def __dlpack__(self, **kw):
        raise AssertionError("exported before its device was checked")


class CaiArray:
    """A ``__cuda_array_interface__`` array (never dereferenced: the checks refuse it first)."""

    def __init__(self, shape, typestr="<f4", strides=None) -> None:
        self.shape = shape
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0x1000, False), "version": 3,
                                         "strides": strides}


@pytest.mark.parametrize("kwargs, error, match", [
    ({"views": views(2)}, ValueError, "views must hold 3 views"),
    ({"views": "views"}, TypeError, "views must be an optixasync.render.Views"),
    ({"poses": np.zeros((3, 2, 4))}, ValueError, "poses must be"),
    ({"poses": np.tile(np.eye(4), (2, 1, 1))}, ValueError, "poses holds 2 poses for 3 views"),
    ({"poses": CaiArray((4, 4, 4))}, ValueError, r"poses must be \(3, 4, 4\)"),
    ({"poses": CaiArray((3, 4, 4), "<f8")}, ValueError, "poses must have dtype float32"),
    ({"poses": ForeignTensor((3, 4, 4))}, ValueError, "poses is on CUDA device 1"),
    ({"transforms": np.zeros((4, 2, 4, 4), np.float32)}, ValueError, "transforms need a pipeline made with worlds"),
])
def test_bad_launch_inputs_of_views_fail_before_gpu_work(gpu, kwargs, error, match):
    p = pipeline(views=views(3), outputs=("radiance",))
    uploads = len(p.ctx.uploads)
    with p.scheduler.frame() as frame:
        with pytest.raises(error, match=match):
            p.record(frame, 1, **kwargs)
        assert frame.launches == [] and len(p.ctx.uploads) == uploads


@pytest.mark.parametrize("transforms, error, match", [
    (np.zeros((4, 3, 4, 4), np.float32), ValueError, r"transforms must be \(4, 2, 4, 4\)"),
    (np.zeros((4, 2, 4, 4), np.float64), ValueError, "transforms must have dtype float32"),
    (CaiArray((4, 2, 3, 4), "<f2"), ValueError, "transforms must have dtype float32"),
    (CaiArray((4, 2, 4, 4), "<f4", strides=(256, 4, 64, 16)), ValueError, "transforms must be C-contiguous"),
    (ForeignTensor((4, 2, 4, 4)), ValueError, "transforms is on CUDA device 1, but the optixasync context is on "
     "device 0"),
    ([[1, 2]], ValueError, "transforms must be"),
])
def test_bad_transforms_fail_before_gpu_work(gpu, transforms, error, match):
    p = pipeline(scene=tabletop(), worlds=Worlds(4, movable=["ball0", "ball1"]), outputs=("radiance",))
    with p.scheduler.frame() as frame:
        with pytest.raises(error, match=match):
            p.record(frame, 1, transforms=transforms)
        assert frame.launches == [] and p._batch.worlds.moves == []


def test_the_benchmarks_tabletop_worlds_fit_one_structure():
    """bench_views.py's RL scene: about 20 meshes, 4096 worlds of them laid out on the host in well under a second."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_views.py"
    spec = importlib.util.spec_from_file_location("bench_views", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    scene, movable = bench.tabletop(20)
    assert len(scene.meshes) == 20 and len(movable) == 18
    layout = WorldLayout.of(scene, Worlds(4096, movable=movable))
    from optixasync.render._params import mesh_records

    base = mesh_records(scene, [0] * 20, [0] * 20, np.zeros(20), [0] * 20)
    records = layout.records(base, scene)
    assert len(records) == 4096 * 20  # (its time is the benchmark's to report, not a test's to assert)
