"""Bad input at every public entry point: each mistake raises its documented exception, and nothing is left behind.

One parametrized test walks the matrix: geometry (``TriangleInput``,
``GeometryAccel``, refit, compaction, ``Instance``, ``InstanceAccel``),
transforms (``as_affine`` through ``Mesh.transformed``, ``Instance`` and
``load_mesh``), options (``AccelOptions``, ``SchedulerOptions``,
``RenderOptions``), files (``load_mesh``, ``write_image``), scheduler misuse,
context misuse (a closed context, objects of another context), the render
pipeline (its outputs, stages and frames too), and trimesh arrays handed to
``Mesh``. Each case is ``arrange``, which
builds what the mistake needs and registers its clean-up, then the mistake
itself inside ``pytest.raises(type, match=fragment)``.

An entry point that accepts bad input or fails with the wrong exception today
is written as it should behave and marked ``xfail(strict=True)`` with what it
does now, so the fix turns it into a pass.

The last test runs after the whole matrix: the shared context still renders
and traces correctly, the device pool holds exactly the bytes it held before,
and no thread was left running.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import optixasync
from optixasync import FrameAbortedError
from optixasync.accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, TriangleInput
from optixasync.denoise import Denoise
from optixasync.io import write_image
from optixasync.program import Module, ProgramGroup
from optixasync.render import RenderOptions, RenderPipeline, Tonemap, WriteImages
from optixasync.scene import Mesh, Scene, cornell_box, load_mesh, rectangle
from optixasync.scheduler import FrameScheduler, SchedulerOptions
from optixasync.testing import DEFAULT_TRIANGLE, HELLO_PARAMS, HelloRenderer, render_triangle
from optixasync.validation import as_affine

pytestmark = pytest.mark.gpu

TRI = np.ascontiguousarray(DEFAULT_TRIANGLE, dtype=np.float32)  # one triangle, three vertices
F32 = np.float32


@dataclass
class Env:
    """What a case's ``arrange`` gets: the shared context and pipeline, a clean-up stack, a temporary folder."""

    ctx: Any
    pipeline: RenderPipeline
    stack: contextlib.ExitStack
    tmp: Path

    # -- helpers that register their own clean-up ----------------------------------------------------------------
    def gas(self, **options: Any) -> GeometryAccel:
        gas = GeometryAccel(self.ctx, TriangleInput(TRI), AccelOptions(**options))
        self.stack.callback(gas.close)
        return gas

    def scheduler(self, frames_in_flight: int = 1, ctx: Any = None, **kwargs: Any) -> FrameScheduler:
        sched = FrameScheduler(self.ctx if ctx is None else ctx, frames_in_flight, **kwargs)
        self.stack.callback(sched.close)
        return sched

    def other_context(self) -> Any:
        """A second, live context on the same device (closed after the case)."""
        return self.stack.enter_context(optixasync.Context(warm_up=False))

    def closed_context(self) -> Any:
        closed = optixasync.Context(warm_up=False)
        closed.close()
        return closed

    def file(self, name: str, data: bytes) -> Path:
        path = self.tmp / name
        path.write_bytes(data)
        return path


Arrange = Callable[[Env], Callable[[], Any]]
CASES: list[Any] = []


def case(case_id: str, exc: type[BaseException], match: str, *, xfail: str | None = None,
         run: bool = True) -> Callable[[Arrange], Arrange]:
    """Register ``arrange`` (Env -> the mistake, a callable) as the case ``case_id``."""
    def register(arrange: Arrange) -> Arrange:
        marks = [pytest.mark.xfail(strict=True, run=run, reason=xfail)] if xfail else []
        CASES.append(pytest.param(arrange, exc, match, id=case_id, marks=marks))
        return arrange
    return register


def simple(case_id: str, exc: type[BaseException], match: str, call: Callable[[Env], Any], **kwargs: Any) -> None:
    """A case whose mistake needs nothing built first."""
    case(case_id, exc, match, **kwargs)(lambda env: lambda: call(env))


def with_nan(array: np.ndarray) -> np.ndarray:
    out = array.copy()
    out[1, 2] = np.nan
    return out


def trimesh_box() -> Any:
    trimesh = pytest.importorskip("trimesh")
    return trimesh.creation.box()


# == geometry ===========================================================================================================

simple("triangle-input-float64", ValueError, "dtype float32, got float64", lambda e: TriangleInput(TRI.astype(np.float64)))
simple("triangle-input-shape", ValueError, r"shape \(N, 3\)", lambda e: TriangleInput(np.zeros((3, 2), F32)))
simple("triangle-input-empty", ValueError, "empty", lambda e: TriangleInput(np.zeros((0, 3), F32)))
simple("triangle-input-not-contiguous", ValueError, "C-contiguous",
       lambda e: TriangleInput(np.zeros((3, 6), F32)[:, ::2]))
simple("triangle-input-nan", ValueError, "NaN or Inf", lambda e: TriangleInput(with_nan(TRI)))
simple("triangle-input-list", TypeError, "numpy array or a device array", lambda e: TriangleInput(TRI.tolist()))
simple("triangle-input-not-a-multiple-of-3", ValueError, "multiple of 3", lambda e: TriangleInput(np.zeros((4, 3), F32)))
simple("triangle-input-index-out-of-range", ValueError, "out of range",
       lambda e: TriangleInput(TRI, np.array([[0, 1, 3]], np.int32)))
simple("triangle-input-negative-index", ValueError, "out of range",
       lambda e: TriangleInput(TRI, np.array([[0, 1, -1]], np.int32)))
simple("triangle-input-int64-indices", ValueError, "int32 or uint32, got int64",
       lambda e: TriangleInput(TRI, np.array([[0, 1, 2]], np.int64)))
simple("triangle-input-material-ids-dtype", ValueError, "material_ids",
       lambda e: TriangleInput(TRI, material_ids=np.array([0], np.int32)))
simple("triangle-input-material-ids-range", ValueError, "num_sbt_records",
       lambda e: TriangleInput(TRI, material_ids=np.array([1], np.uint32)))
simple("triangle-input-zero-sbt-records", ValueError, "num_sbt_records", lambda e: TriangleInput(TRI, num_sbt_records=0))
simple("triangle-input-fractional-sbt-records", TypeError, "num_sbt_records",
       lambda e: TriangleInput(TRI, num_sbt_records=1.5))


@case("triangle-input-device-float64", ValueError, "dtype float32, got float64")
def _(env: Env):
    device = env.ctx.upload(TRI.astype(np.float64))
    return lambda: TriangleInput(device)


@case("triangle-input-device-not-contiguous", ValueError, "C-contiguous")
def _(env: Env):
    device = env.ctx.upload(np.zeros((3, 6), F32))[:, ::2]
    return lambda: TriangleInput(device)


simple("geometry-accel-no-inputs", TypeError, "non-empty sequence", lambda e: GeometryAccel(e.ctx, []))
simple("geometry-accel-vertices-instead-of-an-input", TypeError, "TriangleInput", lambda e: GeometryAccel(e.ctx, TRI))
simple("geometry-accel-unknown-option", TypeError, "unknown AccelOptions option",
       lambda e: GeometryAccel(e.ctx, TriangleInput(TRI), {"allow_updates": True}))
simple("geometry-accel-options-of-another-type", TypeError, "expected AccelOptions",
       lambda e: GeometryAccel(e.ctx, TriangleInput(TRI), "fast_trace"))


@case("refit-without-allow-update", ValueError, "allow_update")
def _(env: Env):
    gas = env.gas()
    return lambda: gas.refit(TRI)


@case("refit-another-vertex-count", ValueError, "vertex count")
def _(env: Env):
    gas = env.gas(allow_update=True)
    return lambda: gas.refit(np.zeros((6, 3), F32))


@case("refit-float64", ValueError, "float32")
def _(env: Env):
    gas = env.gas(allow_update=True)
    return lambda: gas.refit(TRI.astype(np.float64))


@case("refit-nan", ValueError, "NaN or Inf")
def _(env: Env):
    gas = env.gas(allow_update=True)
    return lambda: gas.refit(np.full((3, 3), np.nan, F32))


@case("refit-two-arrays-for-one-input", ValueError, "one vertex array per input")
def _(env: Env):
    gas = env.gas(allow_update=True)
    return lambda: gas.refit([TRI, TRI])


@case("refit-after-close", RuntimeError, "closed")
def _(env: Env):
    gas = env.gas(allow_update=True)
    gas.close()
    return lambda: gas.refit(TRI)


@case("compact-without-allow-compaction", ValueError, "allow_compaction")
def _(env: Env):
    gas = env.gas()
    return lambda: gas.compact()


@case("compact-after-close", RuntimeError, "closed")
def _(env: Env):
    gas = env.gas(allow_compaction=True)
    gas.close()
    return lambda: gas.compact(wait=True)


simple("instance-of-an-array", TypeError, "GeometryAccel, InstanceAccel or motion transform, got ndarray",
       lambda e: Instance(TRI))


@case("instance-visibility-mask", ValueError, "visibility_mask")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, visibility_mask=0x100)


@case("instance-id-range", ValueError, "instance_id")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, instance_id=2**28)


@case("instance-negative-sbt-offset", ValueError, "sbt_offset")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, sbt_offset=-1)


simple("instance-accel-no-instances", TypeError, "non-empty sequence of Instance", lambda e: InstanceAccel(e.ctx, []))


@case("instance-accel-structures-instead-of-instances", TypeError, "non-empty sequence of Instance")
def _(env: Env):
    gas = env.gas()
    return lambda: InstanceAccel(env.ctx, [gas])


@case("instance-accel-of-a-closed-structure", ValueError, "closed acceleration structure")
def _(env: Env):
    gas = env.gas()
    gas.close()
    instance = Instance(gas)
    return lambda: InstanceAccel(env.ctx, [instance])


@case("instance-accel-refit-without-allow-update", ValueError, "allow_update")
def _(env: Env):
    ias = InstanceAccel(env.ctx, [Instance(env.gas())])
    env.stack.callback(ias.close)
    return lambda: ias.refit()


@case("instance-accel-rebuild-with-no-instances", TypeError, "non-empty sequence of Instance")
def _(env: Env):
    ias = InstanceAccel(env.ctx, [Instance(env.gas())])
    env.stack.callback(ias.close)
    return lambda: ias.rebuild([])


# == transforms ========================================================================================================

BAD_LAST_ROW = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]])  # a 4x4 that is not affine
WITH_INF = np.eye(3, 4)
WITH_INF[2, 3] = np.inf
for label, matrix, fragment in [
    ("singular", np.zeros((3, 4)), "singular"),
    ("shape", np.eye(2), r"3x4 or 4x4 affine transform, got shape \(2, 2\)"),
    ("nan", np.full((3, 4), np.nan), "NaN or Inf"),
    ("inf", WITH_INF, "NaN or Inf"),
    ("last-row", BAD_LAST_ROW, "last row"),
    ("text", "abc", "of numbers"),
    ("none", None, r"got shape \(\)"),
    ("ragged", [[1, 0, 0], [0, 1]], "of numbers"),
]:
    simple(f"mesh-transformed-{label}", ValueError, f"matrix.*{fragment}", lambda e, m=matrix: rectangle().transformed(m))
    simple(f"as-affine-{label}", ValueError, fragment, lambda e, m=matrix: as_affine(m))

simple("as-affine-singular-4x4", ValueError, "singular", lambda e: as_affine(np.diag([1.0, 1.0, 0.0, 1.0])))


@case("instance-transform-singular", ValueError, "Instance.transform is singular")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, transform=np.zeros((3, 4)))


@case("instance-transform-shape", ValueError, "Instance.transform must be a 3x4 or 4x4")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, transform=np.eye(3))


@case("instance-transform-nan", ValueError, "Instance.transform contains NaN or Inf")
def _(env: Env):
    gas = env.gas()
    return lambda: Instance(gas, transform=np.full((4, 4), np.nan))


@case("load-mesh-singular-transform", ValueError, "transform is singular")
def _(env: Env):
    path = env.file("tri.obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n")
    return lambda: load_mesh(path, transform=np.zeros((3, 4)))  # checked before the file is read


# == options ===========================================================================================================

simple("accel-options-prefer", ValueError, "prefer", lambda e: AccelOptions(prefer="fastest"))
simple("accel-options-negative-rebuild-every", ValueError, "rebuild_every",
       lambda e: AccelOptions(allow_update=True, rebuild_every=-1))
simple("accel-options-bool-rebuild-every", ValueError, "rebuild_every",
       lambda e: AccelOptions(allow_update=True, rebuild_every=True))
simple("accel-options-rebuild-without-update", ValueError, "allow_update=True", lambda e: AccelOptions(rebuild_every=3))
simple("accel-options-flag-of-another-type", TypeError, "allow_update", lambda e: AccelOptions(allow_update="no"))
simple("scheduler-options-max-queued-results", ValueError, "max_queued_results",
       lambda e: SchedulerOptions(max_queued_results=0))
simple("scheduler-options-on-full", ValueError, "on_full", lambda e: SchedulerOptions(on_full="block"))
simple("scheduler-options-bool-stats-window", ValueError, "stats_window", lambda e: SchedulerOptions(stats_window=True))
simple("scheduler-options-flag-of-another-type", TypeError, "completion_thread",
       lambda e: SchedulerOptions(completion_thread="no"))
simple("scheduler-no-slots", ValueError, "frames_in_flight must be at least 1", lambda e: FrameScheduler(e.ctx, 0))
simple("scheduler-float-slots", TypeError, "frames_in_flight must be an int", lambda e: FrameScheduler(e.ctx, 2.0))
simple("scheduler-unknown-option", TypeError, "unknown SchedulerOptions option",
       lambda e: FrameScheduler(e.ctx, 2, options={"keep_result": False}))
simple("scheduler-options-of-another-type", TypeError, "expected SchedulerOptions",
       lambda e: FrameScheduler(e.ctx, 2, options="fast"))
simple("scheduler-absurd-slots", ValueError, "frames_in_flight", lambda e: FrameScheduler(e.ctx, 10**9))
simple("render-options-spp-beyond-the-sample-index", ValueError, "spp", lambda e: RenderOptions(spp=2**40))
simple("render-options-spp-zero", ValueError, "spp must be at least 1", lambda e: RenderOptions(spp=0))
simple("render-options-width-zero", ValueError, "image size must be positive", lambda e: RenderOptions(width=0))
simple("render-options-float-width", TypeError, "width must be an integer", lambda e: RenderOptions(width=1.5))
simple("render-options-bool-width", TypeError, "width must be an integer", lambda e: RenderOptions(width=True))
simple("render-options-too-many-pixels", ValueError, r"2\*\*30", lambda e: RenderOptions(width=2**16, height=2**15))
simple("render-options-seed", ValueError, "seed", lambda e: RenderOptions(seed=2**32))
simple("render-options-max-depth", ValueError, "max_depth", lambda e: RenderOptions(max_depth=0))
simple("render-options-rr-depth", ValueError, "rr_depth", lambda e: RenderOptions(rr_depth=0))
simple("render-options-samples-per-launch", ValueError, "samples_per_launch",
       lambda e: RenderOptions(samples_per_launch=-1))


# == files =============================================================================================================

simple("load-mesh-missing", ValueError, "mesh file not found", lambda e: load_mesh(e.tmp / "nope.obj"))
simple("load-mesh-unsupported-suffix", ValueError, "unsupported mesh format '.fbx'", lambda e: load_mesh(e.tmp / "x.fbx"))
simple("load-mesh-no-suffix", ValueError, "unsupported mesh format 'no suffix'", lambda e: load_mesh(e.tmp / "model"))
simple("load-mesh-folder-with-a-mesh-suffix", ValueError, "not a file",
       lambda e: load_mesh((e.tmp / "folder.obj").mkdir() or e.tmp / "folder.obj"))


def _garbage(suffix: str, data: bytes) -> Arrange:
    def arrange(env: Env) -> Callable[[], Any]:
        trimesh_box()  # skips without trimesh, which reads the files
        path = env.file(f"garbage{suffix}", data)
        return lambda: load_mesh(path)
    return arrange


case("load-mesh-garbage-ply", ValueError, "cannot read mesh file")(_garbage(".ply", b"\x00\x01garbage\xff" * 8))
# OBJ and glTF go through the project's own readers, which name the file and what is wrong with it.
case("load-mesh-garbage-glb", ValueError, r"garbage\.glb: not a GLB file: magic")(
    _garbage(".glb", b"\x00\x01garbage\xff" * 8))
case("load-mesh-garbage-gltf", ValueError, r"garbage\.gltf: malformed glTF JSON")(_garbage(".gltf", b"{not json"))
case("load-mesh-text-obj", ValueError, r"garbage\.obj contains no faces")(_garbage(".obj", b"this is not a mesh\n"))
# What trimesh makes of an empty STL depends on its version: nothing (no triangles) or an error of its own.
case("load-mesh-empty-stl", ValueError, "contains no triangles|cannot read mesh file")(_garbage(".stl", b""))
case("load-mesh-obj-index-out-of-range", ValueError, r"garbage\.obj:4: face corner '7' refers to vertex 7, but 3")(
    _garbage(".obj", b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n"))

IMAGE = np.zeros((4, 4, 3), np.uint8)
simple("write-image-jpg", ValueError, "unsupported image format '.jpg'", lambda e: write_image(e.tmp / "x.jpg", IMAGE))
simple("write-image-no-suffix", ValueError, "unsupported image format 'no suffix'", lambda e: write_image(e.tmp / "x", IMAGE))
simple("write-image-shape", ValueError, r"\(H, W, 3\) or \(H, W, 4\)",
       lambda e: write_image(e.tmp / "x.png", np.zeros((4, 4), np.uint8)))
simple("write-image-int32", TypeError, "uint8", lambda e: write_image(e.tmp / "x.png", np.zeros((4, 4, 3), np.int32)))
simple("write-image-exr-of-bytes", ValueError, "EXR", lambda e: write_image(e.tmp / "x.exr", IMAGE))


# == trimesh objects handed to Mesh (float64 vertices, int64 faces) ====================================================

simple("mesh-of-trimesh-vertices", ValueError, "vertices must have dtype float32, got float64",
       lambda e: Mesh(trimesh_box().vertices, trimesh_box().faces))
simple("mesh-of-trimesh-faces", ValueError, "indices must have dtype int32 or uint32, got int64",
       lambda e: Mesh(np.ascontiguousarray(trimesh_box().vertices, dtype=F32), trimesh_box().faces))
simple("mesh-of-a-trimesh", TypeError, "numpy array or a device array, got Trimesh",
       lambda e: Mesh(trimesh_box(), trimesh_box().faces))
simple("triangle-input-of-trimesh-vertices", ValueError, "float32, got float64",
       lambda e: TriangleInput(trimesh_box().vertices))
simple("scene-of-a-trimesh", TypeError, "must be a Mesh", lambda e: Scene([trimesh_box()]))


# == scheduler misuse ==================================================================================================

@case("begin-frame-twice", RuntimeError, "still being recorded")
def _(env: Env):
    sched = env.scheduler()
    sched.begin_frame()
    return sched.begin_frame


@case("submit-a-frame-of-another-scheduler", RuntimeError, "not the frame being recorded")
def _(env: Env):
    a, b = env.scheduler(), env.scheduler()
    foreign = b.begin_frame()
    a.begin_frame()
    return lambda: a.submit(foreign)


@case("submit-a-frame-twice", RuntimeError, "not the frame being recorded")
def _(env: Env):
    sched = env.scheduler()
    with sched.frame() as f:
        pass
    return lambda: sched.submit(f)


@case("begin-frame-on-a-closed-scheduler", RuntimeError, "closed")
def _(env: Env):
    sched = env.scheduler()
    sched.close()
    return sched.begin_frame


@case("frame-on-a-closed-scheduler", RuntimeError, "closed")
def _(env: Env):
    sched = env.scheduler()
    sched.close()

    def act() -> None:
        with sched.frame():
            pass
    return act


@case("submit-on-a-closed-scheduler", RuntimeError, "not the frame being recorded")
def _(env: Env):
    sched = env.scheduler()
    f = sched.begin_frame()
    sched.close()  # forgets the frame being recorded
    return lambda: sched.submit(f)


def _submitted_frame(env: Env) -> tuple[FrameScheduler, Any]:
    """A scheduler (still open) and a frame already submitted and completed."""
    sched = env.scheduler()
    with sched.frame() as f:
        pass
    sched.drain()
    return sched, f


@case("frame-upload-after-its-block", RuntimeError, r"frame \d+ was already submitted")
def _(env: Env):
    _sched, f = _submitted_frame(env)
    return lambda: f.upload(np.zeros(4, F32))


@case("frame-readback-after-its-block", RuntimeError, r"frame \d+ was already submitted")
def _(env: Env):
    sched, f = _submitted_frame(env)
    source = env.ctx.memory.empty((4,), F32, sched.stream)  # freed on that stream, after any copy from it
    env.stack.callback(sched.stream.synchronize)  # an accepted copy has landed before its pinned buffer is let go
    return lambda: f.readback(source, "late")


@case("frame-buffer-after-its-block", RuntimeError, r"frame \d+ was already submitted")
def _(env: Env):
    _sched, f = _submitted_frame(env)
    return lambda: f.buffer("late", (4,), F32)


@case("handle-of-an-aborted-frame", FrameAbortedError, "aborted")
def _(env: Env):
    sched = env.scheduler()
    with contextlib.suppress(ZeroDivisionError), sched.frame() as f:
        f.upload(np.zeros(4, F32))  # GPU work enqueued: the frame is fenced and marked aborted
        raise ZeroDivisionError("inside the frame")
    return lambda: f.handle.result(timeout=30)


@case("handle-of-a-frame-aborted-before-any-gpu-work", FrameAbortedError, "aborted")
def _(env: Env):
    sched = env.scheduler()
    with contextlib.suppress(ZeroDivisionError), sched.frame() as f:
        raise ZeroDivisionError("before any GPU work")
    return lambda: f.handle.result(timeout=1.0)


@case("launch-in-a-scheduler-without-parameters", RuntimeError, "without params_dtype")
def _(env: Env):
    f = env.scheduler().begin_frame()
    renderer = HelloRenderer(env.ctx)
    env.stack.callback(renderer.close)
    return lambda: f.launch(renderer.pipeline, renderer.sbt, 8, 8)


# == context misuse ====================================================================================================

simple("context-unknown-abi", ValueError, "not supported by optixasync", lambda e: optixasync.Context(abi=1))


def on_closed_context(case_id: str, call: Callable[[Any], Any]) -> None:
    """A case that calls ``call(closed)`` with a context created and closed beforehand."""
    def arrange(env: Env) -> Callable[[], Any]:
        closed = env.closed_context()
        return lambda: call(closed)
    case(case_id, RuntimeError, "context is closed")(arrange)


on_closed_context("module-on-a-closed-context", lambda closed: Module(closed, "busy.cu"))
on_closed_context("structure-on-a-closed-context", lambda closed: GeometryAccel(closed, TriangleInput(TRI)))
on_closed_context("factory-on-a-closed-context", lambda closed: GeometryAccel(closed, TriangleInput(TRI)))
on_closed_context("scheduler-on-a-closed-context", lambda closed: FrameScheduler(closed, 2))
on_closed_context("pipeline-on-a-closed-context",
                  lambda closed: RenderPipeline(closed, cornell_box(), RenderOptions(width=8, height=8, spp=1)))


@case("instance-accel-on-a-closed-context", RuntimeError, "context is closed")
def _(env: Env):
    instance = Instance(env.gas())
    closed = env.closed_context()
    return lambda: InstanceAccel(closed, [instance])


@case("upload-on-a-closed-context", RuntimeError, "closed")
def _(env: Env):
    closed = env.closed_context()
    env.stack.callback(closed.stream.synchronize)  # an accepted copy has landed before its staging is let go
    return lambda: closed.upload(np.zeros(4, F32))


simple("require-own-of-a-plain-object", ValueError, "no optixasync context",
       lambda e: e.ctx.require_own(object(), "the thing"))


@case("instance-of-a-structure-of-another-context", ValueError, "another context")
def _(env: Env):
    other = env.other_context()
    instance = Instance(GeometryAccel(other, TriangleInput(TRI)))
    return lambda: InstanceAccel(env.ctx, [instance])


@case("program-group-of-a-module-of-another-context", ValueError, "another context")
def _(env: Env):
    module = Module(env.other_context(), "busy.cu")
    return lambda: ProgramGroup.raygen(env.ctx, module, "__raygen__busy")


@case("launch-of-a-pipeline-of-another-context", ValueError, "another context")
def _(env: Env):
    renderer = HelloRenderer(env.other_context())  # closed with its context
    sched = env.scheduler(params_dtype=HELLO_PARAMS)
    gas = env.gas()

    def act() -> None:
        with sched.frame() as f:
            renderer.record(f, gas.handle, 8, 8)  # refused before the launch: nothing reaches the GPU
    return act


@case("structure-of-another-context-is-refused-by-require-own", ValueError, "another context")
def _(env: Env):
    gas = GeometryAccel(env.other_context(), TriangleInput(TRI))
    return lambda: env.ctx.require_own(gas, "the structure")


# == the render pipeline ===============================================================================================

simple("pipeline-without-a-context", TypeError, "ctx must be an optixasync.Context",
       lambda e: RenderPipeline(None, cornell_box()))
simple("pipeline-context-and-scene-swapped", TypeError, "ctx must be an optixasync.Context",
       lambda e: RenderPipeline(cornell_box(), e.ctx))
simple("pipeline-not-a-scene", TypeError, "scene must be an optixasync.scene.Scene",
       lambda e: RenderPipeline(e.ctx, [rectangle()]))
simple("pipeline-empty-scene", ValueError, "no meshes", lambda e: RenderPipeline(e.ctx, Scene([])))
simple("pipeline-unknown-option", TypeError, "unknown RenderOptions option",
       lambda e: RenderPipeline(e.ctx, cornell_box(), {"spp_per_frame": 4}))
simple("pipeline-options-of-another-type", TypeError, "expected RenderOptions",
       lambda e: RenderPipeline(e.ctx, cornell_box(), 16))
simple("pipeline-unknown-integrator", ValueError, "integrator must be one of",
       lambda e: RenderPipeline(e.ctx, cornell_box(), integrator="photon"))
simple("pipeline-unknown-output", ValueError, "unknown output 'depth_of_field'",  # depth is an output
       lambda e: RenderPipeline(e.ctx, cornell_box(), outputs=("image", "depth_of_field")))
simple("pipeline-outputs-that-are-not-names", TypeError, "outputs must be output names",
       lambda e: RenderPipeline(e.ctx, cornell_box(), outputs=[3]))
simple("pipeline-output-no-stage-makes", ValueError, "cannot write 'denoised'",
       lambda e: RenderPipeline(e.ctx, cornell_box(), outputs=("image", "denoised")))
simple("pipeline-stage-that-is-not-a-stage", TypeError, "stages must be Stage objects",
       lambda e: RenderPipeline(e.ctx, cornell_box(), stages=[lambda frame, buffers: None]))
simple("pipeline-readback-it-does-not-make", ValueError, "do not make 'albedo'",
       lambda e: RenderPipeline(e.ctx, cornell_box(), readback="albedo"))
simple("pipeline-zero-frames-in-flight", ValueError, "frames_in_flight",
       lambda e: RenderPipeline(e.ctx, cornell_box(), frames_in_flight=0))
simple("tonemap-of-an-8-bit-output", ValueError, "linear float output", lambda e: Tonemap("image"))
simple("tonemap-of-an-unknown-output", ValueError, "unknown output 'depth_of_field'",
       lambda e: Tonemap("depth_of_field"))
simple("write-images-to-a-jpg", ValueError, "unsupported image format '.jpg'", lambda e: WriteImages(e.tmp / "x.jpg"))
simple("denoise-without-its-guides", ValueError, "albedo=True and normal=True",
       lambda e: Denoise({"albedo": True, "normal": False}))


def _recording(env: Env, **kwargs: Any) -> Any:
    """A frame being recorded in a scheduler of the shared pipeline's layout (closed after the case)."""
    sched = env.scheduler(params_dtype=env.pipeline.params_dtype, **kwargs)
    return sched.begin_frame()


@case("record-into-a-frame-without-the-pipeline-layout", ValueError, "layout")
def _(env: Env):
    f = env.scheduler().begin_frame()
    return lambda: env.pipeline.record(f)


@case("record-into-a-frame-of-another-layout", ValueError, "layout")
def _(env: Env):
    f = env.scheduler(params_dtype=HELLO_PARAMS).begin_frame()
    return lambda: env.pipeline.record(f)


@case("record-zero-samples", ValueError, "spp")
def _(env: Env):
    f = _recording(env)
    return lambda: env.pipeline.record(f, 0)


@case("record-fractional-samples", TypeError, "spp")
def _(env: Env):
    f = _recording(env)
    return lambda: env.pipeline.record(f, 1.5)


@case("record-readback-that-is-not-a-name", TypeError, "readback")
def _(env: Env):
    f = _recording(env)
    return lambda: env.pipeline.record(f, 1, readback=5)


@case("record-readback-of-an-output-it-does-not-make", ValueError, "do not make 'normal'")
def _(env: Env):
    f = _recording(env)
    return lambda: env.pipeline.record(f, 1, readback="normal")


@case("record-camera-that-is-not-a-camera", TypeError, "camera")
def _(env: Env):
    f = _recording(env)
    return lambda: env.pipeline.record(f, 1, readback=None, camera="front")


@case("record-twice-in-one-frame", RuntimeError, "once per frame")
def _(env: Env):
    f = _recording(env)
    env.pipeline.record(f, 1, readback=None)  # launched: closing the scheduler fences it as aborted
    return lambda: env.pipeline.record(f, 1, readback=None)


@case("pipeline-options-of-another-size", ValueError, "image size is fixed")
def _(env: Env):
    return lambda: setattr(env.pipeline, "options", RenderOptions(width=32, height=16))


@case("pipeline-camera-that-is-not-a-camera", TypeError, "camera must be an optixasync.scene.Camera")
def _(env: Env):
    return lambda: setattr(env.pipeline, "camera", (0.0, 0.0, 4.0))


@case("render-more-samples-than-the-sample-index", ValueError, "32-bit sample index")
def _(env: Env):
    return lambda: env.pipeline.render(2**40)


@case("render-progress-that-is-not-callable", TypeError, "callable")
def _(env: Env):
    return lambda: env.pipeline.render(1, progress=5)


@case("still-readback-it-does-not-make", ValueError, "do not make 'denoised'")
def _(env: Env):
    return lambda: env.pipeline.still(1, readback="denoised")


@case("frames-of-a-negative-count", ValueError, "count")
def _(env: Env):
    return lambda: list(env.pipeline.frames(-1))


@case("frames-of-fractional-samples", TypeError, "spp")
def _(env: Env):
    return lambda: list(env.pipeline.frames(1, 0.5, readback=None))


@case("pipeline-vertices-of-a-missing-mesh", IndexError, "out of range")
def _(env: Env):
    return lambda: env.pipeline.vertices(99)


@case("pipeline-refit-without-dynamic-meshes", ValueError, "no dynamic mesh")
def _(env: Env):
    return lambda: env.pipeline.refit()


@case("render-after-close", RuntimeError, "closed")
def _(env: Env):
    pipeline = RenderPipeline(env.ctx, cornell_box(), RenderOptions(width=8, height=8, spp=1))
    pipeline.close()
    return pipeline.render


@case("record-after-close", RuntimeError, "closed")
def _(env: Env):
    pipeline = RenderPipeline(env.ctx, cornell_box(), RenderOptions(width=8, height=8, spp=1))
    pipeline.close()
    f = env.scheduler(params_dtype=pipeline.params_dtype).begin_frame()
    return lambda: pipeline.record(f)


# == the matrix ========================================================================================================


def settled_device_bytes(ctx: Any) -> int:
    """The device pool's used bytes once every dropped object is collected and every stream-ordered free has run."""
    import cupy

    for attr in ("last_type", "last_value", "last_traceback", "last_exc"):  # pytest keeps the last exception here,
        if hasattr(sys, attr):                                              # and with it the locals of that test
            setattr(sys, attr, None)
    for _ in range(3):
        gc.collect()
        cupy.cuda.Device().synchronize()  # a measurement point: the test may wait
        ctx.deferred.collect()
    return ctx.memory.used_bytes()


@dataclass
class Baseline:
    device_bytes: int
    threads: set[threading.Thread]


@pytest.fixture(scope="module")
def pipeline(ctx):
    """A small render pipeline shared by the cases; its memory is made to stay put for the module up front."""
    with RenderPipeline(ctx, cornell_box(), RenderOptions(width=16, height=16, spp=1)) as shared:
        # The first still compacts the structure (it waits for the size) and makes the pipeline's scheduler; one
        # still per slot gives every slot its still buffer: the only changes its memory would see.
        for _ in range(shared.frames_in_flight):
            shared.render(1)
        yield shared


@pytest.fixture(scope="module", autouse=True)
def baseline(ctx, pipeline) -> Baseline:
    """The device bytes and threads before the matrix (after the shared pipeline and its scheduler exist)."""
    return Baseline(settled_device_bytes(ctx), set(threading.enumerate()))


@pytest.mark.parametrize("arrange, exc, match", CASES)
def test_bad_input_raises_its_documented_exception(ctx, pipeline, tmp_path, arrange, exc, match):
    with contextlib.ExitStack() as stack:
        mistake = arrange(Env(ctx, pipeline, stack, tmp_path))
        with pytest.raises(exc, match=match):
            mistake()


def test_closing_twice_is_harmless(ctx):
    other = optixasync.Context(warm_up=False)
    gas = GeometryAccel(other, TriangleInput(TRI))
    sched = FrameScheduler(other, 2)
    with sched.frame():
        pass
    pipeline = RenderPipeline(other, cornell_box(), RenderOptions(width=8, height=8, spp=1))
    pipeline.render(1)  # with its own scheduler
    for resource in (sched, gas, pipeline):
        resource.close()
        resource.close()
    other.close()
    other.close()
    assert other.closed and sched.closed and gas.handle == 0 and pipeline.scheduler.closed


def test_after_the_matrix_the_context_works_and_nothing_was_left_behind(ctx, pipeline, baseline):
    used = settled_device_bytes(ctx)
    extra = [t.name for t in set(threading.enumerate()) - baseline.threads if t.is_alive()]
    assert extra == [], f"threads left running by the matrix: {extra}"
    assert used == baseline.device_bytes, f"device pool: {used - baseline.device_bytes:+d} bytes after the matrix"

    result = render_triangle(ctx, 64, 64)  # compiles, builds, launches and reads back on the shared context
    hit = result.image[..., 3] >= 0  # alpha: hit distance, -1 on a miss
    assert hit[32, 32] and not hit[0, 0] and not hit[63, 63]
    assert 0.2 < hit.mean() < 0.4  # the default triangle covers 30% of the view (1.2 of its 4 square units)
    image = pipeline.render(2)  # the shared pipeline, after every misuse of it
    assert image.shape == (16, 16, 3) and np.isfinite(image).all() and image.max() > 0
    assert settled_device_bytes(ctx) == baseline.device_bytes
