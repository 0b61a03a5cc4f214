"""The ctypes declarations every ABI shares, against numbers measured from NVIDIA's C headers (x86-64).

The layouts below are those of ``optix_types.h`` of OptiX 8.0 (ABI 87); OptiX 8.1, 9.0 and 9.1 (ABI 93, 105,
118) give the same numbers for each of them (measured with ``sizeof``/``offsetof`` against each release's
header). The structs whose layout changed between ABIs are checked per ABI in ``test_abi_layouts.py``.

Every struct, union and enum declared in ``optixasync._optix._types`` and ``_types_geometry`` must appear in the
tables below, so a declaration added without a layout check fails here.
"""

from __future__ import annotations

import ctypes
import enum

import pytest

# The binding's ctypes declarations have no public door beyond the few flag enums re-exported by optixasync;
# ``optixasync._optix.types`` is the binding layer's own name for the module.
from optixasync._optix import _types_geometry
from optixasync._optix import types as t

# name -> (sizeof, alignment, {field: offset}). Every declared field is listed.
STRUCT_LAYOUTS: dict[str, tuple[int, int, dict[str, int]]] = {
    "DeviceContextOptions": (24, 8, {
        "logCallbackFunction": 0, "logCallbackData": 8, "logCallbackLevel": 16, "validationMode": 20,
    }),
    "ModuleCompileOptions": (40, 8, {
        "maxRegisterCount": 0, "optLevel": 4, "debugLevel": 8, "boundValues": 16, "numBoundValues": 24,
        "numPayloadTypes": 28, "payloadTypes": 32,
    }),
    "PipelineCompileOptions": (40, 8, {
        "usesMotionBlur": 0, "traversableGraphFlags": 4, "numPayloadValues": 8, "numAttributeValues": 12,
        "exceptionFlags": 16, "pipelineLaunchParamsVariableName": 24, "usesPrimitiveTypeFlags": 32,
        "allowOpacityMicromaps": 36,
    }),
    "PipelineLinkOptions": (4, 4, {"maxTraceDepth": 0}),
    "ProgramGroupSingleModule": (16, 8, {"module": 0, "entryFunctionName": 8}),
    "ProgramGroupHitgroup": (48, 8, {
        "moduleCH": 0, "entryFunctionNameCH": 8, "moduleAH": 16, "entryFunctionNameAH": 24, "moduleIS": 32,
        "entryFunctionNameIS": 40,
    }),
    "ProgramGroupCallables": (32, 8, {
        "moduleDC": 0, "entryFunctionNameDC": 8, "moduleCC": 16, "entryFunctionNameCC": 24,
    }),
    # The anonymous union of OptixProgramGroupDesc is the field "u"; its members start at 8.
    "ProgramGroupDesc": (56, 8, {"kind": 0, "flags": 4, "u": 8}),
    "ProgramGroupOptions": (8, 8, {"payloadType": 0}),
    "ShaderBindingTable": (64, 8, {
        "raygenRecord": 0, "exceptionRecord": 8, "missRecordBase": 16, "missRecordStrideInBytes": 24,
        "missRecordCount": 28, "hitgroupRecordBase": 32, "hitgroupRecordStrideInBytes": 40, "hitgroupRecordCount": 44,
        "callablesRecordBase": 48, "callablesRecordStrideInBytes": 56, "callablesRecordCount": 60,
    }),
    "StackSizes": (28, 4, {
        "cssRG": 0, "cssMS": 4, "cssCH": 8, "cssAH": 12, "cssIS": 16, "cssCC": 20, "dssDC": 24,
    }),
    "_BuildInputOpacityMicromap": (48, 8, {
        "indexingMode": 0, "opacityMicromapArray": 8, "indexBuffer": 16, "indexSizeInBytes": 24,
        "indexStrideInBytes": 28, "indexOffset": 32, "numMicromapUsageCounts": 36, "micromapUsageCounts": 40,
    }),
    "_BuildInputDisplacementMicromap": (96, 8, {
        "indexingMode": 0, "displacementMicromapArray": 8, "displacementMicromapIndexBuffer": 16,
        "vertexDirectionsBuffer": 24, "vertexBiasAndScaleBuffer": 32, "triangleFlagsBuffer": 40,
        "displacementMicromapIndexOffset": 48, "displacementMicromapIndexStrideInBytes": 52,
        "displacementMicromapIndexSizeInBytes": 56, "vertexDirectionFormat": 60, "vertexDirectionStrideInBytes": 64,
        "vertexBiasAndScaleFormat": 68, "vertexBiasAndScaleStrideInBytes": 72, "triangleFlagsStrideInBytes": 76,
        "numDisplacementMicromapUsageCounts": 80, "displacementMicromapUsageCounts": 88,
    }),
    "BuildInputTriangleArray": (240, 8, {
        "vertexBuffers": 0, "numVertices": 8, "vertexFormat": 12, "vertexStrideInBytes": 16, "indexBuffer": 24,
        "numIndexTriplets": 32, "indexFormat": 36, "indexStrideInBytes": 40, "preTransform": 48, "flags": 56,
        "numSbtRecords": 64, "sbtIndexOffsetBuffer": 72, "sbtIndexOffsetSizeInBytes": 80,
        "sbtIndexOffsetStrideInBytes": 84, "primitiveIndexOffset": 88, "transformFormat": 92, "opacityMicromap": 96,
        "displacementMicromap": 144,
    }),
    "BuildInputInstanceArray": (16, 8, {"instances": 0, "numInstances": 8, "instanceStride": 12}),
    # The anonymous union of OptixBuildInput is the field "u" at 8 (the ABI pads it to 1024 bytes).
    "BuildInput": (1032, 8, {"type": 0, "u": 8}),
    "MotionOptions": (12, 4, {"numKeys": 0, "flags": 2, "timeBegin": 4, "timeEnd": 8}),
    "Aabb": (24, 4, {"minX": 0, "minY": 4, "minZ": 8, "maxX": 12, "maxY": 16, "maxZ": 20}),
    "BuildInputCurveArray": (80, 8, {
        "curveType": 0, "numPrimitives": 4, "vertexBuffers": 8, "numVertices": 16, "vertexStrideInBytes": 20,
        "widthBuffers": 24, "widthStrideInBytes": 32, "normalBuffers": 40, "normalStrideInBytes": 48,
        "indexBuffer": 56, "indexStrideInBytes": 64, "flag": 68, "primitiveIndexOffset": 72, "endcapFlags": 76,
    }),
    "BuildInputSphereArray": (72, 8, {
        "vertexBuffers": 0, "vertexStrideInBytes": 8, "numVertices": 12, "radiusBuffers": 16,
        "radiusStrideInBytes": 24, "singleRadius": 28, "flags": 32, "numSbtRecords": 40, "sbtIndexOffsetBuffer": 48,
        "sbtIndexOffsetSizeInBytes": 56, "sbtIndexOffsetStrideInBytes": 60, "primitiveIndexOffset": 64,
    }),
    "BuildInputCustomPrimitiveArray": (56, 8, {
        "aabbBuffers": 0, "numPrimitives": 8, "strideInBytes": 12, "flags": 16, "numSbtRecords": 24,
        "sbtIndexOffsetBuffer": 32, "sbtIndexOffsetSizeInBytes": 40, "sbtIndexOffsetStrideInBytes": 44,
        "primitiveIndexOffset": 48,
    }),
    "BuiltinISOptions": (16, 4, {
        "builtinISModuleType": 0, "usesMotionBlur": 4, "buildFlags": 8, "curveEndcapFlags": 12,
    }),
    "StaticTransform": (112, 8, {"child": 0, "pad": 8, "transform": 16, "invTransform": 64}),
    "MatrixMotionTransform": (128, 8, {"child": 0, "motionOptions": 8, "pad": 20, "transform": 32}),
    "SRTData": (64, 4, {name: 4 * k for k, name in enumerate(
        ("sx", "a", "b", "pvx", "sy", "c", "pvy", "sz", "pvz", "qx", "qy", "qz", "qw", "tx", "ty", "tz"))}),
    "SRTMotionTransform": (160, 8, {"child": 0, "motionOptions": 8, "pad": 20, "srtData": 32}),
    "ModuleCompileBoundValueEntry": (32, 8, {
        "pipelineParamOffsetInBytes": 0, "sizeInBytes": 8, "boundValuePtr": 16, "annotation": 24,
    }),
    "PayloadType": (16, 8, {"numPayloadValues": 0, "payloadSemantics": 8}),
    "AccelBuildOptions": (20, 4, {"buildFlags": 0, "operation": 4, "motionOptions": 8}),
    "AccelBufferSizes": (24, 8, {"outputSizeInBytes": 0, "tempSizeInBytes": 8, "tempUpdateSizeInBytes": 16}),
    "AccelEmitDesc": (16, 8, {"result": 0, "type": 8}),
    "Instance": (80, 8, {
        "transform": 0, "instanceId": 48, "sbtOffset": 52, "visibilityMask": 56, "flags": 60,
        "traversableHandle": 64, "pad": 72,
    }),
}

# Unions: name -> (sizeof, {member: offset}); every member starts at 0.
UNION_LAYOUTS: dict[str, tuple[int, dict[str, int]]] = {
    "_ProgramGroupUnion": (48, {"raygen": 0, "miss": 0, "exception": 0, "callables": 0, "hitgroup": 0}),
    "_BuildInputUnion": (1024, {"triangleArray": 0, "curveArray": 0, "sphereArray": 0, "customPrimitiveArray": 0,
                                "instanceArray": 0, "pad": 0}),
}

# Members of the anonymous unions, reached through the outer struct: (struct, member) -> (offset, size).
ANONYMOUS_MEMBERS: dict[tuple[str, str], tuple[int, int]] = {
    ("ProgramGroupDesc", "raygen"): (8, 16),
    ("ProgramGroupDesc", "miss"): (8, 16),
    ("ProgramGroupDesc", "exception"): (8, 16),
    ("ProgramGroupDesc", "callables"): (8, 32),
    ("ProgramGroupDesc", "hitgroup"): (8, 48),
    ("BuildInput", "triangleArray"): (8, 240),
    ("BuildInput", "instanceArray"): (8, 16),
    ("BuildInput", "curveArray"): (8, 80),
    ("BuildInput", "sphereArray"): (8, 72),
    ("BuildInput", "customPrimitiveArray"): (8, 56),
}

# Enum class name -> {member name: value}. Every member of every enum class.
ENUM_VALUES: dict[str, dict[str, int]] = {
    "OptixResult": {
        "SUCCESS": 0,
        "ERROR_INVALID_VALUE": 7001,
        "ERROR_HOST_OUT_OF_MEMORY": 7002,
        "ERROR_INVALID_OPERATION": 7003,
        "ERROR_FILE_IO_ERROR": 7004,
        "ERROR_INVALID_FILE_FORMAT": 7005,
        "ERROR_DISK_CACHE_INVALID_PATH": 7010,
        "ERROR_DISK_CACHE_PERMISSION_ERROR": 7011,
        "ERROR_DISK_CACHE_DATABASE_ERROR": 7012,
        "ERROR_DISK_CACHE_INVALID_DATA": 7013,
        "ERROR_LAUNCH_FAILURE": 7050,
        "ERROR_INVALID_DEVICE_CONTEXT": 7051,
        "ERROR_CUDA_NOT_INITIALIZED": 7052,
        "ERROR_VALIDATION_FAILURE": 7053,
        "ERROR_INVALID_INPUT": 7200,
        "ERROR_INVALID_LAUNCH_PARAMETER": 7201,
        "ERROR_INVALID_PAYLOAD_ACCESS": 7202,
        "ERROR_INVALID_ATTRIBUTE_ACCESS": 7203,
        "ERROR_INVALID_FUNCTION_USE": 7204,
        "ERROR_INVALID_FUNCTION_ARGUMENTS": 7205,
        "ERROR_PIPELINE_OUT_OF_CONSTANT_MEMORY": 7250,
        "ERROR_PIPELINE_LINK_ERROR": 7251,
        "ERROR_ILLEGAL_DURING_TASK_EXECUTE": 7270,
        "ERROR_CREATION_CANCELED": 7290,
        "ERROR_INTERNAL_COMPILER_ERROR": 7299,
        "ERROR_DENOISER_MODEL_NOT_SET": 7300,
        "ERROR_DENOISER_NOT_INITIALIZED": 7301,
        "ERROR_NOT_COMPATIBLE": 7400,
        "ERROR_PAYLOAD_TYPE_MISMATCH": 7500,
        "ERROR_PAYLOAD_TYPE_RESOLUTION_FAILED": 7501,
        "ERROR_PAYLOAD_TYPE_ID_INVALID": 7502,
        "ERROR_NOT_SUPPORTED": 7800,
        "ERROR_UNSUPPORTED_ABI_VERSION": 7801,
        "ERROR_FUNCTION_TABLE_SIZE_MISMATCH": 7802,
        "ERROR_INVALID_ENTRY_FUNCTION_OPTIONS": 7803,
        "ERROR_LIBRARY_NOT_FOUND": 7804,
        "ERROR_ENTRY_SYMBOL_NOT_FOUND": 7805,
        "ERROR_LIBRARY_UNLOAD_FAILURE": 7806,
        "ERROR_DEVICE_OUT_OF_MEMORY": 7807,
        "ERROR_INVALID_POINTER": 7808,
        "ERROR_SYMBOL_NOT_FOUND": 7809,
        "ERROR_CUDA_ERROR": 7900,
        "ERROR_INTERNAL_ERROR": 7990,
        "ERROR_UNKNOWN": 7999,
    },
    "DeviceProperty": {
        "LIMIT_MAX_TRACE_DEPTH": 0x2001,
        "LIMIT_MAX_TRAVERSABLE_GRAPH_DEPTH": 0x2002,
        "LIMIT_MAX_PRIMITIVES_PER_GAS": 0x2003,
        "LIMIT_MAX_INSTANCES_PER_IAS": 0x2004,
        "RTCORE_VERSION": 0x2005,
        "LIMIT_MAX_INSTANCE_ID": 0x2006,
        "LIMIT_NUM_BITS_INSTANCE_VISIBILITY_MASK": 0x2007,
        "LIMIT_MAX_SBT_RECORDS_PER_GAS": 0x2008,
        "LIMIT_MAX_SBT_OFFSET": 0x2009,
        "SHADER_EXECUTION_REORDERING": 0x200A,
        "COOP_VEC": 0x200B,
        "CLUSTER_ACCEL": 0x2020,
        "LIMIT_MAX_CLUSTER_VERTICES": 0x2021,
        "LIMIT_MAX_CLUSTER_TRIANGLES": 0x2022,
        "LIMIT_MAX_STRUCTURED_GRID_RESOLUTION": 0x2023,
        "LIMIT_MAX_CLUSTER_SBT_INDEX": 0x2024,
        "LIMIT_MAX_CLUSTERS_PER_GAS": 0x2025,
    },
    "ValidationMode": {"OFF": 0, "ALL": 0xFFFFFFFF},
    "GeometryFlags": {
        "NONE": 0, "DISABLE_ANYHIT": 1, "REQUIRE_SINGLE_ANYHIT_CALL": 2, "DISABLE_TRIANGLE_FACE_CULLING": 4,
    },
    "HitKind": {"TRIANGLE_FRONT_FACE": 0xFE, "TRIANGLE_BACK_FACE": 0xFF},
    "IndicesFormat": {"NONE": 0, "UNSIGNED_BYTE3": 0x2101, "UNSIGNED_SHORT3": 0x2102, "UNSIGNED_INT3": 0x2103},
    "VertexFormat": {"NONE": 0, "FLOAT3": 0x2121, "FLOAT2": 0x2122, "HALF3": 0x2123, "HALF2": 0x2124},
    "TransformFormat": {"NONE": 0, "MATRIX_FLOAT12": 0x21E1},
    "BuildInputType": {
        "TRIANGLES": 0x2141, "CUSTOM_PRIMITIVES": 0x2142, "INSTANCES": 0x2143, "INSTANCE_POINTERS": 0x2144,
        "CURVES": 0x2145, "SPHERES": 0x2146,
    },
    "InstanceFlags": {
        "NONE": 0, "DISABLE_TRIANGLE_FACE_CULLING": 1, "FLIP_TRIANGLE_FACING": 2, "DISABLE_ANYHIT": 4,
        "ENFORCE_ANYHIT": 8,
    },
    "BuildFlags": {
        "NONE": 0, "ALLOW_UPDATE": 1, "ALLOW_COMPACTION": 2, "PREFER_FAST_TRACE": 4, "PREFER_FAST_BUILD": 8,
        "ALLOW_RANDOM_VERTEX_ACCESS": 16, "ALLOW_RANDOM_INSTANCE_ACCESS": 32,
    },
    "BuildOperation": {"BUILD": 0x2161, "UPDATE": 0x2162},
    "AccelPropertyType": {"COMPACTED_SIZE": 0x2181, "AABBS": 0x2182},
    "RayFlags": {
        "NONE": 0, "DISABLE_ANYHIT": 1, "ENFORCE_ANYHIT": 2, "TERMINATE_ON_FIRST_HIT": 4, "DISABLE_CLOSESTHIT": 8,
        "CULL_BACK_FACING_TRIANGLES": 16, "CULL_FRONT_FACING_TRIANGLES": 32,
    },
    "TraversableGraphFlags": {"ALLOW_ANY": 0, "ALLOW_SINGLE_GAS": 1, "ALLOW_SINGLE_LEVEL_INSTANCING": 2},
    "CompileOptimizationLevel": {
        "DEFAULT": 0, "LEVEL_0": 0x2340, "LEVEL_1": 0x2341, "LEVEL_2": 0x2342, "LEVEL_3": 0x2343,
    },
    "CompileDebugLevel": {"DEFAULT": 0, "NONE": 0x2350, "MINIMAL": 0x2351, "FULL": 0x2352, "MODERATE": 0x2353},
    "ProgramGroupKind": {
        "RAYGEN": 0x2421, "MISS": 0x2422, "EXCEPTION": 0x2423, "HITGROUP": 0x2424, "CALLABLES": 0x2425,
    },
    "ExceptionFlags": {"NONE": 0, "STACK_OVERFLOW": 1, "TRACE_DEPTH": 2, "USER": 4},
    "PrimitiveTypeFlags": {
        "CUSTOM": 1, "ROUND_QUADRATIC_BSPLINE": 2, "ROUND_CUBIC_BSPLINE": 4, "ROUND_LINEAR": 8,
        "ROUND_CATMULLROM": 16, "FLAT_QUADRATIC_BSPLINE": 32, "SPHERE": 64, "ROUND_CUBIC_BEZIER": 128,
        "ROUND_QUADRATIC_BSPLINE_ROCAPS": 256, "ROUND_CUBIC_BSPLINE_ROCAPS": 512, "ROUND_CATMULLROM_ROCAPS": 1024,
        "ROUND_CUBIC_BEZIER_ROCAPS": 2048, "TRIANGLE": 0x80000000,
    },
    "PrimitiveType": {
        "CUSTOM": 0x2500, "ROUND_QUADRATIC_BSPLINE": 0x2501, "ROUND_CUBIC_BSPLINE": 0x2502, "ROUND_LINEAR": 0x2503,
        "ROUND_CATMULLROM": 0x2504, "FLAT_QUADRATIC_BSPLINE": 0x2505, "SPHERE": 0x2506, "ROUND_CUBIC_BEZIER": 0x2507,
        "ROUND_QUADRATIC_BSPLINE_ROCAPS": 0x2508, "ROUND_CUBIC_BSPLINE_ROCAPS": 0x2509,
        "ROUND_CATMULLROM_ROCAPS": 0x250A, "ROUND_CUBIC_BEZIER_ROCAPS": 0x250B, "TRIANGLE": 0x2531,
    },
    "CurveEndcapFlags": {"DEFAULT": 0, "ON": 1},
    "MotionFlags": {"NONE": 0, "START_VANISH": 1, "END_VANISH": 2},
    "TraversableType": {"STATIC_TRANSFORM": 0x21C1, "MATRIX_MOTION_TRANSFORM": 0x21C2, "SRT_MOTION_TRANSFORM": 0x21C3},
    "ModuleCompileState": {
        "NOT_STARTED": 0x2360, "STARTED": 0x2361, "IMPENDING_FAILURE": 0x2362, "FAILED": 0x2363, "COMPLETED": 0x2364,
    },
    "PayloadSemantics": {
        "TRACE_CALLER_READ": 1, "TRACE_CALLER_WRITE": 2, "TRACE_CALLER_READ_WRITE": 3, "CH_READ": 4, "CH_WRITE": 8,
        "CH_READ_WRITE": 12, "MS_READ": 16, "MS_WRITE": 32, "MS_READ_WRITE": 48, "AH_READ": 64, "AH_WRITE": 128,
        "AH_READ_WRITE": 192, "IS_READ": 256, "IS_WRITE": 512, "IS_READ_WRITE": 768,
    },
}

CONSTANTS = {
    "SBT_RECORD_HEADER_SIZE": 32,
    "SBT_RECORD_ALIGNMENT": 16,
    "ACCEL_BUFFER_BYTE_ALIGNMENT": 128,
    "INSTANCE_BYTE_ALIGNMENT": 16,
    "AABB_BUFFER_BYTE_ALIGNMENT": 8,
    "TRANSFORM_BYTE_ALIGNMENT": 64,
    "COMPILE_MAX_PAYLOAD_TYPES": 8,
}


def _declared(base: type) -> dict[str, type]:
    """Classes derived from ``base`` that ``_types`` and ``_types_geometry`` declare (not imported ones)."""
    modules = (t.__name__, _types_geometry.__name__)
    return {
        name: obj
        for name, obj in vars(t).items()
        if isinstance(obj, type) and issubclass(obj, base) and obj.__module__ in modules
    }


# --- structs --------------------------------------------------------------------------------------------------------


def test_every_declared_struct_has_a_layout_table():
    assert set(_declared(ctypes.Structure)) == set(STRUCT_LAYOUTS)


def test_every_declared_union_has_a_layout_table():
    assert set(_declared(ctypes.Union)) == set(UNION_LAYOUTS)


@pytest.mark.parametrize("name", sorted(STRUCT_LAYOUTS))
def test_struct_size_and_alignment(name):
    cls = getattr(t, name)
    size, alignment, _ = STRUCT_LAYOUTS[name]
    assert ctypes.sizeof(cls) == size
    assert ctypes.alignment(cls) == alignment


@pytest.mark.parametrize("name", sorted(STRUCT_LAYOUTS))
def test_struct_field_offsets(name):
    cls = getattr(t, name)
    _, _, offsets = STRUCT_LAYOUTS[name]
    declared = [field[0] for field in cls._fields_]
    assert declared == list(offsets), "fields differ from the ABI's, or are in another order"
    actual = {field: getattr(cls, field).offset for field in declared}
    assert actual == offsets


@pytest.mark.parametrize("name", sorted(STRUCT_LAYOUTS))
def test_struct_fields_fill_their_slots(name):
    """Each field ends at or before the next one starts (no field declared wider than the ABI's)."""
    cls = getattr(t, name)
    size, _, offsets = STRUCT_LAYOUTS[name]
    ends = list(offsets.values())[1:] + [size]
    for (field, offset), end in zip(offsets.items(), ends, strict=True):
        assert offset + getattr(cls, field).size <= end, field


@pytest.mark.parametrize("name", sorted(UNION_LAYOUTS))
def test_union_layout(name):
    cls = getattr(t, name)
    size, offsets = UNION_LAYOUTS[name]
    assert ctypes.sizeof(cls) == size
    assert [field[0] for field in cls._fields_] == list(offsets)
    assert {field: getattr(cls, field).offset for field in offsets} == offsets


@pytest.mark.parametrize(("struct", "member"), sorted(ANONYMOUS_MEMBERS))
def test_anonymous_union_members(struct, member):
    cls = getattr(t, struct)
    offset, size = ANONYMOUS_MEMBERS[(struct, member)]
    assert "u" in getattr(cls, "_anonymous_", ())
    field = getattr(cls, member)
    assert (field.offset, field.size) == (offset, size)


def test_field_widths_that_matter():
    """A few fields whose C type is not 4 or 8 bytes by default, or is easy to get wrong."""
    assert t.MotionOptions.numKeys.size == 2
    assert t.MotionOptions.flags.size == 2
    assert t.Instance.transform.size == 48
    assert t.Instance.pad.size == 8
    assert t.AccelBufferSizes.outputSizeInBytes.size == 8
    assert t.ShaderBindingTable.raygenRecord.size == 8
    assert t.DeviceContextOptions.logCallbackFunction.size == 8


def test_anonymous_union_writes_land_at_the_abi_offset():
    desc = t.ProgramGroupDesc()
    desc.kind = t.ProgramGroupKind.HITGROUP
    desc.hitgroup.moduleAH = 0x1122334455667788
    raw = bytes(desc)
    assert int.from_bytes(raw[0:4], "little") == 0x2424
    assert int.from_bytes(raw[8 + 16 : 8 + 24], "little") == 0x1122334455667788

    build = t.BuildInput()
    build.type = t.BuildInputType.INSTANCES
    build.instanceArray.numInstances = 7
    raw = bytes(build)
    assert int.from_bytes(raw[0:4], "little") == 0x2143
    assert int.from_bytes(raw[8 + 8 : 8 + 12], "little") == 7


def test_instance_array_has_the_abi_stride():
    assert ctypes.sizeof(t.Instance * 3) == 240
    assert ctypes.sizeof(t.Instance) % t.INSTANCE_BYTE_ALIGNMENT == 0


def test_log_callback_signature():
    assert t.LOG_CALLBACK._restype_ is None
    assert t.LOG_CALLBACK._argtypes_ == (ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


# --- enums and constants --------------------------------------------------------------------------------------------


def test_every_declared_enum_has_a_value_table():
    assert set(_declared(enum.Enum)) == set(ENUM_VALUES)


@pytest.mark.parametrize("name", sorted(ENUM_VALUES))
def test_enum_values(name):
    cls = getattr(t, name)
    members = {member.name: int(member.value) for member in cls.__members__.values()}
    assert members == ENUM_VALUES[name]


def test_flag_enums_combine_as_bits():
    assert int(t.BuildFlags.PREFER_FAST_TRACE | t.BuildFlags.ALLOW_COMPACTION) == 6
    assert int(t.PrimitiveTypeFlags.TRIANGLE) == 1 << 31
    assert int(t.PrimitiveTypeFlags.TRIANGLE) & 0xFFFFFFFF == 0x80000000


@pytest.mark.parametrize(("name", "value"), sorted(CONSTANTS.items()))
def test_constants(name, value):
    assert getattr(t, name) == value


def test_all_names_exist():
    for name in t.__all__:
        assert hasattr(t, name), name
