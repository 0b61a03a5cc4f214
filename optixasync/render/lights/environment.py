"""``"environment"``: light from infinitely far away (``light_environment.h``, sampling in ``environment.h``).

Its data is the ``EnvironmentRecord`` with the importance-sampling tables (built on the GPU by
:class:`~optixasync.render.DeviceEnvironment`, on the host by the host build's placement). Its power is that of
its radiance arriving on a disc as large as the scene (:meth:`Environment.scene_power`); light selection
bounds its probability to [0.25, 0.75] when other lights exist (:func:`optixasync.render.selection_probabilities`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._base import LightType

__all__ = ["EnvironmentLight"]


class EnvironmentLight(LightType):
    name = "environment"
    header = "pathtracer/light_environment.h"
    struct = "EnvironmentLight"

    def sources(self, scene: Any) -> Sequence[Any]:
        return [scene.environment] if scene.environment is not None else []

    def power(self, source: Any, scene_radius: float) -> float:
        return float(source.scene_power(scene_radius))

    def data(self, source: Any, placement: Any, probability: float) -> tuple[int, int]:
        return placement.environment(source), 1
