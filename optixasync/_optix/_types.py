"""ctypes declarations of the OptiX host ABI: the layouts every ABI optixasync speaks (87, 93, 105, 118) shares.

Only what optixasync uses is declared. The three option structs whose layout
changed between ABIs (module compile, pipeline compile and link options) are
declared here as ABI 87 has them and per ABI in
:mod:`optixasync._optix._layouts`; spheres, curves, custom primitives,
transforms and motion in :mod:`optixasync._optix._types_geometry`, re-exported
here. Sizes and offsets are pinned by ``tests/_optix/test_types.py`` and
``tests/_optix/test_abi_layouts.py``; enum values are the ABI's numbers.
"""

from __future__ import annotations

import ctypes
import enum

from ._types_geometry import *  # noqa: F403 (re-exported: one module of declarations for the callers)
from ._types_geometry import BuildInputCurveArray, BuildInputCustomPrimitiveArray, BuildInputSphereArray, MotionOptions
from ._types_geometry import __all__ as _geometry_names

__all__ = [*_geometry_names,
    "OptixResult", "DeviceProperty", "ValidationMode", "GeometryFlags", "HitKind", "IndicesFormat",
    "VertexFormat", "TransformFormat", "BuildInputType", "InstanceFlags", "BuildFlags",
    "BuildOperation", "AccelPropertyType", "RayFlags", "TraversableGraphFlags",
    "CompileOptimizationLevel", "CompileDebugLevel", "ProgramGroupKind", "ExceptionFlags",
    "PrimitiveTypeFlags", "LOG_CALLBACK", "DeviceContextOptions", "ModuleCompileOptions",
    "PipelineCompileOptions", "PipelineLinkOptions", "ProgramGroupSingleModule",
    "ProgramGroupHitgroup", "ProgramGroupCallables", "ProgramGroupDesc", "ProgramGroupOptions",
    "ShaderBindingTable", "StackSizes", "BuildInputTriangleArray", "BuildInputInstanceArray",
    "BuildInput", "AccelBuildOptions", "AccelBufferSizes", "AccelEmitDesc",
    "Instance", "SBT_RECORD_HEADER_SIZE", "SBT_RECORD_ALIGNMENT", "ACCEL_BUFFER_BYTE_ALIGNMENT",
    "INSTANCE_BYTE_ALIGNMENT",
]

SBT_RECORD_HEADER_SIZE = 32
SBT_RECORD_ALIGNMENT = 16
ACCEL_BUFFER_BYTE_ALIGNMENT = 128
INSTANCE_BYTE_ALIGNMENT = 16

CUdeviceptr = ctypes.c_uint64
OptixHandle = ctypes.c_void_p  # opaque pointers: context, module, program group, pipeline


class OptixResult(enum.IntEnum):
    SUCCESS = 0
    ERROR_INVALID_VALUE = 7001
    ERROR_HOST_OUT_OF_MEMORY = 7002
    ERROR_INVALID_OPERATION = 7003
    ERROR_FILE_IO_ERROR = 7004
    ERROR_INVALID_FILE_FORMAT = 7005
    ERROR_DISK_CACHE_INVALID_PATH = 7010
    ERROR_DISK_CACHE_PERMISSION_ERROR = 7011
    ERROR_DISK_CACHE_DATABASE_ERROR = 7012
    ERROR_DISK_CACHE_INVALID_DATA = 7013
    ERROR_LAUNCH_FAILURE = 7050
    ERROR_INVALID_DEVICE_CONTEXT = 7051
    ERROR_CUDA_NOT_INITIALIZED = 7052
    ERROR_VALIDATION_FAILURE = 7053
    ERROR_INVALID_INPUT = 7200
    ERROR_INVALID_LAUNCH_PARAMETER = 7201
    ERROR_INVALID_PAYLOAD_ACCESS = 7202
    ERROR_INVALID_ATTRIBUTE_ACCESS = 7203
    ERROR_INVALID_FUNCTION_USE = 7204
    ERROR_INVALID_FUNCTION_ARGUMENTS = 7205
    ERROR_PIPELINE_OUT_OF_CONSTANT_MEMORY = 7250
    ERROR_PIPELINE_LINK_ERROR = 7251
    ERROR_ILLEGAL_DURING_TASK_EXECUTE = 7270
    ERROR_CREATION_CANCELED = 7290  # ABI 118
    ERROR_INTERNAL_COMPILER_ERROR = 7299
    ERROR_DENOISER_MODEL_NOT_SET = 7300
    ERROR_DENOISER_NOT_INITIALIZED = 7301
    ERROR_NOT_COMPATIBLE = 7400
    ERROR_PAYLOAD_TYPE_MISMATCH = 7500
    ERROR_PAYLOAD_TYPE_RESOLUTION_FAILED = 7501
    ERROR_PAYLOAD_TYPE_ID_INVALID = 7502
    ERROR_NOT_SUPPORTED = 7800
    ERROR_UNSUPPORTED_ABI_VERSION = 7801
    ERROR_FUNCTION_TABLE_SIZE_MISMATCH = 7802
    ERROR_INVALID_ENTRY_FUNCTION_OPTIONS = 7803
    ERROR_LIBRARY_NOT_FOUND = 7804
    ERROR_ENTRY_SYMBOL_NOT_FOUND = 7805
    ERROR_LIBRARY_UNLOAD_FAILURE = 7806
    ERROR_DEVICE_OUT_OF_MEMORY = 7807
    ERROR_INVALID_POINTER = 7808  # ABI 105
    ERROR_SYMBOL_NOT_FOUND = 7809  # ABI 118
    ERROR_CUDA_ERROR = 7900
    ERROR_INTERNAL_ERROR = 7990
    ERROR_UNKNOWN = 7999


class DeviceProperty(enum.IntEnum):
    LIMIT_MAX_TRACE_DEPTH = 0x2001
    LIMIT_MAX_TRAVERSABLE_GRAPH_DEPTH = 0x2002
    LIMIT_MAX_PRIMITIVES_PER_GAS = 0x2003
    LIMIT_MAX_INSTANCES_PER_IAS = 0x2004
    RTCORE_VERSION = 0x2005
    LIMIT_MAX_INSTANCE_ID = 0x2006
    LIMIT_NUM_BITS_INSTANCE_VISIBILITY_MASK = 0x2007
    LIMIT_MAX_SBT_RECORDS_PER_GAS = 0x2008
    LIMIT_MAX_SBT_OFFSET = 0x2009
    SHADER_EXECUTION_REORDERING = 0x200A
    COOP_VEC = 0x200B  # ABI 105
    CLUSTER_ACCEL = 0x2020  # ABI 105
    LIMIT_MAX_CLUSTER_VERTICES = 0x2021  # ABI 105
    LIMIT_MAX_CLUSTER_TRIANGLES = 0x2022  # ABI 105
    LIMIT_MAX_STRUCTURED_GRID_RESOLUTION = 0x2023  # ABI 105
    LIMIT_MAX_CLUSTER_SBT_INDEX = 0x2024  # ABI 118
    LIMIT_MAX_CLUSTERS_PER_GAS = 0x2025  # ABI 118


class ValidationMode(enum.IntEnum):
    OFF = 0
    ALL = 0xFFFFFFFF


class GeometryFlags(enum.IntFlag):
    NONE = 0
    DISABLE_ANYHIT = 1 << 0
    REQUIRE_SINGLE_ANYHIT_CALL = 1 << 1
    DISABLE_TRIANGLE_FACE_CULLING = 1 << 2


class HitKind(enum.IntEnum):
    TRIANGLE_FRONT_FACE = 0xFE
    TRIANGLE_BACK_FACE = 0xFF


class IndicesFormat(enum.IntEnum):
    NONE = 0
    UNSIGNED_BYTE3 = 0x2101  # ABI 93
    UNSIGNED_SHORT3 = 0x2102
    UNSIGNED_INT3 = 0x2103


class VertexFormat(enum.IntEnum):
    NONE = 0
    FLOAT3 = 0x2121
    FLOAT2 = 0x2122
    HALF3 = 0x2123
    HALF2 = 0x2124


class TransformFormat(enum.IntEnum):
    NONE = 0
    MATRIX_FLOAT12 = 0x21E1


class BuildInputType(enum.IntEnum):
    TRIANGLES = 0x2141
    CUSTOM_PRIMITIVES = 0x2142
    INSTANCES = 0x2143
    INSTANCE_POINTERS = 0x2144
    CURVES = 0x2145
    SPHERES = 0x2146


class InstanceFlags(enum.IntFlag):
    NONE = 0
    DISABLE_TRIANGLE_FACE_CULLING = 1 << 0
    FLIP_TRIANGLE_FACING = 1 << 1
    DISABLE_ANYHIT = 1 << 2
    ENFORCE_ANYHIT = 1 << 3


class BuildFlags(enum.IntFlag):
    NONE = 0
    ALLOW_UPDATE = 1 << 0
    ALLOW_COMPACTION = 1 << 1
    PREFER_FAST_TRACE = 1 << 2
    PREFER_FAST_BUILD = 1 << 3
    ALLOW_RANDOM_VERTEX_ACCESS = 1 << 4
    ALLOW_RANDOM_INSTANCE_ACCESS = 1 << 5


class BuildOperation(enum.IntEnum):
    BUILD = 0x2161
    UPDATE = 0x2162


class AccelPropertyType(enum.IntEnum):
    COMPACTED_SIZE = 0x2181
    AABBS = 0x2182


class RayFlags(enum.IntFlag):
    NONE = 0
    DISABLE_ANYHIT = 1 << 0
    ENFORCE_ANYHIT = 1 << 1
    TERMINATE_ON_FIRST_HIT = 1 << 2
    DISABLE_CLOSESTHIT = 1 << 3
    CULL_BACK_FACING_TRIANGLES = 1 << 4
    CULL_FRONT_FACING_TRIANGLES = 1 << 5


class TraversableGraphFlags(enum.IntFlag):
    ALLOW_ANY = 0
    ALLOW_SINGLE_GAS = 1 << 0
    ALLOW_SINGLE_LEVEL_INSTANCING = 1 << 1


class CompileOptimizationLevel(enum.IntEnum):
    DEFAULT = 0
    LEVEL_0 = 0x2340
    LEVEL_1 = 0x2341
    LEVEL_2 = 0x2342
    LEVEL_3 = 0x2343


class CompileDebugLevel(enum.IntEnum):
    DEFAULT = 0
    NONE = 0x2350
    MINIMAL = 0x2351
    FULL = 0x2352
    MODERATE = 0x2353


class ProgramGroupKind(enum.IntEnum):
    RAYGEN = 0x2421
    MISS = 0x2422
    EXCEPTION = 0x2423
    HITGROUP = 0x2424
    CALLABLES = 0x2425


class ExceptionFlags(enum.IntFlag):
    NONE = 0
    STACK_OVERFLOW = 1 << 0
    TRACE_DEPTH = 1 << 1
    USER = 1 << 2


class PrimitiveTypeFlags(enum.IntFlag):
    CUSTOM = 1 << 0
    ROUND_QUADRATIC_BSPLINE = 1 << 1
    ROUND_CUBIC_BSPLINE = 1 << 2
    ROUND_LINEAR = 1 << 3
    ROUND_CATMULLROM = 1 << 4
    FLAT_QUADRATIC_BSPLINE = 1 << 5
    SPHERE = 1 << 6
    ROUND_CUBIC_BEZIER = 1 << 7
    ROUND_QUADRATIC_BSPLINE_ROCAPS = 1 << 8  # ABI 105
    ROUND_CUBIC_BSPLINE_ROCAPS = 1 << 9  # ABI 105
    ROUND_CATMULLROM_ROCAPS = 1 << 10  # ABI 105
    ROUND_CUBIC_BEZIER_ROCAPS = 1 << 11  # ABI 105
    TRIANGLE = 1 << 31


# void (*)(unsigned int level, const char* tag, const char* message, void* cbdata)
LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_uint, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p)


class DeviceContextOptions(ctypes.Structure):
    _fields_ = [
        ("logCallbackFunction", LOG_CALLBACK),
        ("logCallbackData", ctypes.c_void_p),
        ("logCallbackLevel", ctypes.c_int),
        ("validationMode", ctypes.c_uint),
    ]


class ModuleCompileOptions(ctypes.Structure):
    _fields_ = [
        ("maxRegisterCount", ctypes.c_int),
        ("optLevel", ctypes.c_uint),
        ("debugLevel", ctypes.c_uint),
        ("boundValues", ctypes.c_void_p),
        ("numBoundValues", ctypes.c_uint),
        ("numPayloadTypes", ctypes.c_uint),
        ("payloadTypes", ctypes.c_void_p),
    ]


class PipelineCompileOptions(ctypes.Structure):
    _fields_ = [
        ("usesMotionBlur", ctypes.c_int),
        ("traversableGraphFlags", ctypes.c_uint),
        ("numPayloadValues", ctypes.c_int),
        ("numAttributeValues", ctypes.c_int),
        ("exceptionFlags", ctypes.c_uint),
        ("pipelineLaunchParamsVariableName", ctypes.c_char_p),
        ("usesPrimitiveTypeFlags", ctypes.c_uint),
        ("allowOpacityMicromaps", ctypes.c_int),
    ]


class PipelineLinkOptions(ctypes.Structure):
    _fields_ = [("maxTraceDepth", ctypes.c_uint)]


class ProgramGroupSingleModule(ctypes.Structure):
    _fields_ = [("module", OptixHandle), ("entryFunctionName", ctypes.c_char_p)]


class ProgramGroupHitgroup(ctypes.Structure):
    _fields_ = [
        ("moduleCH", OptixHandle),
        ("entryFunctionNameCH", ctypes.c_char_p),
        ("moduleAH", OptixHandle),
        ("entryFunctionNameAH", ctypes.c_char_p),
        ("moduleIS", OptixHandle),
        ("entryFunctionNameIS", ctypes.c_char_p),
    ]


class ProgramGroupCallables(ctypes.Structure):
    _fields_ = [
        ("moduleDC", OptixHandle),
        ("entryFunctionNameDC", ctypes.c_char_p),
        ("moduleCC", OptixHandle),
        ("entryFunctionNameCC", ctypes.c_char_p),
    ]


class _ProgramGroupUnion(ctypes.Union):
    _fields_ = [
        ("raygen", ProgramGroupSingleModule),
        ("miss", ProgramGroupSingleModule),
        ("exception", ProgramGroupSingleModule),
        ("callables", ProgramGroupCallables),
        ("hitgroup", ProgramGroupHitgroup),
    ]


class ProgramGroupDesc(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [("kind", ctypes.c_uint), ("flags", ctypes.c_uint), ("u", _ProgramGroupUnion)]


class ProgramGroupOptions(ctypes.Structure):
    _fields_ = [("payloadType", ctypes.c_void_p)]


class ShaderBindingTable(ctypes.Structure):
    _fields_ = [
        ("raygenRecord", CUdeviceptr),
        ("exceptionRecord", CUdeviceptr),
        ("missRecordBase", CUdeviceptr),
        ("missRecordStrideInBytes", ctypes.c_uint),
        ("missRecordCount", ctypes.c_uint),
        ("hitgroupRecordBase", CUdeviceptr),
        ("hitgroupRecordStrideInBytes", ctypes.c_uint),
        ("hitgroupRecordCount", ctypes.c_uint),
        ("callablesRecordBase", CUdeviceptr),
        ("callablesRecordStrideInBytes", ctypes.c_uint),
        ("callablesRecordCount", ctypes.c_uint),
    ]


class StackSizes(ctypes.Structure):
    _fields_ = [
        ("cssRG", ctypes.c_uint),
        ("cssMS", ctypes.c_uint),
        ("cssCH", ctypes.c_uint),
        ("cssAH", ctypes.c_uint),
        ("cssIS", ctypes.c_uint),
        ("cssCC", ctypes.c_uint),
        ("dssDC", ctypes.c_uint),
    ]


class _BuildInputOpacityMicromap(ctypes.Structure):
    # Unused by optixasync; declared so the triangle array has the ABI's layout.
    _fields_ = [
        ("indexingMode", ctypes.c_uint),
        ("opacityMicromapArray", CUdeviceptr),
        ("indexBuffer", CUdeviceptr),
        ("indexSizeInBytes", ctypes.c_uint),
        ("indexStrideInBytes", ctypes.c_uint),
        ("indexOffset", ctypes.c_uint),
        ("numMicromapUsageCounts", ctypes.c_uint),
        ("micromapUsageCounts", ctypes.c_void_p),
    ]


class _BuildInputDisplacementMicromap(ctypes.Structure):
    # Unused by optixasync; declared so the triangle array has the ABI's layout.
    _fields_ = [
        ("indexingMode", ctypes.c_uint),
        ("displacementMicromapArray", CUdeviceptr),
        ("displacementMicromapIndexBuffer", CUdeviceptr),
        ("vertexDirectionsBuffer", CUdeviceptr),
        ("vertexBiasAndScaleBuffer", CUdeviceptr),
        ("triangleFlagsBuffer", CUdeviceptr),
        ("displacementMicromapIndexOffset", ctypes.c_uint),
        ("displacementMicromapIndexStrideInBytes", ctypes.c_uint),
        ("displacementMicromapIndexSizeInBytes", ctypes.c_uint),
        ("vertexDirectionFormat", ctypes.c_uint),
        ("vertexDirectionStrideInBytes", ctypes.c_uint),
        ("vertexBiasAndScaleFormat", ctypes.c_uint),
        ("vertexBiasAndScaleStrideInBytes", ctypes.c_uint),
        ("triangleFlagsStrideInBytes", ctypes.c_uint),
        ("numDisplacementMicromapUsageCounts", ctypes.c_uint),
        ("displacementMicromapUsageCounts", ctypes.c_void_p),
    ]


class BuildInputTriangleArray(ctypes.Structure):
    _fields_ = [
        ("vertexBuffers", ctypes.POINTER(CUdeviceptr)),
        ("numVertices", ctypes.c_uint),
        ("vertexFormat", ctypes.c_uint),
        ("vertexStrideInBytes", ctypes.c_uint),
        ("indexBuffer", CUdeviceptr),
        ("numIndexTriplets", ctypes.c_uint),
        ("indexFormat", ctypes.c_uint),
        ("indexStrideInBytes", ctypes.c_uint),
        ("preTransform", CUdeviceptr),
        ("flags", ctypes.POINTER(ctypes.c_uint)),
        ("numSbtRecords", ctypes.c_uint),
        ("sbtIndexOffsetBuffer", CUdeviceptr),
        ("sbtIndexOffsetSizeInBytes", ctypes.c_uint),
        ("sbtIndexOffsetStrideInBytes", ctypes.c_uint),
        ("primitiveIndexOffset", ctypes.c_uint),
        ("transformFormat", ctypes.c_uint),
        ("opacityMicromap", _BuildInputOpacityMicromap),
        ("displacementMicromap", _BuildInputDisplacementMicromap),
    ]


class BuildInputInstanceArray(ctypes.Structure):
    _fields_ = [
        ("instances", CUdeviceptr),
        ("numInstances", ctypes.c_uint),
        ("instanceStride", ctypes.c_uint),
    ]


class _BuildInputUnion(ctypes.Union):
    _fields_ = [
        ("triangleArray", BuildInputTriangleArray),
        ("curveArray", BuildInputCurveArray),
        ("sphereArray", BuildInputSphereArray),
        ("customPrimitiveArray", BuildInputCustomPrimitiveArray),
        ("instanceArray", BuildInputInstanceArray),
        ("pad", ctypes.c_char * 1024),
    ]


class BuildInput(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = [("type", ctypes.c_uint), ("u", _BuildInputUnion)]


class AccelBuildOptions(ctypes.Structure):
    _fields_ = [
        ("buildFlags", ctypes.c_uint),
        ("operation", ctypes.c_uint),
        ("motionOptions", MotionOptions),
    ]


class AccelBufferSizes(ctypes.Structure):
    _fields_ = [
        ("outputSizeInBytes", ctypes.c_size_t),
        ("tempSizeInBytes", ctypes.c_size_t),
        ("tempUpdateSizeInBytes", ctypes.c_size_t),
    ]


class AccelEmitDesc(ctypes.Structure):
    _fields_ = [("result", CUdeviceptr), ("type", ctypes.c_uint)]


class Instance(ctypes.Structure):
    _fields_ = [
        ("transform", ctypes.c_float * 12),
        ("instanceId", ctypes.c_uint),
        ("sbtOffset", ctypes.c_uint),
        ("visibilityMask", ctypes.c_uint),
        ("flags", ctypes.c_uint),
        ("traversableHandle", ctypes.c_uint64),
        ("pad", ctypes.c_uint * 2),
    ]
