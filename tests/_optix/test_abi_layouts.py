"""The struct layouts of each OptiX ABI (87, 93, 105, 118), against numbers measured from NVIDIA's C headers.

``sizeof``, ``_Alignof`` and ``offsetof`` of each struct were measured (x86-64, gcc) against the
``optix_types.h`` of OptiX 8.0, 8.1, 9.0 and 9.1 (``OPTIX_ABI_VERSION`` 87, 93, 105, 118). Four structs
optixasync fills changed between them; every other struct it declares measured the same in all four, which
:data:`SHARED_SIZES` pins per ABI (so a fifth change would be caught by adding its header's numbers here).
"""

from __future__ import annotations

import ctypes

import pytest

from optixasync._optix import ABI_TABLES, structs_for
from optixasync._optix import types as t
from optixasync.program import ModuleOptions, PipelineOptions

_MODULE_87 = {"maxRegisterCount": 0, "optLevel": 4, "debugLevel": 8, "boundValues": 16, "numBoundValues": 24,
              "numPayloadTypes": 28, "payloadTypes": 32}
_PIPELINE_87 = {"usesMotionBlur": 0, "traversableGraphFlags": 4, "numPayloadValues": 8, "numAttributeValues": 12,
                "exceptionFlags": 16, "pipelineLaunchParamsVariableName": 24, "usesPrimitiveTypeFlags": 32,
                "allowOpacityMicromaps": 36}
_TRIANGLES_87 = (240, 8, {"vertexBuffers": 0, "transformFormat": 92, "opacityMicromap": 96,
                          "displacementMicromap": 144})

#: ABI -> struct attribute of AbiStructs -> (sizeof, alignment, {field: offset}) from that ABI's header.
LAYOUTS: dict[int, dict[str, tuple[int, int, dict[str, int]]]] = {
    87: {
        "module_compile_options": (40, 8, _MODULE_87),
        "pipeline_compile_options": (40, 8, _PIPELINE_87),
        "pipeline_link_options": (4, 4, {"maxTraceDepth": 0}),
        "triangle_array": _TRIANGLES_87,
    },
    93: {
        "module_compile_options": (40, 8, _MODULE_87),
        "pipeline_compile_options": (40, 8, _PIPELINE_87),
        "pipeline_link_options": (4, 4, {"maxTraceDepth": 0}),
        "triangle_array": _TRIANGLES_87,
    },
    105: {
        "module_compile_options": (40, 8, _MODULE_87),
        "pipeline_compile_options": (48, 8, {**_PIPELINE_87, "allowClusteredGeometry": 40}),
        "pipeline_link_options": (4, 4, {"maxTraceDepth": 0}),
        "triangle_array": _TRIANGLES_87,
    },
    118: {
        "module_compile_options": (48, 8, {**_MODULE_87, "baseModule": 40}),
        "pipeline_compile_options": (56, 8, {
            "usesMotionBlur": 0, "traversableGraphFlags": 4, "numPayloadValues": 8, "numAttributeValues": 12,
            "exceptionFlags": 16, "pipelineLaunchParamsVariableName": 24, "pipelineLaunchParamsSizeInBytes": 32,
            "usesPrimitiveTypeFlags": 40, "allowOpacityMicromaps": 44, "allowClusteredGeometry": 48,
        }),
        "pipeline_link_options": (20, 4, {
            "maxTraceDepth": 0, "maxContinuationCallableDepth": 4, "maxDirectCallableDepthFromState": 8,
            "maxDirectCallableDepthFromTraversal": 12, "maxTraversableGraphDepth": 16,
        }),
        "triangle_array": (144, 8, {"vertexBuffers": 0, "transformFormat": 92, "opacityMicromap": 96}),
    },
}

#: (sizeof, alignment) measured identical in the four headers, for the structs declared once.
SHARED_SIZES: dict[str, tuple[int, int]] = {
    "DeviceContextOptions": (24, 8), "ModuleCompileBoundValueEntry": (32, 8), "PayloadType": (16, 8),
    "ProgramGroupDesc": (56, 8), "ProgramGroupOptions": (8, 8), "BuildInputCurveArray": (80, 8),
    "BuildInputSphereArray": (72, 8), "BuildInputCustomPrimitiveArray": (56, 8), "BuildInputInstanceArray": (16, 8),
    "BuildInput": (1032, 8), "MotionOptions": (12, 4), "AccelBuildOptions": (20, 4), "BuiltinISOptions": (16, 4),
    "StaticTransform": (112, 8), "MatrixMotionTransform": (128, 8), "SRTData": (64, 4),
    "SRTMotionTransform": (160, 8), "Aabb": (24, 4), "Instance": (80, 8), "ShaderBindingTable": (64, 8),
    "StackSizes": (28, 4),
}

STRUCTS = ("module_compile_options", "pipeline_compile_options", "pipeline_link_options", "triangle_array")


def test_every_abi_has_its_layouts():
    assert set(LAYOUTS) == set(ABI_TABLES)


@pytest.mark.parametrize(("abi", "which"), [(abi, which) for abi in sorted(LAYOUTS) for which in STRUCTS])
def test_struct_layout_of_each_abi(abi, which):
    cls = getattr(structs_for(abi), which)
    size, alignment, offsets = LAYOUTS[abi][which]
    assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == (size, alignment)
    declared = [f[0] for f in cls._fields_]
    assert [f for f in declared if f in offsets] == list(offsets)
    assert {f: getattr(cls, f).offset for f in offsets} == offsets
    ends = list(offsets.values())[1:] + [size]
    for (name, offset), end in zip(offsets.items(), ends, strict=True):
        assert offset + getattr(cls, name).size <= end, name


@pytest.mark.parametrize("abi", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(SHARED_SIZES))
def test_shared_struct_sizes_in_each_abi(abi, name):
    """The structs declared once measure the same in every header (the ABI only picks the four above)."""
    cls = getattr(t, name)
    assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == SHARED_SIZES[name]


def test_the_abi_118_triangle_array_is_a_prefix_of_the_abi_87_one():
    old, new = structs_for(87).triangle_array, structs_for(118).triangle_array
    assert [f[0] for f in new._fields_] == [f[0] for f in old._fields_][:-1]
    assert all(getattr(new, f[0]).offset == getattr(old, f[0]).offset for f in new._fields_)
    assert ctypes.sizeof(t.BuildInput) == 1032  # the union is padded: an ABI 87 triangle array fills it for 118


@pytest.mark.parametrize("abi", sorted(LAYOUTS))
def test_options_fill_the_layout_of_their_abi(abi):
    options = PipelineOptions(num_payload_values=3, uses_motion_blur=True, launch_params_size=96,
                              primitive_type_flags=t.PrimitiveTypeFlags.SPHERE | t.PrimitiveTypeFlags.TRIANGLE)
    s = options.to_struct(abi)
    assert type(s) is structs_for(abi).pipeline_compile_options
    raw = bytes(s)
    offsets = LAYOUTS[abi]["pipeline_compile_options"][2]
    assert int.from_bytes(raw[offsets["usesMotionBlur"]:][:4], "little") == 1
    assert int.from_bytes(raw[offsets["numPayloadValues"]:][:4], "little") == 3
    assert int.from_bytes(raw[offsets["usesPrimitiveTypeFlags"]:][:4], "little") == 0x80000040
    if abi == 118:
        assert int.from_bytes(raw[32:40], "little") == 96  # the launch parameters' size, 9.1's new field
    else:
        assert not hasattr(s, "pipelineLaunchParamsSizeInBytes")  # no field to carry it: the flags follow the name
    m = ModuleOptions(max_register_count=7).to_struct(abi)
    assert type(m) is structs_for(abi).module_compile_options and m.maxRegisterCount == 7


def test_structs_for_refuses_an_unknown_abi():
    with pytest.raises(ValueError, match="supported"):
        structs_for(84)
