"""The public Context: bad arguments fail before the machine is asked anything (CPU)."""

from __future__ import annotations

import pytest

import optixasync


@pytest.mark.parametrize("abi", [93, 105, 118, 0, "87", True])
def test_unsupported_abi_is_a_clear_value_error(abi):
    with pytest.raises(ValueError, match=r"OptiX ABI .* is not supported by optixasync; supported: 87 \(OptiX 8.0\)"):
        optixasync.Context(abi=abi)


def test_context_is_a_device_context():
    assert issubclass(optixasync.Context, optixasync.DeviceContext)
    for factory in ("create_module", "create_raygen", "create_miss", "create_hitgroup", "create_pipeline",
                    "create_sbt", "create_geometry_accel", "create_instance_accel"):
        assert callable(getattr(optixasync.Context, factory))
        assert not hasattr(optixasync.DeviceContext, factory)  # the low layer has no factories
