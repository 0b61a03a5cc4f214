"""The fuzz targets, one module per input surface; importing this package registers them."""

from __future__ import annotations

from . import _environment, _gltf, _images, _obj, _usd, _viewer  # noqa: F401  (each registers its targets)
