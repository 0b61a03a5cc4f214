"""ctypes declarations of the OptiX host ABI beyond triangles: spheres, curves, custom primitives, transforms, motion.

Also the module-compilation extras (bound values, payload types) and the
built-in intersection options. Only what optixasync uses is declared; these
layouts are the same in every ABI optixasync speaks (87, 93, 105, 118), as
``tests/_optix/test_abi_layouts.py`` pins against the numbers of the OptiX
8.0, 8.1, 9.0 and 9.1 headers. Enum values are the ABI's numbers.
"""

from __future__ import annotations

import ctypes
import enum

__all__ = [
    "PrimitiveType", "CurveEndcapFlags", "MotionFlags", "TraversableType", "ModuleCompileState",
    "PayloadSemantics", "Aabb", "BuildInputCurveArray", "BuildInputSphereArray", "BuildInputCustomPrimitiveArray",
    "MotionOptions", "BuiltinISOptions", "StaticTransform", "MatrixMotionTransform", "SRTData",
    "SRTMotionTransform", "ModuleCompileBoundValueEntry", "PayloadType", "AABB_BUFFER_BYTE_ALIGNMENT",
    "TRANSFORM_BYTE_ALIGNMENT", "COMPILE_MAX_PAYLOAD_TYPES",
]

#: Alignment of the AABB buffers of custom primitives.
AABB_BUFFER_BYTE_ALIGNMENT = 8
#: Alignment of the static, matrix-motion and SRT-motion transform structs in device memory.
TRANSFORM_BYTE_ALIGNMENT = 64
#: Payload types a module may declare (``OPTIX_COMPILE_DEFAULT_MAX_PAYLOAD_TYPE_COUNT``).
COMPILE_MAX_PAYLOAD_TYPES = 8

_CUdeviceptr = ctypes.c_uint64
_DevicePointers = ctypes.POINTER(_CUdeviceptr)  # a host array of device pointers, one per motion key


class PrimitiveType(enum.IntEnum):
    """What a GAS holds and what a built-in intersection module intersects (``OptixPrimitiveType``)."""

    CUSTOM = 0x2500
    ROUND_QUADRATIC_BSPLINE = 0x2501
    ROUND_CUBIC_BSPLINE = 0x2502
    ROUND_LINEAR = 0x2503
    ROUND_CATMULLROM = 0x2504
    FLAT_QUADRATIC_BSPLINE = 0x2505
    SPHERE = 0x2506
    ROUND_CUBIC_BEZIER = 0x2507
    # ABI 105 (OptiX 9.0) and later: round curves intersected with rotation-optimised caps.
    ROUND_QUADRATIC_BSPLINE_ROCAPS = 0x2508
    ROUND_CUBIC_BSPLINE_ROCAPS = 0x2509
    ROUND_CATMULLROM_ROCAPS = 0x250A
    ROUND_CUBIC_BEZIER_ROCAPS = 0x250B
    TRIANGLE = 0x2531


class CurveEndcapFlags(enum.IntFlag):
    DEFAULT = 0
    ON = 1 << 0


class MotionFlags(enum.IntFlag):
    NONE = 0
    START_VANISH = 1 << 0
    END_VANISH = 1 << 1


class TraversableType(enum.IntEnum):
    STATIC_TRANSFORM = 0x21C1
    MATRIX_MOTION_TRANSFORM = 0x21C2
    SRT_MOTION_TRANSFORM = 0x21C3


class ModuleCompileState(enum.IntEnum):
    NOT_STARTED = 0x2360
    STARTED = 0x2361
    IMPENDING_FAILURE = 0x2362
    FAILED = 0x2363
    COMPLETED = 0x2364


class PayloadSemantics(enum.IntFlag):
    """Who reads and writes one payload register of a payload type (2 bits per program kind)."""

    TRACE_CALLER_READ = 1 << 0
    TRACE_CALLER_WRITE = 2 << 0
    TRACE_CALLER_READ_WRITE = 3 << 0
    CH_READ = 1 << 2
    CH_WRITE = 2 << 2
    CH_READ_WRITE = 3 << 2
    MS_READ = 1 << 4
    MS_WRITE = 2 << 4
    MS_READ_WRITE = 3 << 4
    AH_READ = 1 << 6
    AH_WRITE = 2 << 6
    AH_READ_WRITE = 3 << 6
    IS_READ = 1 << 8
    IS_WRITE = 2 << 8
    IS_READ_WRITE = 3 << 8


class Aabb(ctypes.Structure):
    _fields_ = [(name, ctypes.c_float) for name in ("minX", "minY", "minZ", "maxX", "maxY", "maxZ")]


class BuildInputCurveArray(ctypes.Structure):
    _fields_ = [
        ("curveType", ctypes.c_uint),
        ("numPrimitives", ctypes.c_uint),
        ("vertexBuffers", _DevicePointers),
        ("numVertices", ctypes.c_uint),
        ("vertexStrideInBytes", ctypes.c_uint),
        ("widthBuffers", _DevicePointers),
        ("widthStrideInBytes", ctypes.c_uint),
        ("normalBuffers", _DevicePointers),
        ("normalStrideInBytes", ctypes.c_uint),
        ("indexBuffer", _CUdeviceptr),
        ("indexStrideInBytes", ctypes.c_uint),
        ("flag", ctypes.c_uint),
        ("primitiveIndexOffset", ctypes.c_uint),
        ("endcapFlags", ctypes.c_uint),
    ]


class BuildInputSphereArray(ctypes.Structure):
    _fields_ = [
        ("vertexBuffers", _DevicePointers),
        ("vertexStrideInBytes", ctypes.c_uint),
        ("numVertices", ctypes.c_uint),
        ("radiusBuffers", _DevicePointers),
        ("radiusStrideInBytes", ctypes.c_uint),
        ("singleRadius", ctypes.c_int),
        ("flags", ctypes.POINTER(ctypes.c_uint)),
        ("numSbtRecords", ctypes.c_uint),
        ("sbtIndexOffsetBuffer", _CUdeviceptr),
        ("sbtIndexOffsetSizeInBytes", ctypes.c_uint),
        ("sbtIndexOffsetStrideInBytes", ctypes.c_uint),
        ("primitiveIndexOffset", ctypes.c_uint),
    ]


class BuildInputCustomPrimitiveArray(ctypes.Structure):
    _fields_ = [
        ("aabbBuffers", _DevicePointers),
        ("numPrimitives", ctypes.c_uint),
        ("strideInBytes", ctypes.c_uint),
        ("flags", ctypes.POINTER(ctypes.c_uint)),
        ("numSbtRecords", ctypes.c_uint),
        ("sbtIndexOffsetBuffer", _CUdeviceptr),
        ("sbtIndexOffsetSizeInBytes", ctypes.c_uint),
        ("sbtIndexOffsetStrideInBytes", ctypes.c_uint),
        ("primitiveIndexOffset", ctypes.c_uint),
    ]


class MotionOptions(ctypes.Structure):
    _fields_ = [
        ("numKeys", ctypes.c_ushort),
        ("flags", ctypes.c_ushort),
        ("timeBegin", ctypes.c_float),
        ("timeEnd", ctypes.c_float),
    ]


class BuiltinISOptions(ctypes.Structure):
    _fields_ = [
        ("builtinISModuleType", ctypes.c_uint),
        ("usesMotionBlur", ctypes.c_int),
        ("buildFlags", ctypes.c_uint),
        ("curveEndcapFlags", ctypes.c_uint),
    ]


class StaticTransform(ctypes.Structure):
    _fields_ = [
        ("child", ctypes.c_uint64),
        ("pad", ctypes.c_uint * 2),
        ("transform", ctypes.c_float * 12),
        ("invTransform", ctypes.c_float * 12),
    ]


class MatrixMotionTransform(ctypes.Structure):
    # The ABI declares two keys; a transform of N keys is this struct followed by N - 2 more 3x4 matrices.
    _fields_ = [
        ("child", ctypes.c_uint64),
        ("motionOptions", MotionOptions),
        ("pad", ctypes.c_uint * 3),
        ("transform", (ctypes.c_float * 12) * 2),
    ]


class SRTData(ctypes.Structure):
    # Scale with shear and pivot (sx a b pvx / sy c pvy / sz pvz), a unit quaternion (qx qy qz qw), a translation.
    _fields_ = [(name, ctypes.c_float) for name in (
        "sx", "a", "b", "pvx", "sy", "c", "pvy", "sz", "pvz", "qx", "qy", "qz", "qw", "tx", "ty", "tz")]


class SRTMotionTransform(ctypes.Structure):
    # Two keys declared, like MatrixMotionTransform: N keys are this struct and N - 2 more SRTData.
    _fields_ = [
        ("child", ctypes.c_uint64),
        ("motionOptions", MotionOptions),
        ("pad", ctypes.c_uint * 3),
        ("srtData", SRTData * 2),
    ]


class ModuleCompileBoundValueEntry(ctypes.Structure):
    _fields_ = [
        ("pipelineParamOffsetInBytes", ctypes.c_size_t),
        ("sizeInBytes", ctypes.c_size_t),
        ("boundValuePtr", ctypes.c_void_p),
        ("annotation", ctypes.c_char_p),
    ]


class PayloadType(ctypes.Structure):
    _fields_ = [("numPayloadValues", ctypes.c_uint), ("payloadSemantics", ctypes.POINTER(ctypes.c_uint))]
