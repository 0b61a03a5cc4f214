"""The hello-triangle result shows itself in a notebook (CPU: the result is built by hand)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from optixasync.testing import HelloResult


def test_a_hello_result_shows_as_a_png_with_y_up():
    image = np.zeros((4, 5, 4), np.float32)
    image[0, :, 0] = 1.0  # row 0 is the smallest y: the bottom of the picture
    result = HelloResult(image, 0.0, False, {})
    with Image.open(io.BytesIO(result._repr_png_())) as picture:
        assert picture.size == (5, 4)
        assert picture.getpixel((2, 3)) == (255, 0, 0) and picture.getpixel((2, 0)) == (0, 0, 0)
