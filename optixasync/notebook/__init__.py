"""The live viewer in a Jupyter notebook: :class:`ViewerWidget` (the ``notebook`` extra: anywidget).

``ViewerWidget(source)`` shows any :class:`~optixasync.viewer.FrameSource` in
a cell: the progressive image with the viewer's controls and overlay, the
same input protocol, the same newest-frame-only backpressure and the same
save and record buttons as ``optixasync view``. Frames travel over the
kernel's comm channel, not a port of their own, so the widget works wherever
the notebook does: JupyterLab, Notebook 7, VS Code, JupyterHub and other
remote kernels. :class:`~optixasync.viewer.CpuFrameSource` serves it without
a GPU.

Why anywidget and not the jupyter_rfb pattern: the viewer already has its
protocol (input messages, frame messages, acknowledgements) and its page;
anywidget carries the viewer's own user interface script and passes the
protocol's messages and binary frames over the comm unchanged, so one
implementation serves the browser page and the notebook. jupyter_rfb brings
its own event format and frame throttling, which would be a second protocol
and a second backpressure beside the viewer's.

Importing this package needs nothing; :class:`ViewerWidget` imports anywidget
on first use and raises :class:`~optixasync.MissingExtraError` without it
(``pip install 'optixasync[notebook]'``).

Examples
--------
>>> from optixasync.notebook import ViewerWidget
>>> from optixasync.viewer import CpuFrameSource
>>> ViewerWidget(CpuFrameSource())          # doctest: +SKIP
"""

from __future__ import annotations

import atexit
from typing import TYPE_CHECKING, Any

from ._session import close_all

if TYPE_CHECKING:  # imported on first use (it imports anywidget); named here for readers and type checkers
    from ._widget import ViewerWidget

__all__ = ["ViewerWidget"]

atexit.register(close_all)  # a kernel that shuts down or restarts stops every widget's threads first


def __getattr__(name: str) -> Any:
    if name == "ViewerWidget":
        try:
            from ._widget import ViewerWidget
        except ImportError as exc:
            if exc.name is None or exc.name.split(".")[0] not in ("anywidget", "ipywidgets", "traitlets"):
                raise
            from ..errors import MissingExtraError

            raise MissingExtraError("the notebook widget", "anywidget", "notebook") from None
        return ViewerWidget
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
