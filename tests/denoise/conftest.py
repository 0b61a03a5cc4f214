"""Fixtures of the denoiser tests: OIDN's availability and a synthetic noisy HDR scene with exact guides."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest


@dataclass(frozen=True)
class Scene:
    """A smooth HDR image, its noisy version and exact guides, all float32 (height, width, 3)."""

    truth: np.ndarray
    noisy: np.ndarray
    albedo: np.ndarray
    normal: np.ndarray
    sigma: float

    @staticmethod
    def rmse(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.sqrt(np.mean((np.asarray(a, np.float64)[..., :3] - np.asarray(b, np.float64)[..., :3]) ** 2)))


def make_scene(height: int, width: int, sigma: float = 0.1, seed: int = 0, aux_sigma: float = 0.0) -> Scene:
    """Albedo tiles times a smooth irradiance (a lit hemisphere bump and a ramp), plus Gaussian noise of ``sigma``.

    The truth lies in [0.5, 2.3], so noise of sigma 0.1 leaves the noisy image non-negative (5 sigma) and
    exactly zero-mean. ``aux_sigma`` adds noise to the guides too (for prefiltering); the albedo is kept
    in [0, 1] and the normals are renormalized.
    """
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = (x + 0.5) / width, (y + 0.5) / height
    palette = np.array([[0.9, 0.55, 0.5], [0.5, 0.85, 0.55], [0.55, 0.6, 0.9], [0.9, 0.9, 0.8]], np.float32)
    albedo = palette[((u * 4).astype(int) + (v * 4).astype(int)) % 4]
    dx, dy = (u - 0.5) / 0.3, (v - 0.5) / 0.3
    inside = dx * dx + dy * dy < 1.0
    nz = np.sqrt(np.clip(1.0 - dx * dx - dy * dy, 0.0, 1.0))
    normal = np.stack([np.where(inside, dx, 0.0), np.where(inside, dy, 0.0), np.where(inside, nz, 1.0)], -1)
    normal = (normal / np.linalg.norm(normal, axis=-1, keepdims=True)).astype(np.float32)
    light = np.array([0.3, -0.4, 0.866], np.float32)
    irradiance = 1.0 + 0.8 * np.clip(normal @ (light / np.linalg.norm(light)), 0.0, None) + 0.5 * u
    truth = (albedo * irradiance[..., None]).astype(np.float32)
    rng = np.random.default_rng(seed)
    noisy = (truth + rng.normal(0.0, sigma, truth.shape)).astype(np.float32)
    if aux_sigma > 0:
        albedo = np.clip(albedo + rng.normal(0.0, aux_sigma, albedo.shape), 0.0, 1.0).astype(np.float32)
        normal = normal + rng.normal(0.0, aux_sigma, normal.shape)
        normal = (normal / np.linalg.norm(normal, axis=-1, keepdims=True)).astype(np.float32)
    return Scene(truth, noisy, albedo.astype(np.float32), normal, sigma)


@pytest.fixture(scope="session")
def scene_factory() -> Callable[..., Scene]:
    return make_scene


def oidn_unavailable_reason(kind: str = "cpu") -> str | None:
    """None when OIDN's ``kind`` device works here, else why not."""
    from optixasync.denoise import available_denoisers

    status = available_denoisers()[f"oidn-{kind}"]
    return None if status.startswith("available") else status


@pytest.fixture(scope="session")
def oidn_cpu() -> None:
    """Skips the test, with the reason, where OIDN's CPU device cannot run (pyoidn missing, or a trimmed build)."""
    reason = oidn_unavailable_reason("cpu")
    if reason:
        pytest.skip(f"OIDN CPU device: {reason}")


@pytest.fixture(scope="session")
def oidn_cuda() -> None:
    """Skips the test, with the reason, where OIDN's CUDA device cannot run."""
    reason = oidn_unavailable_reason("cuda")
    if reason:
        pytest.skip(f"OIDN CUDA device: {reason}")
