"""Integrators: compiled programs that write a frame's outputs over a device scene, registered by name.

An :class:`Integrator` declares its launch-parameter layout
(:attr:`Integrator.params_dtype`) and the outputs it can write
(:attr:`Integrator.outputs`); it is compiled for the output sets a pipeline
will ask for (one program variant each) and fills one launch's parameters
from a :class:`Launch`. The path tracer (``"path"``, :mod:`._path`) is the
first; an integrator of one's own is a subclass in a file of its own and a
:func:`register_integrator` line (Mitsuba's plug-ins are the model).

An integrator whose launch can be split in two, the parameters written on
the host and the launch enqueued later, implements :meth:`Integrator.prepare`:
its frames can then run as CUDA graphs (:mod:`._graphs`), whose launch is
captured once and replayed with each frame's parameters. One without it
(the default) renders every frame eagerly.

Blocking calls
--------------
Creating an integrator compiles its program (NVRTC on a PTX cache miss,
then OptiX): set-up time. :meth:`Integrator.launch` enqueues ``optixLaunch``
through the frame, which blocks only with validation mode on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from ..cuda import Context
    from ._device_scene import DeviceScene
    from ._options import RenderOptions

__all__ = ["Integrator", "Launch", "PreparedLaunch", "integrator_class", "integrators", "register_integrator"]


@dataclass
class Launch:
    """One launch an integrator fills and enqueues (made per launch: not frozen, whose ``__init__`` costs 8 us
    against 2 on a small core, one ``object.__setattr__`` per field).

    Attributes
    ----------
    options : RenderOptions
    basis : tuple of arrays
        The camera's ``basis(width, height)``.
    accum : device array
        The (height, width, 4) float32 running sums the launch adds to (or overwrites).
    sample_offset, spp : int
        The absolute index of its first sample, and its samples per pixel.
    accumulate : bool
        Add to ``accum`` (False: overwrite it).
    scene : numpy structured scalar
        The device scene's ``SceneRecord`` (:attr:`DeviceScene.record`).
    outputs : dict of str to device array
        The outputs it writes, by name, into these buffers (the frame slot's).
    sums : device array or None
        The running sums of the first hit's albedo and normal, for variants that write them.
    """

    options: RenderOptions
    basis: tuple[np.ndarray, ...]
    accum: Any
    sample_offset: int
    spp: int
    accumulate: bool
    scene: np.ndarray
    outputs: dict[str, Any] = field(default_factory=dict)
    sums: Any = None


class PreparedLaunch:
    """A launch whose parameters are written: what remains is to enqueue it on a frame (:meth:`enqueue`).

    Parameters
    ----------
    pipeline, sbt
        The program variant's pipeline and shader binding table.
    width, height, depth : int
        The launch dimensions.
    """

    __slots__ = ("pipeline", "sbt", "width", "height", "depth")

    def __init__(self, pipeline: Any, sbt: Any, width: int, height: int = 1, depth: int = 1) -> None:
        self.pipeline, self.sbt = pipeline, sbt
        self.width, self.height, self.depth = width, height, depth

    def enqueue(self, frame: Any) -> None:
        """Enqueue the launch on ``frame`` with the frame's parameters (``frame.launch``)."""
        frame.launch(self.pipeline, self.sbt, self.width, self.height, self.depth)


class Integrator(ABC):
    """The protocol every integrator follows (see the module documentation).

    Parameters
    ----------
    ctx : Context
    scene : DeviceScene
    variants : iterable of frozenset of str
        The output sets it will be launched with (each is compiled into a variant).

    Attributes
    ----------
    name : str
    outputs : frozenset of str
        What it can write (names of :data:`~optixasync.render.OUTPUTS`).
    params_dtype : numpy dtype
        Its launch parameters: a scheduler's ``params_dtype``.
    needs_sums : frozenset of str
        Outputs that need the running first-hit sums (:attr:`Launch.sums`).
    """

    name: ClassVar[str] = ""
    outputs: ClassVar[frozenset[str]] = frozenset()
    params_dtype: ClassVar[np.dtype]
    needs_sums: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def __init__(self, ctx: Context, scene: DeviceScene, variants: Iterable[frozenset[str]]) -> None: ...

    @abstractmethod
    def launch(self, frame: Any, launch: Launch) -> None:
        """Fill ``frame``'s parameters from ``launch`` and enqueue it on the frame (``frame.launch``)."""

    def prepare(self, params: Any, launch: Launch) -> PreparedLaunch | None:
        """Write ``launch``'s parameters into ``params`` and return the launch to enqueue (None: cannot split).

        ``params`` is a frame's parameters (``frame.params``, in the slot's pinned staging). The returned launch
        is enqueued later, as a frame graph's work, and reads the parameters the frame uploads before it. The
        default returns None and writes nothing: the pipeline then launches through :meth:`launch`, eagerly.
        """
        return None

    @abstractmethod
    def close(self) -> None:
        """Destroy the program (the caller waited for its launches)."""


_integrators: dict[str, type[Integrator]] = {}


def register_integrator(cls: type[Integrator]) -> type[Integrator]:
    """Register ``cls`` under ``cls.name`` (usable as a class decorator).

    Raises
    ------
    TypeError, ValueError
        On a class that is not an :class:`Integrator`, has no name or takes a registered one.
    """
    if not (isinstance(cls, type) and issubclass(cls, Integrator)):
        raise TypeError(f"register_integrator takes an Integrator subclass, got {cls!r}")
    if not isinstance(cls.name, str) or not cls.name:
        raise ValueError(f"integrator {cls.__name__} needs a name")
    existing = _integrators.get(cls.name)
    if existing is not None and existing is not cls:
        raise ValueError(f"an integrator named {cls.name!r} is registered already ({existing.__name__})")
    _integrators[cls.name] = cls
    return cls


def integrators() -> tuple[str, ...]:
    """The names of the registered integrators."""
    return tuple(_integrators)


def integrator_class(name: str) -> type[Integrator]:
    """The integrator registered as ``name``; ``ValueError`` naming the registered ones otherwise."""
    found = _integrators.get(name) if isinstance(name, str) else None
    if found is None:
        raise ValueError(f"integrator must be one of {tuple(_integrators)}, got {name!r}")
    return found
