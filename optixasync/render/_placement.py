"""Where scene tables put their data: device memory (:class:`DevicePlacement`), or host memory for the host build.

The scene tables (:mod:`._tables`) are built once, by one code path, from a
:class:`Placement`: it copies arrays somewhere a kernel can read them and
answers with their addresses, makes texture objects, and builds the
environment's record. :class:`DevicePlacement` uploads on a set-up stream;
the host build of the kernel (``optixasync.testing.HostPlacement``) keeps
aligned host copies, so that the CPU tests run the library's own tables.

Meshes may hold device arrays of any library (PyTorch, JAX, CuPy, Numba:
``__cuda_array_interface__`` or DLPack). They are used in place, without a
copy: :func:`~optixasync.cuda.consume_device_array` gives a CuPy view with the
set-up stream ordered after the producer on the GPU, and the placement keeps
the views (and through them the producers) until it is released.

Blocking calls
--------------
* :meth:`DevicePlacement.host_copy` of a device array reads it back
  (``cupy.asnumpy`` on the set-up stream): once, at set-up, for the emitter
  table of emissive meshes given as device arrays.
* :meth:`DevicePlacement.textures` allocates one CUDA array per texture
  (``cudaMallocArray``, not stream-ordered): set-up time (see
  :mod:`._textures`).
Everything else enqueues asynchronous work: uploads (and rewrites of them)
through pinned staging, the environment's tables, and stream ordering on the GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..cuda import Readiness, as_cupy_stream, consume_device_array, is_library_array
from ..validation import is_device_array

if TYPE_CHECKING:
    from ..cuda import Context
    from ..scene import Environment, Texture

__all__ = ["DevicePlacement", "Placement"]


class Placement(Protocol):
    """What the scene tables need of the memory they live in."""

    def upload(self, array: np.ndarray, name: str) -> int:
        """Copy a host array (structured records or plain numbers); the copy's address."""

    def rewrite(self, address: int, array: np.ndarray, stream: Any) -> None:
        """Overwrite what :meth:`upload` placed at ``address`` with ``array`` (of its size), ordered on ``stream``."""

    def mesh_array(self, array: Any, name: str, dtype: Any, shared: bool) -> Any:
        """A mesh array where the kernel reads it (``shared``: arrays placed more than once are placed once)."""

    def address(self, placed: Any) -> int:
        """The address of what :meth:`mesh_array` returned."""

    def host_copy(self, placed: Any, original: Any) -> np.ndarray:
        """Host values of a placed mesh array (``original`` as given)."""

    def textures(self, textures: Sequence[Texture]) -> Callable[[Texture | None], int]:
        """Make the textures; a function from a texture (or None) to its handle (0 for None)."""

    def environment(self, environment: Environment) -> int:
        """Build the environment's record and tables; the record's address."""

    def environment_record(self, address: int) -> np.ndarray:
        """The host copy of the ``EnvironmentRecord`` :meth:`environment` placed at ``address`` (to rewrite it)."""

    def ready(self) -> Any:
        """A readiness of everything placed so far (``order(stream)`` puts a stream after it)."""


class DevicePlacement:
    """Places tables in device memory on the set-up stream ``stream`` of ``ctx``; keeps them until :meth:`release`.

    Attributes
    ----------
    environments : list of DeviceEnvironment
    texture_sets : list of DeviceTextures
    """

    def __init__(self, ctx: Context, stream: Any) -> None:
        self.ctx = ctx
        self.stream = as_cupy_stream(stream)
        self._kept: list[Any] = []
        self._shared: dict[int, tuple[Any, Any]] = {}  # id(host array) -> (host array, device array)
        self._uploads: dict[int, Any] = {}  # address -> device array, of what upload() placed
        self.environments: list[Any] = []
        self.texture_sets: list[Any] = []

    def upload(self, array: np.ndarray, name: str) -> int:
        device = self.ctx.upload(np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8), self.stream)
        self._kept.append(device)
        self._uploads[int(device.data.ptr)] = device
        return int(device.data.ptr)

    def rewrite(self, address: int, array: np.ndarray, stream: Any) -> None:
        """Copy ``array`` over the upload at ``address`` through pinned staging on ``stream`` (never waits).

        Raises
        ------
        ValueError
            When nothing was uploaded at ``address``, or ``array`` has another size.
        """
        target = self._uploads.get(int(address))
        if target is None:
            raise ValueError(f"no table was uploaded at {int(address):#x}: nothing to rewrite")
        self.ctx.upload_into(target, np.frombuffer(np.ascontiguousarray(array).tobytes(), np.uint8), stream)

    def mesh_array(self, array: Any, name: str, dtype: Any, shared: bool) -> Any:
        """A host array uploaded (once per array object when ``shared``), a device array used in place.

        A foreign device array becomes a CuPy view, the set-up stream ordered after its producer on the GPU (never
        ``cupy.asarray``, which waits on the host for a CAI producer's stream); the view holds the producer.
        """
        if is_library_array(array):
            return array  # optixasync's own memory: in the order of the stream its writer used
        if is_device_array(array):
            view = consume_device_array(array, self.stream, name=name, device=self.ctx.device_id, dtype=dtype).array
            self._kept.append(view)
            return view
        if shared:  # each host array once (the entry keeps it alive, so that its id is not reused meanwhile)
            if id(array) not in self._shared:
                self._shared[id(array)] = (array, self.ctx.upload(np.ascontiguousarray(array), self.stream))
            return self._shared[id(array)][1]
        device = self.ctx.upload(np.ascontiguousarray(array), self.stream)
        self._kept.append(device)
        return device

    def address(self, placed: Any) -> int:
        return int(placed.data.ptr)

    def host_copy(self, placed: Any, original: Any) -> np.ndarray:
        if not is_device_array(original) and not is_library_array(original):
            return np.asarray(original)
        import cupy

        return cupy.asnumpy(placed, stream=self.stream)  # set-up only (see the module's blocking calls)

    def textures(self, textures: Sequence[Texture]) -> Callable[[Texture | None], int]:
        from ._textures import DeviceTextures

        device = DeviceTextures(self.ctx, list(textures), self.stream)
        self.texture_sets.append(device)
        return device.handle

    def environment(self, environment: Environment) -> int:
        from ._environment import DeviceEnvironment

        device = DeviceEnvironment(self.ctx, environment, self.stream)
        self.environments.append(device)
        self._uploads[device.pointer] = device.record_array  # rewritable like an upload (a new scale)
        return device.pointer

    def environment_record(self, address: int) -> np.ndarray:
        return next(e.record for e in self.environments if e.pointer == int(address)).copy()

    def ready(self) -> Readiness:
        ready = Readiness()
        ready.record(self.stream)
        return ready

    def release(self) -> None:
        """Let go of everything placed (the caller waited for the launches that read it)."""
        for textures in self.texture_sets:
            textures.close()
        for environment in self.environments:
            environment.close()
        self._kept, self._shared, self.environments, self.texture_sets = [], {}, [], []
        self._uploads = {}
