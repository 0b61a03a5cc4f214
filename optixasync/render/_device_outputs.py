"""Outputs kept on the GPU and handed to torch, JAX or CuPy without copies, under the readbacks' lease rule.

:meth:`RenderPipeline.step <optixasync.render.RenderPipeline.step>` returns a
:class:`DeviceOutputs`: the frame slot's output buffers, each an
:class:`~optixasync.cuda.ExportedArray` (DLPack and
``__cuda_array_interface__``), and the event recorded on the frame's stream
after the launch and the stages. Importing one (``torch.from_dlpack(out["depth"])``)
makes the consumer's stream wait for that event on the GPU; nothing waits on
the host.

The lease rule is the readbacks': the arrays are valid as long as the
:class:`DeviceOutputs` is held. When the slot comes round while it is still
held, the frame takes another set of buffers (a new *generation* of the
slot's buffers; :class:`OutputLeases`) and leaves these to their holder;
:meth:`DeviceOutputs.release` gives them back, and the next frame that
writes them first waits (on the GPU) for the work the consumers had
enqueued on their streams when they released them. Held sets are bounded by
what the caller holds; released ones are reused.

Blocking calls
--------------
:meth:`DeviceOutputs.to_host` waits for the frame (that is its point: the
host copy on request). Everything else is event records and stream waits.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ..cuda import ExportedArray, synchronize, wait_event

__all__ = ["DeviceOutputs", "OutputLeases"]


class OutputLeases:
    """Which generations of each slot's output buffers are held, and what their next writer must wait for."""

    def __init__(self) -> None:
        self._held: dict[int, set[int]] = {}
        self._released: dict[tuple[int, int], list[Any]] = {}  # (slot, generation) -> consumers' events

    def generation(self, slot: int) -> int:
        """The first generation of ``slot``'s buffers that nobody holds."""
        held = self._held.get(slot, set())
        generation = 0
        while generation in held:
            generation += 1
        return generation

    def before_write(self, slot: int, generation: int, stream: Any) -> None:
        """Make ``stream`` wait for the consumers of that generation's last lease (GPU-side)."""
        for event in self._released.pop((slot, generation), ()):
            wait_event(stream, event)

    def hold(self, slot: int, generation: int) -> None:
        self._held.setdefault(slot, set()).add(generation)

    def release(self, slot: int, generation: int, events: list[Any]) -> None:
        self._held.get(slot, set()).discard(generation)
        self._released.setdefault((slot, generation), []).extend(events)

    def held(self) -> int:
        """How many leases are held."""
        return sum(len(s) for s in self._held.values())


def buffer_name(name: str, generation: int) -> str:
    """The slot buffer of output ``name`` in a generation (0: the output's own name)."""
    return name if generation == 0 else f"{name}#{generation}"


class DeviceOutputs(Mapping):
    """A frame's outputs on the GPU, leased (see the module documentation); use as ``with outputs:``.

    Attributes
    ----------
    index : int
        The frame's number.
    event : cupy.cuda.Event
        Recorded after the frame's launch and stages.
    views : int or None
        The batch's views (None: one camera).
    result : FrameHandle or None
        The frame's handle when outputs were also read back (:meth:`RenderPipeline.step`'s ``readback``).
    """

    result: Any = None

    def __init__(self, index: int, arrays: dict[str, Any], event: Any, stream: int, leases: OutputLeases,
                 slot: int, generation: int, views: int | None) -> None:
        self.index = index
        self.event = event
        self.views = views
        self._arrays = {name: ExportedArray(a, event, stream) for name, a in arrays.items()}
        self._leases, self._slot, self._generation = leases, slot, generation
        self._released = False
        leases.hold(slot, generation)

    def __getitem__(self, name: str) -> ExportedArray:
        self._check()
        if name not in self._arrays:
            raise KeyError(f"this frame has no device output {name!r}; it has {sorted(self._arrays)}")
        return self._arrays[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def _check(self) -> None:
        if self._released:
            raise RuntimeError(f"the outputs of frame {self.index} were released: their buffers may be rewritten")

    def torch(self, name: str) -> Any:
        """Output ``name`` as a PyTorch tensor (no copy); PyTorch's current stream waits for the frame."""
        import torch

        return torch.from_dlpack(self[name])

    def cupy(self, name: str) -> Any:
        """Output ``name`` as a CuPy array (no copy); CuPy's current stream waits for the frame."""
        import cupy

        return cupy.from_dlpack(self[name])

    def to_host(self, names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Host copies of the outputs (all by default): waits for the frame, then copies (the host copy on request)."""
        self._check()
        synchronize(self.event, "waiting for a frame's outputs to copy them to the host")
        return {name: self[name].array.get() for name in (self._arrays if names is None else names)}

    def release(self) -> None:
        """Give the buffers back: the next frame to write them waits (on the GPU) for their consumers' work so far."""
        if self._released:
            return
        self._released = True
        events = [event for exported in self._arrays.values() for event in exported.consumers_done()]
        self._leases.release(self._slot, self._generation, events)

    def __enter__(self) -> DeviceOutputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"<optixasync.render.DeviceOutputs frame {self.index} {sorted(self._arrays)} ({state})>"
