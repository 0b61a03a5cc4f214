"""What tests, examples and benchmarks share: a calibrated busy workload, the hello-triangle renderer, a rippling mesh,
the scripts' entry (one line and the CLI's exit status when the machine cannot run them), and the comparison with
the reference renderer (a scene as a Mitsuba 3 dict, and the per-pixel statistics that judge two images), CPU work
and injected faults for the multi-GPU orchestration, glTF files written from Python, and the instruments of the
hostile-input tests (files opened, a time bound, peak memory).

These are small, complete OptiX programs built on the public layers; they
are not part of the rendering API. The GPU spin helper lives in
:func:`optixasync.cuda.spin_gpu`.
"""

from __future__ import annotations

from ._busy import BUSY_PARAMS, BusyWorkload, KernelBusyWorkload, expected_busy_output
from ._compare import PASS_FRACTION, BatchStatistics, batch_statistics, rmse, rmse_ratio, sidak_level, z_test
from ._entry import child_output, require_gpu, run_main
from ._farm import (
    CountedPayload,
    CpuFrame,
    FaultAt,
    FaultyUpdate,
    cpu_frame,
    cpu_sample_sums,
    cpu_setup,
    frame_image,
    render_records,
    sample_values,
)
from ._gltf_files import GltfBuilder, glb_bytes, node_grid_glb
from ._gltf_samples import GLTF_SAMPLES, write_gltf_samples
from ._hello import DEFAULT_TRIANGLE, HELLO_PARAMS, HelloRenderer, HelloResult, fill_params, render_triangle
from ._hostile import MemoryPeak, TimeLimitExceeded, outside, peak_memory, record_opens, time_limit
from ._mitsuba import MissingMitsubaError, import_mitsuba, mitsuba_scene_dict, mitsuba_texture
from ._ripple import RippleAnimator, grid_mesh
from ._stubcuda import StubCuda, StubEvent, StubStream
from ._stubrender import StubPathIntegrator, StubRender

__all__ = [
    "BUSY_PARAMS",
    "BatchStatistics",
    "BusyWorkload",
    "KernelBusyWorkload",
    "MissingMitsubaError",
    "PASS_FRACTION",
    "DEFAULT_TRIANGLE",
    "HELLO_PARAMS",
    "HelloRenderer",
    "HelloResult",
    "RippleAnimator",
    "StubCuda",
    "StubEvent",
    "StubPathIntegrator",
    "StubRender",
    "StubStream",
    "batch_statistics",
    "CountedPayload",
    "cpu_frame",
    "CpuFrame",
    "cpu_sample_sums",
    "cpu_setup",
    "FaultAt",
    "FaultyUpdate",
    "frame_image",
    "render_records",
    "sample_values",
    "child_output",
    "expected_busy_output",
    "fill_params",
    "MemoryPeak",
    "outside",
    "peak_memory",
    "record_opens",
    "time_limit",
    "TimeLimitExceeded",
    "glb_bytes",
    "write_gltf_samples",
    "GLTF_SAMPLES",
    "GltfBuilder",
    "node_grid_glb",
    "grid_mesh",
    "import_mitsuba",
    "mitsuba_scene_dict",
    "mitsuba_texture",
    "render_triangle",
    "require_gpu",
    "rmse",
    "rmse_ratio",
    "run_main",
    "sidak_level",
    "z_test",
]
