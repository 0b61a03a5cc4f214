"""The OptiX ABIs optixasync speaks: the entry order of each ABI's function table, and which one is asked for.

The driver's ``libnvoptix`` exports one entry point, ``optixQueryFunctionTable``,
which fills a struct of function pointers laid out for the ABI version it is
given. The struct's slots are in a fixed order per ABI; a slot that OptiX
reserved or retired keeps its place (``optixPlaceholder001`` in OptiX 8.1, the
two retired displacement-micromap slots of OptiX 9.1). Each table below is
our own list of the slot names of one ABI, written from the public OptiX
headers of that release (``optix_function_table.h`` of OptiX 8.0, 8.1, 9.0
and 9.1, whose ``OPTIX_ABI_VERSION`` is 87, 93, 105 and 118); the table's size
in bytes is the slot count times 8, which the driver checks.

Adding an ABI is adding a list here (and its struct layouts where they
differ, in :mod:`optixasync._optix._layouts`). No policy lives here beyond
the one default.
"""

from __future__ import annotations

__all__ = [
    "ABI_OPTIX_VERSIONS",
    "ABI_TABLES",
    "DEFAULT_ABI",
    "NEWEST",
    "SUPPORTED_ABIS",
    "abi_name",
    "check_abi",
    "check_abi_request",
]

#: The ABI optixasync asks for unless told otherwise: OptiX 8.0, accepted by drivers R535 and newer, and the one
#: every GPU run of the test suite has used. The newer ones are asked for with ``abi="newest"`` or by number.
DEFAULT_ABI = 87

#: The request that negotiates: the newest ABI the driver accepts, trying :data:`SUPPORTED_ABIS` in order.
NEWEST = "newest"

_ERRORS = ("optixGetErrorName", "optixGetErrorString")
_CONTEXT = (
    "optixDeviceContextCreate", "optixDeviceContextDestroy", "optixDeviceContextGetProperty",
    "optixDeviceContextSetLogCallback", "optixDeviceContextSetCacheEnabled", "optixDeviceContextSetCacheLocation",
    "optixDeviceContextSetCacheDatabaseSizes", "optixDeviceContextGetCacheEnabled",
    "optixDeviceContextGetCacheLocation", "optixDeviceContextGetCacheDatabaseSizes",
)
_GROUPS = ("optixProgramGroupCreate", "optixProgramGroupDestroy", "optixProgramGroupGetStackSize")
_ACCEL = (
    "optixAccelComputeMemoryUsage", "optixAccelBuild", "optixAccelGetRelocationInfo",
    "optixCheckRelocationCompatibility", "optixAccelRelocate", "optixAccelCompact", "optixAccelEmitProperty",
    "optixConvertPointerToTraversableHandle", "optixOpacityMicromapArrayComputeMemoryUsage",
    "optixOpacityMicromapArrayBuild", "optixOpacityMicromapArrayGetRelocationInfo",
    "optixOpacityMicromapArrayRelocate",
)
_DISPLACEMENT = ("optixDisplacementMicromapArrayComputeMemoryUsage", "optixDisplacementMicromapArrayBuild")
_CLUSTERS = ("optixClusterAccelComputeMemoryUsage", "optixClusterAccelBuild")
_LAUNCH = ("optixSbtRecordPackHeader", "optixLaunch")
_COOPERATIVE_VECTORS = ("optixCoopVecMatrixConvert", "optixCoopVecMatrixComputeSize")
_DENOISER = (
    "optixDenoiserCreate", "optixDenoiserDestroy", "optixDenoiserComputeMemoryResources", "optixDenoiserSetup",
    "optixDenoiserInvoke", "optixDenoiserComputeIntensity", "optixDenoiserComputeAverageColor",
    "optixDenoiserCreateWithUserModel",
)

# OptiX 8.0: 48 slots.
_ABI_87 = (
    *_ERRORS, *_CONTEXT,
    "optixModuleCreate", "optixModuleCreateWithTasks", "optixModuleGetCompilationState", "optixModuleDestroy",
    "optixBuiltinISModuleGet", "optixTaskExecute",
    *_GROUPS,
    "optixPipelineCreate", "optixPipelineDestroy", "optixPipelineSetStackSize",
    *_ACCEL, *_DISPLACEMENT, *_LAUNCH, *_DENOISER,
)
# OptiX 8.1: 50 slots; two reserved ones after optixLaunch.
_ABI_93 = (*_ABI_87[:40], "optixPlaceholder001", "optixPlaceholder002", *_DENOISER)
# OptiX 9.0: 52 slots; cluster acceleration structures before the launch entries, cooperative vectors after.
_ABI_105 = (*_ABI_87[:38], *_CLUSTERS, *_LAUNCH, *_COOPERATIVE_VECTORS, *_DENOISER)
# OptiX 9.1: 60 slots; cancellable module creation, serialisable tasks, stack sizes from call depths, pipeline
# symbol copies; the two displacement-micromap slots are retired (kept as stubs).
_ABI_118 = (
    *_ERRORS, *_CONTEXT,
    "optixModuleCreate", "optixModuleCreateWithTasks", "optixModuleGetCompilationState",
    "optixModuleCancelCreation", "optixStub", "optixDeviceContextCancelCreations", "optixModuleDestroy",
    "optixBuiltinISModuleGet", "optixTaskExecute", "optixTaskGetSerializationKey", "optixTaskSerializeOutput",
    "optixTaskDeserializeOutput",
    *_GROUPS,
    "optixPipelineCreate", "optixPipelineDestroy", "optixPipelineSetStackSizeFromCallDepths",
    "optixPipelineSetStackSize", "optixPipelineSymbolMemcpyAsync",
    *_ACCEL, "stub1", "stub2", *_CLUSTERS, *_LAUNCH, *_COOPERATIVE_VECTORS, *_DENOISER,
)

#: Slot names of each ABI's function table, in order. The table's size is ``8 * len(names)`` bytes.
ABI_TABLES: dict[int, tuple[str, ...]] = {87: _ABI_87, 93: _ABI_93, 105: _ABI_105, 118: _ABI_118}
#: The OptiX release of each ABI.
ABI_OPTIX_VERSIONS: dict[int, str] = {87: "8.0", 93: "8.1", 105: "9.0", 118: "9.1"}
#: The ABIs optixasync can call into, newest first: the order of the negotiation.
SUPPORTED_ABIS: tuple[int, ...] = tuple(sorted(ABI_TABLES, reverse=True))


def abi_name(abi: int) -> str:
    """``"105 (OptiX 9.0)"``."""
    return f"{abi} (OptiX {ABI_OPTIX_VERSIONS[abi]})"


def check_abi(abi: object) -> int:
    """``abi`` as an int if optixasync can call into it (it has the entry order of its function table).

    Raises
    ------
    ValueError
        On an ABI without a name table here, naming the supported ones.
    """
    if isinstance(abi, bool) or not isinstance(abi, int) or abi not in ABI_TABLES:
        known = ", ".join(abi_name(a) for a in sorted(ABI_TABLES))
        raise ValueError(f"OptiX ABI {abi!r} is not supported by optixasync; supported: {known}, "
                         f"or {NEWEST!r} for the newest the driver accepts")
    return int(abi)


def check_abi_request(abi: object) -> int | str:
    """An ABI number (checked by :func:`check_abi`) or :data:`NEWEST`, as given.

    Raises
    ------
    ValueError
        On anything else, naming the accepted values.
    """
    if abi == NEWEST and isinstance(abi, str):
        return NEWEST
    return check_abi(abi)
