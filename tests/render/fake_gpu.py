"""A stand-in for everything below the render pipeline that needs a GPU, for CPU tests of the pipeline's logic.

The real :class:`~optixasync.render.RenderPipeline` runs over these: a context without a driver, a device scene
without tables, an integrator that "renders" a constant radiance into numpy buffers (0.5 per sample, so that a
mean is 0.5 and the sums count the samples), and a scheduler whose frames complete ``frames_in_flight - 1``
submissions late, like a GPU-bound pipeline. What the pipeline asked of them is recorded: each launch (its
samples, offset, accumulate flag, outputs, camera), each readback, each stage's frame.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import numpy as np

from optixasync.cuda import Context
from optixasync.io import tonemap_srgb
from optixasync.render import Integrator
from optixasync.render._lanes import add_lanes_host
from optixasync.render._layout import PATH_PARAMS, SCENE_RECORD
from optixasync.render._outputs import VIEWS, WORLDS
from optixasync.render._path import PathIntegrator
from optixasync.scheduler import FrameResult, FrameStats, SchedulerStats

#: The radiance every fake sample carries.
RADIANCE = 0.5


class DeviceArray(np.ndarray):
    """A numpy array standing for a device array: ``.data.ptr`` is its address, as CuPy's."""

    @property
    def data(self):  # noqa: D401 (CuPy's attribute)
        return SimpleNamespace(ptr=self.ctypes.data)


def device_array(array) -> DeviceArray:
    """A copy of ``array`` as a :class:`DeviceArray`."""
    return np.array(array).view(DeviceArray)


class FakeDeferred:
    """The context's deferred release on a GPU that is done at once: the sets handed to it, dropped at collect()."""

    def __init__(self) -> None:
        self.held: list = []
        self.collected = 0

    def hold(self, event, *objects) -> None:
        self.held.append((event, objects))

    def after(self, stream, *objects) -> None:
        self.held.append((stream, objects))

    def collect(self) -> int:
        count, self.held = len(self.held), []
        self.collected += count
        return count

    def __len__(self) -> int:
        return len(self.held)


class FakeContext(Context):
    """An open context without a driver: numpy 'device' memory, resources tracked, uploads recorded."""

    def __init__(self) -> None:  # no super().__init__(): it would load the driver
        self.handle = 0xC0DE
        self.device_id = 0
        self.stream = "ctx stream"
        self.memory = SimpleNamespace(empty=lambda shape, dtype, stream: np.zeros(shape, dtype).view(DeviceArray),
                                      scope=lambda stream: contextlib.nullcontext())
        self.tracked: list = []
        self.uploads: list = []
        self.closed_count = 0
        self.deferred = FakeDeferred()

    def upload(self, array, stream=None):
        self.uploads.append(np.array(array))
        return device_array(array)

    def track(self, resource):
        self.tracked.append(resource)
        return resource

    def close(self) -> None:
        self.closed_count += 1

    def __exit__(self, *exc) -> None:
        self.close()


class FakeReadiness:
    def __init__(self) -> None:
        self.event = "ready"

    def record(self, stream):
        return self.event

    def order(self, stream) -> int:
        return 0


class FakeDeviceScene:
    """The device scene: its record, the dynamic meshes' vertex arrays, refits and compactions recorded."""

    instances: list[FakeDeviceScene] = []

    def __init__(self, ctx, scene, stream, emitters=None, *, instances=False, checked=False) -> None:
        self.scene, self.stream = scene, stream
        self.record = np.zeros((), SCENE_RECORD)
        self.hit_records = len(scene.meshes)
        self.hit_kinds = ("triangle",) * len(scene.meshes)
        self.instanced = bool(scene.instanced) or instances
        self.moving = bool(scene.moving)
        self.tables = SimpleNamespace(materials=SimpleNamespace(indices=_material_indices(scene)))
        self.ready = FakeReadiness()
        self.accel = SimpleNamespace(ready=SimpleNamespace(event=None))
        self.refits: list = []
        self.placements: list = []  # (transforms, stream) of each place()
        self.compactions: list = []
        self.table_updates: list = []  # (TableUpdate, stream) of each update_tables()
        self._updates = None
        self.generation = 0
        self.closed = False
        self._vertices = [np.array(m.vertices, np.float32) for m in scene.meshes]
        FakeDeviceScene.instances.append(self)

    def order(self, stream) -> int:
        return 0

    @property
    def updates(self):
        """The library's table updates over the scene's tables placed in host memory (made on first use)."""
        if self._updates is None:
            from host_build import HostPlacement

            from optixasync.render._table_updates import TableUpdates
            from optixasync.render._tables import SceneTables

            placement = HostPlacement()
            self._updates = TableUpdates(SceneTables(self.scene, placement), placement)
        return self._updates

    def update_tables(self, update, stream) -> None:
        self.table_updates.append((update, stream))
        self.updates.apply(update, stream)

    def compact(self, stream, wait=False) -> None:
        self.compactions.append(wait)

    def vertices(self, mesh_index, stream=None):
        return self._vertices[mesh_index]

    def refit(self, stream) -> None:
        self.refits.append(stream)

    def place(self, transforms, stream) -> None:
        from optixasync.render._device_scene import placement_matrices

        self.placements.append((placement_matrices(transforms, len(self.scene.meshes)), stream))

    def close(self) -> None:
        self.closed = True


def _material_indices(scene) -> list[int]:
    index: dict = {}
    return [index.setdefault(m.material, len(index)) for m in scene.meshes]


class FakeIntegrator(Integrator):
    """The path integrator's outputs and layout; each launch adds RADIANCE per sample to the accumulation."""

    name = "path"
    outputs = PathIntegrator.outputs
    params_dtype = PATH_PARAMS
    needs_sums = PathIntegrator.needs_sums
    instances: list[FakeIntegrator] = []

    def __init__(self, ctx, scene, variants) -> None:
        self.variants = [frozenset(v) for v in variants]
        self.closed = False
        FakeIntegrator.instances.append(self)

    def launch(self, frame, launch, params=None) -> None:
        batch = launch.batch
        flags = set() if batch is None else {VIEWS, WORLDS} if batch.worlds else {VIEWS}
        assert frozenset({*launch.outputs, *flags}) in self.variants, (sorted(launch.outputs), flags, self.variants)
        lanes = batch.lanes if batch is not None else 1
        per = -(-launch.spp // lanes)  # lane l adds samples [l * per, (l + 1) * per) of the launch, as the kernel
        shares = np.clip(launch.spp - per * np.arange(lanes), 0, per).astype(np.float32)
        planes = (launch.accum[: batch.views * lanes].reshape(batch.views, lanes, *launch.accum.shape[-3:])
                  if lanes > 1 else launch.accum[None, None])
        added = (np.float32(RADIANCE) * shares)[None, :, None, None, None]
        if launch.accumulate:
            planes[..., :3] += added
        else:
            planes[..., :3] = added
            planes[..., 3] = 0.0
        total = np.float32(launch.sample_offset + launch.spp)
        for name, buffer in launch.outputs.items():
            mean = np.broadcast_to(np.float32(RADIANCE), buffer.shape[:-1] + (3,))
            if name == "image":
                buffer[..., :3] = tonemap_srgb(mean)
                buffer[..., 3] = 255
            elif name == "rays":
                buffer[...] += launch.spp  # one camera, bounce and shadow ray per sample
            elif buffer.shape[-1] == 4:
                buffer[..., :3] = mean if name == "radiance" else 1.0
                buffer[..., 3] = 1.0
            else:
                buffer[...] = total if name == "spp" else 1
        frame.launches.append(SimpleNamespace(spp=launch.spp, offset=launch.sample_offset, accumulate=launch.accumulate,
                                              outputs=sorted(launch.outputs), sums=launch.sums is not None,
                                              basis=launch.basis, own_params=params is not None, batch=batch,
                                              lanes=lanes, accum_shape=launch.accum.shape))

    def close(self) -> None:
        self.closed = True


class FakeFrame:
    """A frame being recorded: its slot's buffers, its launches and readbacks."""

    def __init__(self, scheduler: FakeScheduler, index: int) -> None:
        self.index, self.slot = index, index % scheduler.n
        self.stream = scheduler.stream
        self.ctx = scheduler.ctx
        self.frames_in_flight = scheduler.n
        self.params = np.zeros((), scheduler.params_dtype)
        self.launched = False
        self.work = self.key = self.eager_reason = None
        self.graph = self.capturing = False
        self.launches: list = []
        self.readbacks: dict[str, np.ndarray] = {}
        self.held: list = []
        self.handle = SimpleNamespace(result=lambda: scheduler.result_of(self))
        self._buffers = scheduler.slot_buffers[self.slot]

    def __cuda_stream__(self):
        return 0, 0x5000

    def buffer(self, name, shape, dtype):
        current = self._buffers.get(name)
        if current is None or current.shape != tuple(shape) or current.dtype != np.dtype(dtype):
            self._buffers[name] = current = np.zeros(shape, dtype).view(DeviceArray)
        return current

    def readback(self, array, name) -> None:
        self.readbacks[name] = np.array(array)

    def hold(self, *objects) -> None:
        self.held.extend(objects)


class FakeScheduler:
    """Frames complete ``frames_in_flight - 1`` submissions late; results carry the frames' readbacks."""

    instances: list[FakeScheduler] = []

    def __init__(self, ctx, frames_in_flight, *, params_dtype=None, options=None, stream=None, graphs=False) -> None:
        self.ctx, self.n, self.params_dtype, self.stream, self.options = ctx, frames_in_flight, params_dtype, stream, options
        self.slot_buffers: list[dict] = [{} for _ in range(frames_in_flight)]
        self.pending: list[FakeFrame] = []
        self.frames: list[FakeFrame] = []
        self.stats = SchedulerStats()
        self.closed = False
        self._results: dict[int, FrameResult] = {}
        FakeScheduler.instances.append(self)

    def frame(self, work=None, *, graph=None, key=None):
        @contextlib.contextmanager
        def recording():
            frame = FakeFrame(self, len(self.frames))
            yield frame
            self.frames.append(frame)
            self.pending.append(frame)

        return recording()

    def _retire(self, frames):
        out = []
        for frame in frames:
            k = frame.index
            self.stats.add(FrameStats(index=k, gpu_ms=4.0, gap_us=10.0, in_flight=self.n, ahead=self.n - 1,
                                      submit_ms=0.1, waited=True, host_begin=0.005 * k, host_done=0.005 * k + 0.005))
            self._results[k] = FrameResult(k, dict(frame.readbacks), self.stats.frames[-1])
            out.append(self._results[k])
        return out

    def result_of(self, frame: FakeFrame) -> FrameResult:
        if frame in self.pending:
            self.pending.remove(frame)
            self._retire([frame])
        return self._results[frame.index]

    def poll(self):
        keep = self.n - 1
        ready, self.pending = (self.pending[:-keep], self.pending[-keep:]) if keep else (self.pending, [])
        return self._retire(ready)

    def drain(self):
        ready, self.pending = self.pending, []
        return self._retire(ready)

    @contextlib.contextmanager
    def holding_results(self):
        """The fake keeps every result anyway (no queue bound); counted, so a test can see it was asked."""
        self.holding = getattr(self, "holding", 0) + 1
        try:
            yield
        finally:
            self.holding -= 1

    def close(self) -> None:
        self.closed = True


class FakeTimer:
    def __init__(self) -> None:
        self.last_ms = 2.5

    def start(self, stream):
        return "span"

    def stop(self, span, stream):
        return "end"

    def poll(self):
        return self.last_ms


class FakeSpan:
    """A GPU span whose end has passed, 20 ms after its start."""

    def __init__(self) -> None:
        self.start, self.end = "start", "end"

    @classmethod
    def begin(cls, stream):
        return cls()

    def stop(self, stream):
        return self.end


def tonemap_on_the_host(linear, out, stream) -> None:
    """The tonemap stage's kernel, in numpy."""
    out[..., :3] = tonemap_srgb(linear[..., :3])
    out[..., 3] = 255


def install(monkeypatch) -> None:
    """Put the stand-ins under the real pipeline (and the command line's context)."""
    import optixasync.cuda
    import optixasync.scheduler

    for cls in (FakeDeviceScene, FakeIntegrator, FakeScheduler):
        cls.instances.clear()
    monkeypatch.setattr("optixasync.render._pipeline.DeviceScene", FakeDeviceScene)
    monkeypatch.setattr("optixasync.render._pipeline.integrator_class", lambda name: FakeIntegrator)
    monkeypatch.setattr("optixasync.render._pipeline.create_stream", lambda: "stream")
    monkeypatch.setattr("optixasync.render._pipeline.Readiness", FakeReadiness)
    monkeypatch.setattr("optixasync.render._pipeline.GpuTimer", FakeTimer)
    monkeypatch.setattr("optixasync.render._pipeline.synchronize", lambda event, what="": None)
    monkeypatch.setattr("optixasync.render._still.GpuSpan", FakeSpan)
    monkeypatch.setattr("optixasync.render._still.synchronize", lambda event, what="": None)
    monkeypatch.setattr("optixasync.render._still.elapsed_ms", lambda start, end: 20.0)
    monkeypatch.setattr("optixasync.render._tonemap.tonemap_device", tonemap_on_the_host)
    monkeypatch.setattr("optixasync.render._still.add_lanes", lambda sums, out, lanes, accumulate, stream:
                        add_lanes_host(np.asarray(sums), lanes, out, accumulate))
    monkeypatch.setattr("optixasync.render._step.record_event", lambda stream: "frame end")
    monkeypatch.setattr(optixasync.scheduler, "FrameScheduler", FakeScheduler)
    monkeypatch.setattr(optixasync.cuda, "Context", FakeContext)
