"""Arrays in and out without copies, on a GPU: PyTorch (and, when it runs, JAX) tensors as geometry, images out.

* A GAS built (and refitted) from PyTorch tensors written by PyTorch kernels on a PyTorch stream hits exactly
  what a numpy reference of the same triangles hits: the build stream waited, on the GPU, for PyTorch's stream.
* A Cornell box whose vertices are PyTorch tensors renders bit for bit like the one from numpy meshes, and the
  kernel reads PyTorch's memory (no copy).
* ``torch.from_dlpack(pipeline.accumulation)`` shares the accumulation's memory, and ordered on the frames'
  stream it sees the frame's result without a host wait.
* A build behind a busy PyTorch stream does not block the host (``syncwatch``), and still sees the vertices
  written after the busy work; CuPy's own CAI import of the same kind of array does block, which is why it is
  not used.

PyTorch's stream order is its *current* stream (that is what its ``__dlpack__`` orders our stream after), so
the tensors are handed over inside the ``torch.cuda.stream(...)`` block that produced them.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import weakref
from pathlib import Path

import numpy as np
import pytest

from optixasync.accel import AccelOptions, GeometryAccel, RayCaster, TriangleInput
from optixasync.cuda import consume_device_array, create_stream, spin_gpu
from optixasync.render import RenderOptions, RenderPipeline
from optixasync.scene import Mesh, Scene, cornell_box
from optixasync.scheduler import FrameScheduler

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 200_000_000  # torch.cuda._sleep: ~0.1 s at an H200's ~2 GHz clock
BUSY_NS = 20_000_000  # spin_gpu: 20 ms of work queued ahead of what is checked
NUM_RAYS = 4096
T_TOLERANCE = 1e-4


def load_reference():
    """``tests/accel/reference.py`` (a numpy closest-hit reference), loaded by path."""
    spec = importlib.util.spec_from_file_location("accel_reference", Path(__file__).parent / "accel" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = load_reference()


@pytest.fixture(scope="module")
def torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch was built without CUDA or sees no GPU")
    return torch


@pytest.fixture(scope="module")
def caster(ctx):
    return RayCaster(ctx)


@pytest.fixture
def cupti():
    try:
        import cupti.cupti  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"cupti-python is not installed ({exc}): pip install 'optixasync[diagnostics]'")


# --- geometry and the comparison ------------------------------------------------------------------------------------


def random_mesh(rng: np.random.Generator, num_triangles: int = 1500, size: float = 0.05):
    """Small random triangles in [-1, 1]^3, in shuffled vertex order (the indices matter)."""
    centres = rng.uniform(-0.95, 0.95, (num_triangles, 1, 3))
    corners = (centres + rng.normal(0.0, size, (num_triangles, 3, 3))).reshape(-1, 3).astype(np.float32)
    order = rng.permutation(len(corners))
    return np.ascontiguousarray(corners[order]), np.argsort(order).reshape(-1, 3).astype(np.int32)


def random_rays(rng: np.random.Generator, vertices: np.ndarray, indices: np.ndarray, count: int = NUM_RAYS):
    """Rays from a sphere of radius 3, half aimed at points on random triangles (hits), half into the box."""
    origins = rng.normal(size=(count, 3))
    origins *= 3.0 / np.linalg.norm(origins, axis=1, keepdims=True)
    targets = rng.uniform(-1.0, 1.0, (count, 3))
    triangles = vertices.astype(np.float64)[indices][rng.integers(0, len(indices), count)]
    aimed = rng.random(count) < 0.5
    targets[aimed] = np.einsum("rk,rkj->rj", rng.dirichlet(np.ones(3), count), triangles)[aimed]
    return origins.astype(np.float32), (targets - origins).astype(np.float32)


def assert_hits_match(gpu: dict, vertices: np.ndarray, indices: np.ndarray, origins, directions) -> None:
    """Every ray whose closest hit float32 can decide agrees with the float64 reference (as in test_accel_gpu)."""
    ref = reference.cast_reference(vertices, indices, origins, directions)
    scale = float(max(np.abs(origins).max(), np.abs(vertices).max()))
    clear = ~reference.ambiguous_rays(ref, bary_margin=1e-4, t_rel=1e-5, edge_margin=2e-5 * scale, min_cos=2e-3)
    assert clear.mean() >= 0.95, f"only {clear.sum()} of {len(clear)} rays are unambiguous"
    hits = clear & ref["hit"]
    assert 0.2 < hits.sum() / clear.sum() < 0.95, "the scene should give a mix of hits and misses"
    wrong = np.flatnonzero(clear & (gpu["hit"] != ref["hit"]))
    assert len(wrong) == 0, f"{len(wrong)} rays hit on one side only (first: {wrong[:8]})"
    wrong = np.flatnonzero(hits & (gpu["prim"] != ref["prim"]))
    assert len(wrong) == 0, f"{len(wrong)} rays hit another primitive (first: {wrong[:8]})"
    np.testing.assert_allclose(gpu["t"][hits], ref["t"][hits], rtol=T_TOLERANCE)


def torch_mesh(torch, vertices: np.ndarray, indices: np.ndarray):
    """The mesh as CUDA tensors written by PyTorch kernels on PyTorch's current stream (exact: scaling by 2)."""
    half = torch.tensor(vertices / np.float32(2), device="cuda")
    wide = torch.tensor(indices.astype(np.int64), device="cuda")
    return half * 2, wide.to(torch.int32)


# --- builds and refits from PyTorch tensors -------------------------------------------------------------------------


def test_gas_from_torch_tensors_written_on_a_torch_stream(ctx, caster, torch):
    rng = np.random.default_rng(71)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, vertices, indices)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        v, idx = torch_mesh(torch, vertices, indices)
        assert v.dtype == torch.float32 and idx.dtype == torch.int32 and v.is_cuda
        gas = GeometryAccel(ctx, TriangleInput(v, idx))  # built on ctx.stream, after `side` on the GPU
        seen = consume_device_array(v, ctx.stream, name="v", device=ctx.device_id, dtype=np.float32)
    assert gas.stream is ctx.stream
    assert seen.protocol == "dlpack" and seen.array.data.ptr == v.data_ptr()  # PyTorch's memory itself
    assert_hits_match(caster.cast(gas, origins, directions), vertices, indices, origins, directions)

    # the structure keeps the tensors alive while it may read them; closing lets them go once the build has passed
    alive = weakref.ref(v)
    del v, seen
    gc.collect()
    assert alive() is not None
    gas.close()
    ctx.stream.synchronize()
    ctx.deferred.collect()
    gc.collect()
    assert alive() is None


def test_refit_from_torch_tensors(ctx, caster, torch):
    rng = np.random.default_rng(72)
    vertices, indices = random_mesh(rng)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True))
    moved = (vertices + np.float32(0.25)).astype(np.float32)
    half = torch.tensor(moved / np.float32(2), device="cuda")  # a copy from pageable memory: the host waits here
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(SLEEP_CYCLES // 4)  # the new positions arrive late: the refit must wait for them
        v = half * 2
        gas.refit(v)  # on the build stream, after `side`
    origins, directions = random_rays(rng, moved, indices)
    assert_hits_match(caster.cast(gas, origins, directions), moved, indices, origins, directions)
    assert gas.refits == 1


def test_build_behind_a_busy_torch_stream_does_not_block_the_host(ctx, caster, torch, cupti):
    from optixasync.diagnostics import syncwatch

    rng = np.random.default_rng(73)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, vertices, indices)
    half = torch.tensor(vertices / np.float32(2), device="cuda")
    wide = torch.tensor(indices.astype(np.int64), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        # warm-up outside the watch: PyTorch's kernels load, its allocator caches blocks of these sizes on
        # `side`, one build from tensors runs; the warm-up vertices are zeros, so a build that did not wait
        # for the real ones below would see zeros (the allocator hands the same blocks back)
        torch.cuda._sleep(1000)
        warm = GeometryAccel(ctx, TriangleInput(torch.zeros_like(half) * 2, wide.to(torch.int32)))
        warm.close()
    side.synchronize()
    ctx.stream.synchronize()
    ctx.deferred.collect()
    del warm
    gc.collect()

    # An OptiX call under CUPTI can take a few ms of CUPTI's own time (docs/benchmarks.md): count it as blocked
    # only from 25 ms on. A build that waited for PyTorch's ~100 ms of work would still be caught, and any
    # synchronization inside it is reported by the driver callbacks whatever its length.
    with torch.cuda.stream(side):
        with syncwatch(optix_block_ms=25.0) as watch:
            torch.cuda._sleep(SLEEP_CYCLES)  # PyTorch's stream is busy...
            v = half * 2  # ...and writes the vertices only after that
            idx = wide.to(torch.int32)
            gas = GeometryAccel(ctx, TriangleInput(v, idx))
            pending = not gas.ready.done  # an event query: the build is queued behind PyTorch's work
    report = watch.report
    print(report.render())
    # Measured on an H200: OptiX synchronizes two of its own events inside this build (0.077 ms together, the
    # build 0.29 ms in all) while PyTorch's ~100 ms of work is still queued: they are not waits for the
    # producer. A wait for PyTorch's stream would take the ~100 ms; anything from 1 ms on counts.
    report.assert_no_sync(min_ms=1.0)
    assert pending, "the build had finished before PyTorch's stream: it did not wait for it"
    assert_hits_match(caster.cast(gas, origins, directions), vertices, indices, origins, directions)


# --- CuPy: CAI version 3 waited for on the GPU; CuPy's own import waits on the host ----------------------------------


class InterfaceOnly:
    """An object exposing only a (fixed) ``__cuda_array_interface__`` dict."""

    def __init__(self, interface: dict, owner) -> None:
        self.__cuda_array_interface__ = interface
        self.owner = owner


def test_cupy_interface_stream_is_waited_for_on_the_gpu(ctx, cupti):
    import cupy

    from optixasync.diagnostics import syncwatch

    producer = create_stream()
    with producer:
        a = cupy.zeros(1 << 20, cupy.float32)  # CuPy's pool: a foreign array for optixasync
        a += 1  # compiles and loads the kernel outside the watch
        a[...] = 0
    consume_device_array(a, ctx.stream, device=ctx.device_id)  # first event of the kind, outside the watch
    spin_gpu(0, producer)
    producer.synchronize()
    with syncwatch() as watch:
        with producer:  # CuPy's CAI names its current stream
            spin_gpu(BUSY_NS, producer)
            a += 1
            consumed = consume_device_array(a, ctx.stream, name="a", device=ctx.device_id, dtype=np.float32)
    watch.report.assert_no_sync()
    assert consumed.protocol == "cuda_array_interface" and consumed.producer_stream == producer.ptr
    assert consumed.array.data.ptr == a.data.ptr and consumed.event is not None
    host = cupy.asnumpy(consumed.array, stream=ctx.stream)  # on the consumer stream: after the write, on the GPU
    np.testing.assert_array_equal(host, 1.0)

    if os.environ.get("CUPY_CUDA_ARRAY_INTERFACE_SYNC", "1") != "0":
        with producer:
            interface = a.__cuda_array_interface__
        with syncwatch() as watch:
            spin_gpu(BUSY_NS, producer)
            cupy.asarray(InterfaceOnly(interface, a))  # CuPy's CAI import: cudaStreamSynchronize on that stream
        assert any(r.category == "stream-sync" for r in watch.report.stalls), watch.report.render()


# --- rendering with PyTorch vertices, images out to PyTorch ---------------------------------------------------------


def test_render_with_torch_vertices_equals_the_numpy_render(ctx, torch):
    scene = cornell_box()
    options = RenderOptions(width=48, height=48, spp=8, seed=5)
    with RenderPipeline(ctx, scene, options) as pipeline:
        expected = pipeline.render()
    meshes = [Mesh(torch.tensor(m.vertices, device="cuda"), m.indices, m.material, m.name) for m in scene.meshes]
    on_device = Scene(meshes, scene.camera)
    assert all(m.on_device for m in on_device.meshes)
    with RenderPipeline(ctx, on_device, options) as pipeline:
        image = pipeline.render()
        assert pipeline.last_nonfinite == 0
        for k, mesh in enumerate(meshes):
            assert pipeline.vertices(k).data.ptr == mesh.vertices.data_ptr()  # the kernel reads PyTorch's memory
    np.testing.assert_array_equal(image, expected)  # same geometry, same seed: bit for bit


def test_accumulation_goes_to_torch_without_a_copy_or_a_host_wait(ctx, torch):
    import cupy

    options = RenderOptions(width=32, height=32, spp=4, seed=3)
    with RenderPipeline(ctx, cornell_box(), options) as pipeline:
        sched = FrameScheduler(ctx, 2, params_dtype=pipeline.params_dtype)
        try:
            with sched.frame() as f:
                spin_gpu(BUSY_NS, f)  # the frame's result arrives late
                pipeline.record(f, 4, readback=None)
            with sched.stream:  # CuPy's current stream = the frames' stream: PyTorch's stream waits for it
                accum = torch.from_dlpack(pipeline.accumulation)
            snapshot = accum.clone()  # on PyTorch's current stream, after the frame (GPU-side)
            assert accum.data_ptr() == pipeline.accumulation.data.ptr  # the same memory: no copy
            assert tuple(accum.shape) == (32, 32, 4) and accum.dtype == torch.float32 and accum.is_cuda
            sched.drain()
            host = cupy.asnumpy(pipeline.accumulation)
        finally:
            sched.close()
        np.testing.assert_array_equal(snapshot.cpu().numpy(), host)
        assert host[..., :3].sum() > 0 and (host[..., 3] == 0).all()
        del accum, snapshot


# --- JAX, when it runs here -----------------------------------------------------------------------------------------


def test_jax_arrays_build_a_gas(ctx, caster):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU's memory to the others
    try:
        import jax

        gpus = jax.devices("gpu")
    except ImportError as exc:
        pytest.skip(f"JAX is not installed ({exc})")
    except Exception as exc:  # no GPU backend (RuntimeError), or a plugin that fails to start
        pytest.skip(f"JAX has no GPU backend here ({type(exc).__name__}: {exc})")
    device = next((d for d in gpus if getattr(d, "local_hardware_id", d.id) == ctx.device_id), None)
    if device is None:
        pytest.skip(f"JAX does not see CUDA device {ctx.device_id}")
    rng = np.random.default_rng(74)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, vertices, indices)
    v = jax.device_put(vertices / np.float32(2), device) * 2  # computed by XLA, maybe still running
    idx = jax.device_put(indices, device)
    gas = GeometryAccel(ctx, TriangleInput(v, idx))  # DLPack: JAX makes the build stream wait for its buffers
    assert_hits_match(caster.cast(gas, origins, directions), vertices, indices, origins, directions)
