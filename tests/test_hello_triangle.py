"""The hello triangle checked pixel by pixel against a CPU computation of the same projection."""

from __future__ import annotations

import numpy as np
import pytest

from optixasync.testing import DEFAULT_TRIANGLE, render_triangle

pytestmark = pytest.mark.gpu


def reference_barycentrics(vertices: np.ndarray, width: int, height: int, view=(-1.0, -1.0, 1.0, 1.0)):
    """Barycentric coordinates (b1, b2) of every pixel centre and the signed distance to the nearest edge."""
    xs = view[0] + (np.arange(width) + 0.5) / width * (view[2] - view[0])
    ys = view[1] + (np.arange(height) + 0.5) / height * (view[3] - view[1])
    px, py = np.meshgrid(xs, ys)
    v0, v1, v2 = vertices[:, :2].astype(np.float64)
    e1, e2 = v1 - v0, v2 - v0
    det = e1[0] * e2[1] - e1[1] * e2[0]
    dx, dy = px - v0[0], py - v0[1]
    b1 = (dx * e2[1] - dy * e2[0]) / det
    b2 = (e1[0] * dy - e1[1] * dx) / det
    b0 = 1.0 - b1 - b2
    return b0, b1, b2


def test_pixels_match_projection(ctx):
    width, height = 160, 120
    result = render_triangle(ctx, width, height, miss_color=(0.1, 0.2, 0.3))
    image = result.image
    assert image.shape == (height, width, 4)
    b0, b1, b2 = reference_barycentrics(DEFAULT_TRIANGLE, width, height)
    margin = 1e-3  # pixel centres this close to an edge may fall either way in float32
    inside = (b0 > margin) & (b1 > margin) & (b2 > margin)
    outside = (b0 < -margin) | (b1 < -margin) | (b2 < -margin)
    assert inside.sum() > 0.2 * width * height and outside.sum() > 0.2 * width * height

    # hit pixels: barycentric colour and distance 1 (eye at z=-1, triangle at z=0)
    np.testing.assert_allclose(image[inside, 0], b0[inside], atol=1e-4)
    np.testing.assert_allclose(image[inside, 1], b1[inside], atol=1e-4)
    np.testing.assert_allclose(image[inside, 2], b2[inside], atol=1e-4)
    np.testing.assert_allclose(image[inside, 3], 1.0, atol=1e-5)
    # miss pixels: the miss record's colour, distance -1
    np.testing.assert_allclose(image[outside, :3], np.broadcast_to([0.1, 0.2, 0.3], (outside.sum(), 3)), atol=1e-6)
    assert (image[outside, 3] == -1.0).all()


def test_moved_triangle_moves_the_hits(ctx):
    shifted = DEFAULT_TRIANGLE + np.array([0.5, 0.0, 2.0], np.float32)
    result = render_triangle(ctx, 64, 64, vertices=shifted, eye_z=-1.0)
    b0, b1, b2 = reference_barycentrics(shifted, 64, 64)
    inside = (b0 > 1e-3) & (b1 > 1e-3) & (b2 > 1e-3)
    assert (result.image[inside, 3] > 0).all()
    np.testing.assert_allclose(result.image[inside, 3], 3.0, atol=1e-5)  # from z=-1 to z=2
    assert (result.image[~inside & ((b0 < -1e-3) | (b1 < -1e-3) | (b2 < -1e-3)), 3] == -1.0).all()
