"""The environment on a GPU: DeviceEnvironment's tables against numpy, its record, and that set-up never waits.

The tables built with CuPy on the set-up stream must be those :func:`environment_tables` builds with numpy
(up to the order of float64 sums), the record must point at them, and creating a DeviceEnvironment must not
wait for the GPU. ``environment.h`` itself is then run on the device, through a small CuPy kernel over the
uploaded record: its lookup against the numpy transcription of the reference renderer's (from
test_environment_host.py), and its samples' radiance and pdf against those of their directions.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np
import pytest

# Private on purpose: the package's kernels folder, and the environment's device side, which has no public door
# (its record's device buffer, ``_record``, is read back below to compare bytes).
from optixasync._config import kernels_dir
from optixasync.render._environment import DeviceEnvironment, environment_record, environment_tables
from optixasync.scene._environment import Environment

pytestmark = pytest.mark.gpu


def host_tests():
    spec = importlib.util.spec_from_file_location("environment_host_tests",
                                                  Path(__file__).with_name("test_environment_host.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def images() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(5)
    spotty = rng.lognormal(0.0, 1.5, (64, 128, 3)).astype(np.float32)
    banded = np.ones((9, 16, 3), np.float32)
    banded[:3] = 0.0  # black bands: uniform conditionals
    return {"spotty": spotty, "two rows": rng.uniform(0, 2, (2, 7, 3)).astype(np.float32),
            "banded": banded, "black": np.zeros((5, 8, 3), np.float32),
            "large": rng.uniform(0, 1, (512, 1024, 3)).astype(np.float32)}


def download(array, stream) -> np.ndarray:
    out = array.get(stream=stream)
    stream.synchronize()
    return out


@pytest.mark.parametrize("name", list(images()))
def test_device_tables_match_numpy(ctx, name):
    from optixasync.cuda import create_stream

    image = images()[name]
    stream = create_stream()
    env = Environment(image=image, scale=1.5, name=name)
    device = DeviceEnvironment(ctx, env, stream)
    expected = environment_tables(env.image)
    np.testing.assert_array_equal(download(device.texels, stream), expected.texels)
    for got, want in ((device.marginal_cdf, expected.marginal_cdf), (device.conditional_cdf, expected.conditional_cdf)):
        got = download(got, stream)
        assert got.dtype == np.float32 and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=2e-7, atol=1e-8)
        np.testing.assert_array_equal(got[..., 0], 0.0)
        np.testing.assert_array_equal(got[..., -1], 1.0)
    record = download(device._record, stream)
    pointers = [int(a.data.ptr) for a in (device.texels, device.marginal_cdf, device.conditional_cdf)]
    assert record.tobytes() == environment_record(env, *pointers).tobytes()
    assert device.power == env.power
    device.close()
    device.close()
    with pytest.raises(RuntimeError, match="closed"):
        _ = device.pointer


def test_constant_environment_has_a_record_and_no_tables(ctx):
    from optixasync.cuda import create_stream

    stream = create_stream()
    env = Environment(radiance=(1.0, 0.5, 0.25), scale=2.0)
    device = DeviceEnvironment(ctx, env, stream)
    assert device.texels is None and device.marginal_cdf is None and device.conditional_cdf is None
    assert download(device._record, stream).tobytes() == environment_record(env).tobytes()
    assert device.pointer != 0 and device.power == pytest.approx(env.power)
    with pytest.raises(TypeError, match="Environment"):
        DeviceEnvironment(ctx, np.ones((4, 4, 3), np.float32), stream)


def test_set_up_does_not_wait_for_the_gpu(ctx):
    """With the stream busy for 0.5 s, creating a DeviceEnvironment returns at once, its work still queued."""
    import cupy

    from optixasync.cuda import create_stream, spin_gpu

    image = images()["spotty"]
    stream = create_stream()
    DeviceEnvironment(ctx, Environment(image=image), stream).close()  # CuPy compiles its kernels on first use
    stream.synchronize()
    spin_gpu(500_000_000, stream)
    start = time.perf_counter()
    device = DeviceEnvironment(ctx, Environment(image=image), stream)
    elapsed = time.perf_counter() - start
    done = cupy.cuda.Event()
    done.record(stream)
    assert not done.done, "the set-up's work had finished: the spin did not hold the stream"
    assert elapsed < 0.25, f"creating a DeviceEnvironment took {elapsed:.3f} s behind a 0.5 s GPU spin"
    stream.synchronize()
    device.close()


KERNEL = r"""
#include "pathtracer/environment.h"
extern "C" __global__ void environment_eval(const EnvironmentRecord* env, const float* directions, const float* u,
                                            unsigned int n, float* radiance, float* pdf, float* samples) {
    const unsigned int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const float3 d = make_float3(directions[3 * k], directions[3 * k + 1], directions[3 * k + 2]);
    const float3 r = pt::environment_radiance(*env, d);
    radiance[3 * k] = r.x; radiance[3 * k + 1] = r.y; radiance[3 * k + 2] = r.z;
    pdf[k] = pt::environment_pdf(*env, d);
    const pt::EnvironmentSample s = pt::environment_sample(*env, u[2 * k], u[2 * k + 1]);
    const float3 again = pt::environment_radiance(*env, s.direction);
    const float values[8] = {s.direction.x, s.direction.y, s.direction.z, s.radiance.x, s.radiance.y,
                             s.radiance.z, s.pdf, pt::environment_pdf(*env, s.direction)};
    for (int c = 0; c < 8; ++c) samples[8 * k + c] = values[c];
    samples[8 * k + 3] -= again.x;  // 0 when the sample's radiance is its direction's
}
"""


def test_environment_h_on_the_device(ctx):
    import cupy

    from optixasync.cuda import create_stream

    ref = host_tests()
    stream = create_stream()
    image = ref.spotty_image(48, 96, seed=3)
    to_world = ref.rotation((1, 2, 3), 50.0)
    env = Environment(image=image, scale=0.75, to_world=to_world)
    device = DeviceEnvironment(ctx, env, stream)
    kernel = cupy.RawKernel(KERNEL, "environment_eval",
                            options=(f"-I{kernels_dir()}", "--use_fast_math", "-std=c++17"))
    n = 100_000
    directions = ref.random_directions(n, seed=8)
    uniforms = ref.uniforms(n, seed=9)
    with stream:
        d, u = cupy.asarray(directions), cupy.asarray(uniforms)
        radiance, pdf, samples = cupy.empty((n, 3), np.float32), cupy.empty(n, np.float32), cupy.empty((n, 8), np.float32)
        kernel(((n + 127) // 128,), (128,), (np.uint64(device.pointer), d, u, np.uint32(n), radiance, pdf, samples))
    radiance, pdf, samples = (download(a, stream) for a in (radiance, pdf, samples))
    expected = ref.mitsuba_envmap_lookup(image, directions, 0.75, to_world)
    steep = float(np.abs(np.diff(image, axis=1)).max() + np.abs(np.diff(image, axis=0)).max()) * 0.75
    np.testing.assert_allclose(radiance, expected, rtol=1e-4, atol=steep * 96 * 2e-5)  # fast-math atan2, acos
    assert np.isfinite(pdf).all() and (pdf >= 0).all()  # 0 in the map's black patch
    lit = radiance.max(axis=1) > 1e-3 * radiance.max()
    assert (pdf[lit] > 0).mean() > 0.999  # (only the edges of the black patch may round either way)
    np.testing.assert_allclose(np.linalg.norm(samples[:, :3], axis=1), 1.0, atol=1e-4)
    np.testing.assert_array_equal(samples[:, 3], 0.0)
    assert np.isclose(samples[:, 7], samples[:, 6], rtol=1e-3).mean() > 0.999
    device.close()
