# SPDX-License-Identifier: Apache-2.0
# Type stubs of qaicrt (python/qaicrt/*.cpp): libqaic's runtime API, seed 001. Kept complete by
# tests/python/test_python_docs.py, which compares them with the module.
import enum
import os
from typing import Any, Callable, Optional, Sequence, Union

import numpy

__version__: str

Buffer = Any  # an object of the buffer protocol (numpy array, bytearray, memoryview, bytes)

class QStatus(enum.IntEnum):
    QS_SUCCESS = 0
    QS_ERROR = 1
    QS_INVAL = 2
    QS_TIMEDOUT = 3
    QS_NODEV = 4
    QS_DEV_REMOVED = 5
    QS_DEV_RESET = 6
    QS_BUFFER_SIZE = 7
    QS_BUFFER_DIMS = 8
    QS_INCOMPATIBLE = 9
    QS_NO_RESOURCES = 10
    QS_WRONG_STATE = 11
    QS_WRONG_SET = 12
    QS_DEVICE_ERROR = 13
    QS_CANCELED = 14

QS_SUCCESS: QStatus
QS_ERROR: QStatus
QS_INVAL: QStatus
QS_TIMEDOUT: QStatus
QS_NODEV: QStatus
QS_DEV_REMOVED: QStatus
QS_DEV_RESET: QStatus
QS_BUFFER_SIZE: QStatus
QS_BUFFER_DIMS: QStatus
QS_INCOMPATIBLE: QStatus
QS_NO_RESOURCES: QStatus
QS_WRONG_STATE: QStatus
QS_WRONG_SET: QStatus
QS_DEVICE_ERROR: QStatus
QS_CANCELED: QStatus

class QLogLevel(enum.IntEnum):
    QL_DEBUG = 0
    QL_INFO = 1
    QL_WARN = 2
    QL_ERROR = 3

QL_DEBUG: QLogLevel
QL_INFO: QLogLevel
QL_WARN: QLogLevel
QL_ERROR: QLogLevel

class QAicBufferDataTypeEnum(enum.IntEnum):
    BUFFER_DATA_TYPE_FLOAT = 0
    BUFFER_DATA_TYPE_FLOAT16 = 1
    BUFFER_DATA_TYPE_INT8Q = 2
    BUFFER_DATA_TYPE_UINT8Q = 3
    BUFFER_DATA_TYPE_INT16Q = 4
    BUFFER_DATA_TYPE_INT32Q = 5
    BUFFER_DATA_TYPE_INT32I = 6
    BUFFER_DATA_TYPE_INT64I = 7
    BUFFER_DATA_TYPE_INT8 = 8
    BUFFER_DATA_TYPE_UINT8 = 9
    BUFFER_DATA_TYPE_FLOAT64C = 10
    BUFFER_DATA_TYPE_INVAL = 11

BUFFER_DATA_TYPE_FLOAT: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_FLOAT16: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT8Q: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_UINT8Q: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT16Q: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT32Q: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT32I: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT64I: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INT8: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_UINT8: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_FLOAT64C: QAicBufferDataTypeEnum
BUFFER_DATA_TYPE_INVAL: QAicBufferDataTypeEnum

class QAicBufferIoTypeEnum(enum.IntEnum):
    BUFFER_IO_TYPE_INPUT = 0
    BUFFER_IO_TYPE_OUTPUT = 1
    BUFFER_IO_TYPE_INVAL = 2

BUFFER_IO_TYPE_INPUT: QAicBufferIoTypeEnum
BUFFER_IO_TYPE_OUTPUT: QAicBufferIoTypeEnum
BUFFER_IO_TYPE_INVAL: QAicBufferIoTypeEnum

class QBufferType(enum.IntEnum):
    QBUFFER_TYPE_HEAP = 0
    QBUFFER_TYPE_DMABUF = 1

QBUFFER_TYPE_HEAP: QBufferType
QBUFFER_TYPE_DMABUF: QBufferType

class ProfilingType(enum.IntEnum):
    PROFILING_TYPE_LATENCY = 0

PROFILING_TYPE_LATENCY: ProfilingType

# ---- errors ------------------------------------------------------------------------------------

class Error(RuntimeError):
    """A libqaic error; str() is 'QS_NAME: message'."""
    status: QStatus
    message: str

class InvalidArgumentError(Error, ValueError):
    """QS_INVAL, QS_BUFFER_SIZE, QS_BUFFER_DIMS."""

class TimedOutError(Error, TimeoutError):
    """QS_TIMEDOUT."""

def errorFor(status: QStatus, message: str) -> Error: ...
def statusName(status: QStatus) -> str: ...

# ---- program containers --------------------------------------------------------------------------

class BufferMapping:
    bufferName: str
    index: int
    ioType: QAicBufferIoTypeEnum
    size: int
    isPartialBufferAllowed: bool
    dataType: QAicBufferDataTypeEnum
    def __init__(self, bufferName: str = ..., index: int = ..., ioType: QAicBufferIoTypeEnum = ..., size: int = ...,
                 isPartialBufferAllowed: bool = ..., dataType: QAicBufferDataTypeEnum = ...) -> None: ...

class v2:  # the submodule qaicrt.v2
    class IoShapes:
        defaultDims: list[int]
        allowedDims: list[list[int]]
        def __init__(self) -> None: ...
    class BufferMapping(BufferMapping):
        ioShapes: "v2.IoShapes"
        skipPartialHeader: bool
        allowSkip: bool
        def __init__(self) -> None: ...

class QpcProgramInfo:
    bufferMappings: list[BufferMapping]
    bufferMappingsDma: list[BufferMapping]
    name: str
    numCores: int
    programIndex: int
    size: int
    batchSize: int
    numSemaphores: int
    numMcIds: int
    totalRequiredMemory: int
    fp16Constants: bool

class QpcConstantsInfo:
    name: str
    index: int
    size: int

class QpcInfo:
    program: list[QpcProgramInfo]
    constants: list[QpcConstantsInfo]
    retainedState: list[str]
    numDevices: int

class QpcFile:
    def __init__(self, basePath: str, filename: str = "programqpc.bin") -> None: ...
    def load(self) -> None: ...
    def getBuffer(self) -> bytes: ...
    def size(self) -> int: ...
    def path(self) -> str: ...

class Qpc:
    """A loaded, validated program container; also a read-only buffer of its bytes."""
    def __init__(self, basePath: Union[str, "os.PathLike[str]"], filename: str = "programqpc.bin") -> None: ...
    @staticmethod
    def Factory(basePath: Union[str, Buffer], filename: str = "programqpc.bin") -> "Qpc": ...
    def getInfo(self) -> QpcInfo: ...
    def getBufferMappings(self) -> list[BufferMapping]: ...
    def getBufferMappingsV2(self) -> list[v2.BufferMapping]: ...
    def getBufferMappingsDma(self) -> list[BufferMapping]: ...
    def getIoDescriptor(self) -> tuple[QStatus, bytes]:
        """(QS_SUCCESS, the vendor's IO descriptor): a serialized aicapi.IoDesc (QAicApi_pb2) of
        every binding, retained state included, one allowed_shapes entry per specialization."""
    def getIoDescriptorSection(self) -> bytes:
        """The container's own IO descriptor section (a copy)."""
    def buffer(self) -> memoryview: ...
    def size(self) -> int: ...

# ---- buffers -------------------------------------------------------------------------------------

class QBuffer:
    """Shares the memory of a C-contiguous buffer-protocol object (no copy); itself a buffer.
    TypeError without a buffer; InvalidArgumentError for one not C-contiguous or of Python objects."""
    size: int
    buf: int
    handle: int
    offset: int
    type: QBufferType
    readonly: bool
    obj: Any
    def __init__(self, obj: Buffer) -> None: ...

class DmaBuffer:
    """A device buffer object mapped into this process; a writable buffer."""
    def size(self) -> int: ...
    def fd(self) -> int: ...
    def data(self) -> int: ...
    def qbuffer(self, offset: int = 0, bytes: int = 0) -> QBuffer: ...
    def numpy(self, dtype: Any = "uint8", shape: Union[None, int, Sequence[int]] = None,
              offset: int = 0) -> numpy.ndarray: ...

# ---- context, partitions, devices -----------------------------------------------------------------

class ResourceRequest:
    numNsp: int
    numMcid: int
    numSem: int
    numVc: int
    ddrSize: int
    def __init__(self, numNsp: int = ..., numMcid: int = 0, numSem: int = 0, numVc: int = 1, ddrSize: int = 0) -> None: ...

def resourcesFor(qpc: Qpc, numActivations: int, programIndex: int = 0) -> ResourceRequest: ...

class Partition:
    @staticmethod
    def acquire(request: ResourceRequest, device: Optional[int] = None, label: str = "") -> "Partition": ...
    def id(self) -> int: ...
    def parent(self) -> int: ...
    def resources(self) -> ResourceRequest: ...
    def label(self) -> str: ...
    def node(self) -> str: ...

class QAicContextProperties:
    initialLogLevel: QLogLevel
    partition: Optional[ResourceRequest]
    def __init__(self) -> None: ...

LogCallback = Callable[[QLogLevel, str, Any], None]
ErrorHandler = Callable[[int, QStatus, str, Any], None]

class Context:
    def __init__(self, devices: Sequence[int] = ..., properties: Optional[QAicContextProperties] = None,
                 logCallback: Optional[LogCallback] = None, logUserData: Any = None,
                 errorHandler: Optional[ErrorHandler] = None, errorUserData: Any = None) -> None: ...
    @staticmethod
    def Factory(properties: Optional[QAicContextProperties], devices: Sequence[int],
                logCallback: Optional[LogCallback] = None, logUserData: Any = None,
                errorHandler: Optional[ErrorHandler] = None, errorUserData: Any = None) -> "Context": ...
    def setLogLevel(self, level: QLogLevel) -> QStatus:
        """Sets the level; returns QS_SUCCESS (the vendor's callers compare it)."""
    def getLogLevel(self) -> QLogLevel: ...
    def getId(self) -> int: ...
    def getDevices(self) -> list[int]: ...
    def getPartition(self) -> Optional[Partition]: ...
    def allocateDmaBuffer(self, device: int, size: int) -> DmaBuffer: ...

class QDevPartitionInfo:
    parent: int
    ownerUid: int
    ownerGid: int
    mode: str
    holderPid: int
    label: str

class QDevInfo:
    id: int
    status: str
    pciAddress: str
    hwVersion: str
    fwVersion: str
    sku: str
    dramTotalMb: int
    dramFreeMb: int
    vcTotal: int
    vcFree: int
    nspTotal: int
    nspFree: int
    mcidTotal: int
    mcidFree: int
    semTotal: int
    semFree: int
    constantsLoaded: int
    constantsInUse: int
    networksLoaded: int
    networksActive: int
    nspFrequencyMhz: int
    pciVendor: str
    pciDevice: str
    hwSerial: str
    boardSerial: str
    fwQcImageVersion: str
    fwOemImageVersion: str
    fwImageVariant: str
    nspVersion: str
    nspQcImageVersion: str
    nspImageVariant: str
    deviceCapabilities: str
    ddrFrequencyMhz: str
    maxLinkSpeed: str
    maxLinkWidth: str
    currentLinkSpeed: str
    currentLinkWidth: str
    socTemperatureC: Optional[float]
    boardPowerW: Optional[float]
    tdpCapW: Optional[float]
    dbcStates: list[str]
    partition: Optional[QDevPartitionInfo]

class Util:
    def __init__(self) -> None: ...
    @staticmethod
    def getDeviceIds() -> list[int]: ...
    @staticmethod
    def getDeviceInfo(device: int) -> QDevInfo: ...

# ---- inference -------------------------------------------------------------------------------------

class PerfCounter:
    class Status(enum.IntEnum):
        NOT_RUN = 0
        EXECUTED = 1
    NOT_RUN: "PerfCounter.Status"
    EXECUTED: "PerfCounter.Status"
    realTimeUs: float
    cpuUs: float
    executionIndex: int
    status: "PerfCounter.Status"

class ProgramProperties:
    dataPathTimeoutMs: int
    submitNumRetries: int
    devMapping: list[int]
    def __init__(self) -> None: ...

class QueueProperties:
    numThreadsPerQueue: int
    def __init__(self) -> None: ...

class InferenceSetGroup:
    def __init__(self, name: str = "") -> None: ...
    @staticmethod
    def Factory(name: str = "") -> "InferenceSetGroup": ...
    def enable(self) -> None: ...
    def disable(self) -> None: ...
    def release(self) -> None: ...
    def isEnabled(self) -> bool: ...
    def getName(self) -> str: ...

class InferenceSetProperties:
    programProperties: ProgramProperties
    queueProperties: QueueProperties
    inferenceSetGroup: Optional[InferenceSetGroup]
    name: str
    id: int
    def __init__(self) -> None: ...

class InferenceHandle:
    def setBuffers(self, buffers: Sequence[Union[QBuffer, Buffer]]) -> None: ...
    def setInputBuffers(self, inputs: Sequence[Union[QBuffer, Buffer]]) -> None: ...
    def setOutputBuffers(self, outputs: Sequence[Union[QBuffer, Buffer]]) -> None: ...
    def getBuffers(self) -> list[Optional[QBuffer]]: ...
    def getInputBuffers(self) -> list[Optional[QBuffer]]: ...
    def getOutputBuffers(self) -> list[Optional[QBuffer]]: ...
    def setBufferDims(self, bufferIndex: int, dims: Sequence[int]) -> None: ...
    def setBufferSkipped(self, bufferIndex: int, skipped: bool = True) -> None: ...
    def getOutputDims(self, bufferIndex: int) -> list[int]: ...
    def getId(self) -> int: ...
    def getActivationIndex(self) -> int: ...
    def getStatus(self) -> QStatus: ...
    def getErrorMessage(self) -> str: ...
    def getPerformanceCounts(self) -> dict[str, PerfCounter]: ...
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

NotifyFn = Callable[[InferenceHandle, Any], None]

class InferenceSet:
    def __init__(self, context: Context, qpc: Qpc, device: int, setSize: int, numActivations: int,
                 properties: Optional[InferenceSetProperties] = None) -> None: ...
    @staticmethod
    def Factory(context: Context, qpc: Qpc, device: int, setSize: int, numActivations: int,
                properties: Optional[InferenceSetProperties] = None) -> "InferenceSet": ...
    def getAvailable(self, timeoutUs: int = 0) -> tuple[QStatus, Optional[InferenceHandle]]: ...
    def getAvailableOnActivation(self, activation: int, timeoutUs: int = 0) -> tuple[QStatus, Optional[InferenceHandle]]: ...
    def resetRetainedState(self, activation: int) -> None: ...
    def submit(self, handle: Union[InferenceHandle, "InferenceVector"], requestIdOrNotifyFn: Union[int, NotifyFn],
               userData: Any = None) -> None:
        """Submits a handle with a request id or a notify callback; or, the vendor's form, an
        InferenceVector with a request id (a free handle takes its buffers; getCompletedId(id)
        returns that handle, to be put back with putCompleted)."""
    def getCompletedId(self, requestId: int, timeoutUs: int = 0) -> tuple[QStatus, Optional[InferenceHandle]]: ...
    def putCompleted(self, handle: InferenceHandle) -> None: ...
    def waitForCompletion(self, handleOrTimeoutUs: Union[InferenceHandle, int] = 0, timeoutUs: int = 0) -> QStatus: ...
    def allocateDmaBuffer(self, size: int) -> DmaBuffer: ...
    def getName(self) -> str: ...
    def getId(self) -> int: ...
    def getNumActivations(self) -> int: ...
    def getSetSize(self) -> int: ...

class ProfilingSample:
    requestId: int
    status: QStatus
    stages: dict[str, PerfCounter]

class ProfilingReport:
    type: ProfilingType
    setName: str
    samples: list[ProfilingSample]
    meanUs: dict[str, float]

class ProfilingHandle:
    def __init__(self, set: InferenceSet, numSamples: int, callback: Callable[[ProfilingReport, Any], None],
                 userData: Any = None, type: ProfilingType = ...) -> None: ...
    @staticmethod
    def Factory(set: InferenceSet, numSamples: int, callback: Callable[[ProfilingReport, Any], None],
                userData: Any = None, type: ProfilingType = ...) -> "ProfilingHandle": ...
    def start(self) -> None: ...
    def stop(self) -> None: ...

# ---- the vendor's lower-level API (python/qaicrt/BindProgram.cpp, BindExecObj.cpp) ----------------
# Calls return a QStatus as the vendor's do; the reason of a failure goes to stderr and to
# getErrorMessage().

BufferIoTypeEnum = QAicBufferIoTypeEnum
BufferDataTypeEnum = QAicBufferDataTypeEnum

class QIDList(list[int]):
    """A list of device ids, as Context(QIDList) takes them; items must be integers."""
    def __init__(self, ids: Sequence[int] = ()) -> None: ...
    def append(self, value: int) -> None: ...

class BufferDimensionsVecRef(list[tuple[int, list[int]]]):
    """(element size, [dims...]) per binding of the IO descriptor; v[i] = (itemsize, shape)
    replaces one (any sequence of ints as the shape), v[i][1] is a list. TypeError for anything
    else."""
    def __init__(self, pairs: Sequence[tuple[int, Sequence[int]]] = ()) -> None: ...
    def append(self, value: tuple[int, Sequence[int]]) -> None: ...

class InferenceVector:
    """One zero-filled writable QBuffer per buffer mapping; getVector() is the list itself."""
    def __init__(self, bufferMappings: Sequence[BufferMapping]) -> None: ...
    def getVector(self) -> list[QBuffer]: ...

class QAicProgramProperties:
    """The vendor's program properties by its field names. devMapping is a string of device ids
    separated by ':' ("0:1"; a list of ints is accepted); a malformed one raises
    InvalidArgumentError. SubmitRetryTimeoutMs sets dataPathTimeoutMs too."""
    dataPathTimeoutMs: int
    SubmitRetryTimeoutMs: int
    SubmitNumRetries: int
    submitNumRetries: int
    devMapping: str
    def __init__(self) -> None: ...

class Program:
    """A container to activate: load() -> QStatus, activate() -> QStatus (one activation with its
    retained state, zeroed), deactivate() -> QStatus. device None: devMapping's first device, else
    the context's first."""
    def __init__(self, context: Context, device: Optional[int], qpc: Qpc,
                 properties: Optional[QAicProgramProperties] = None) -> None: ...
    def load(self) -> QStatus: ...
    def activate(self) -> QStatus: ...
    def deactivate(self) -> QStatus: ...
    def isActive(self) -> bool: ...
    def getDevice(self) -> int: ...
    def getErrorMessage(self) -> str: ...

class ExecObj:
    """One inference slot of an active Program; buffers by binding index of Qpc.getIoDescriptor().
    Size-0 buffers skip their binding (retained state must be skipped), input dims pick the
    specialization, outputs get memory of the ExecObj's own."""
    def __init__(self, context: Context, program: Program) -> None: ...
    def setData(self, buffers: Sequence[Union[QBuffer, Buffer, tuple[int, Buffer]]],
                dims: Optional[Sequence[tuple[int, Sequence[int]]]] = None) -> QStatus:
        """One buffer and one (element size, dims) pair per binding; or, without dims, a list of
        (binding index, array) pairs for the bindings to set."""
    def enqueue(self) -> QStatus: ...
    def waitForCompletion(self) -> QStatus:
        """The inference's status; QS_BUFFER_DIMS (and "No matching dimension found" on stderr)
        for dims that select no specialization."""
    def getData(self) -> tuple[QStatus, list[QBuffer]]:
        """Outputs at the dims that ran (prod(dims) x element size bytes), inputs as given,
        skipped and retained bindings empty."""
    def run(self, buffers: Sequence[Union[QBuffer, Buffer]]) -> QStatus: ...
    def getErrorMessage(self) -> str: ...

class Queue:
    """Queue(context, device, numThreads=1): enqueue(execObj) submits its inference."""
    def __init__(self, context: Context, device: int, numThreads: int = 1) -> None: ...
    def enqueue(self, execObj: ExecObj) -> QStatus: ...
    def getDevice(self) -> int: ...
