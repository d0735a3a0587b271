# SPDX-License-Identifier: Apache-2.0
"""qaic.Session: compile (when given a model) and run a program with numpy arrays in and out."""
import collections
import collections.abc
import itertools
import math
import operator
import os
import pathlib
import threading
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

import qaicrt

from . import _compile
from ._dtypes import numpy_dtype

# The pipeline stages (seed 002) with the names qaic-runner prints for them, in pipeline order.
STAGES = (
    ("0. queue wait", "enqTime"),
    ("1. input preprocessing", "preProcTime"),
    ("2. input transfer to a device", "submitTime"),
    ("3. execution time", "execToComplete"),
    ("4. output transfer from a device", "exectoVc"),
    ("5. output postprocessing", "postProc"),
)
# Session.run latencies kept for get_metrics' percentiles.
_LATENCY_WINDOW = 10000
# run() reads the stage durations of one inference in this many (reading them costs about as
# much as 1/10 of a tiny inference; a sample of them gives the same means).
_STAGE_SAMPLING = 16
# The most inferences of one run_benchmark whose stage durations are kept (memory: ~1 KiB each).
_BENCHMARK_STAGE_SAMPLES = 50000
# enable_profiling: the inferences whose profile print_profile_data can show (~1 KiB each).
_PROFILE_WINDOW = 1000
# Keys of an options file that are Session's run-time arguments (the vendor's files hold them
# beside the compile options). Everything else in the file is a compile option.
_RUNTIME_OPTIONS = ("dev_id", "num_activations", "set_size", "num_threads_per_queue", "data_path_timeout_ms",
                    "submit_num_retries", "oversubscription_name", "enable_metrics", "enable_profiling")
_RUNTIME_DEFAULTS = {"dev_id": 0, "num_activations": 1, "set_size": 10}


def _percentile(ordered, p):
    """The p-th percentile of sorted values (the nearest rank at or below it)."""
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


class _Buffer:
    """One buffer of the program, and how Session.run treats it."""

    def __init__(self, mapping):
        self.name = mapping.bufferName
        self.index = mapping.index
        self.is_input = mapping.ioType == qaicrt.BUFFER_IO_TYPE_INPUT
        self.dtype = numpy_dtype(mapping.dataType)
        self.shape = tuple(int(d) for d in mapping.ioShapes.defaultDims)
        self.elements = math.prod(self.shape)
        self.allowed = [tuple(int(d) for d in dims) for dims in mapping.ioShapes.allowedDims]
        self.partial = mapping.isPartialBufferAllowed
        # Selective IO (seed 000): the buffer may be left out of a request.
        self.droppable = mapping.isPartialBufferAllowed and mapping.skipPartialHeader and mapping.allowSkip

    def describe(self):
        return f"{'input' if self.is_input else 'output'} '{self.name}'"


def _device_ids(device_ids):
    """device_ids as a list of ints (efficient-transformers' QAICInferenceSession argument)."""
    if device_ids is None:
        return []
    ids = list(device_ids)
    if not ids or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in ids):
        raise ValueError(f"device_ids must be a non-empty list of device ids (ints >= 0), not {device_ids!r}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"device_ids names a device twice: {ids}")
    return ids


def _runtime_value(key, value, path):
    """A run-time option read from an options file, checked for its type."""
    if key in ("enable_metrics", "enable_profiling"):
        expected, ok = "true or false", isinstance(value, bool)
    elif key == "oversubscription_name":
        expected, ok = "a string", isinstance(value, str)
    else:
        expected, ok = "an integer >= 0", isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if not ok:
        raise ValueError(f"{path}: option '{key}' must be {expected}, not {value!r}")
    return value


class ShapeDict(dict):
    """{buffer name: (shape, numpy dtype)}, subscripted as the vendor's examples do
    (session.model_input_shape_dict['x']) and callable as this package's earlier method was
    (session.model_input_shape_dict() gives the same mapping)."""

    def __call__(self) -> Dict[str, Tuple[Tuple[int, ...], np.dtype]]:
        return dict(self)


class Session:
    """A program on a device, run with dicts of numpy arrays.

    Session(model_path, dev_id=0, num_activations=1, set_size=10, ...) where model_path is a
    program container (a programqpc.bin file or the directory holding one) or a model that
    qaic-exec compiles first (.onnx, or a JSON IR .json) into a cache keyed by the model's
    content and the compile options ($QAIC_CACHE_DIR, else ~/.cache/qaic; cache_dir=...).

    Compile options (for models): aic_num_cores, convert_to_fp16, onnx_define_symbol
    ({name: value}), batchsize, stats_batchsize, compile_options (extra qaic-exec flags), or
    options_path, a JSON or YAML file of the same keys; in that file the vendor's tuning keys
    (mos, ols, aic_enable_depth_first, multicast_weights, mxfp6_matmul, allocator_dealloc_delay,
    size_split_granularity, vtcm_working_set_limit_ratio, aic_perf_warnings, aic_perf_metrics)
    are taken too, as qaic-exec's compatibility options. backend must be "aic".

    device_ids (efficient-transformers' argument): the devices to run on, in order; a program
    compiled for several devices (-mdp-load-partition-config) puts its part p on the p-th, and one
    compiled for one device runs on the first. Without it, a multi-device program goes on the first
    free devices linked peer to peer, and any other on dev_id.

    Runtime options: num_threads_per_queue, data_path_timeout_ms, submit_num_retries; the options
    file may hold them too, with dev_id, num_activations, set_size, oversubscription_name,
    enable_metrics and enable_profiling (keyword arguments win). Keys of the file may be spelled
    with '-' (multicast-weights, compile-only); an unknown key is a ValueError naming the file.

    oversubscription_name: sessions of one name in this process share their device through one
    qaicrt.InferenceSetGroup of that name: each program is loaded, one is active at a time, and
    running another switches the device over (each needs num_activations=1). enable_metrics:
    every run() reads its inference's stage durations (not one in 16) for get_metrics.
    enable_profiling: the last 1000 run() inferences keep their stage durations for
    print_profile_data(n). setup() activates now (the constructor does so already; idempotent);
    reset() lets go of the device, and the next run() or setup() activates again.

    run(inputs) takes {input name: array} and returns {output name: array}, dtype and shape
    from the program. Inputs the program may do without (selective IO) can be left out.
    Partial and specialized buffers take their dims from the arrays. Several threads may call
    run() at once (up to set_size x num_activations inferences in flight).

    Generation loops (programs compiled with -retained-state, usually with
    -network-specialization-config): the KV cache stays in the device memory of each
    activation between run() calls and is none of the user's buffers (retained_state names
    it); run({"input_ids": prompt, "position_ids": positions}) is the prefill and the same call
    with one token per step the decode, the arrays' dims choosing the specialization. A
    sequence belongs to one activation: run(..., activation=k) runs on activation k (required
    when the program retains state and num_activations > 1), and reset_state(k) starts
    activation k's next inference from zeroed state.
    """

    # What a session built without __init__ has (the fuzz_python_args harness sets the rest).
    enable_metrics = False
    enable_profiling = False
    oversubscription_name = None
    group = None

    def __init__(self, model_path: Union[str, os.PathLike], dev_id: Optional[int] = None,
                 num_activations: Optional[int] = None, set_size: Optional[int] = None, *, backend: str = "aic",
                 cache_dir: Optional[Union[str, os.PathLike]] = None,
                 options_path: Optional[Union[str, os.PathLike]] = None, aic_num_cores: Optional[int] = None,
                 convert_to_fp16: bool = False, onnx_define_symbol: Optional[Mapping[str, int]] = None,
                 batchsize: Optional[int] = None, stats_batchsize: Optional[int] = None,
                 compile_options: Sequence[str] = (), num_threads_per_queue: Optional[int] = None,
                 data_path_timeout_ms: Optional[int] = None, submit_num_retries: Optional[int] = None,
                 log_level: qaicrt.QLogLevel = qaicrt.QL_WARN, oversubscription_name: Optional[str] = None,
                 enable_metrics: bool = False, enable_profiling: bool = False,
                 device_ids: Optional[Sequence[int]] = None) -> None:
        if not isinstance(backend, str) or backend.lower() != "aic":
            raise ValueError(f"backend {backend!r} is not supported; the device runs the 'aic' backend")
        path = pathlib.Path(model_path)
        options = dict(aic_num_cores=aic_num_cores, convert_to_fp16=convert_to_fp16,
                       onnx_define_symbol=onnx_define_symbol, batchsize=batchsize, stats_batchsize=stats_batchsize,
                       compile_options=list(compile_options))
        runtime = dict(dev_id=dev_id, num_activations=num_activations, set_size=set_size,
                       num_threads_per_queue=num_threads_per_queue, data_path_timeout_ms=data_path_timeout_ms,
                       submit_num_retries=submit_num_retries, oversubscription_name=oversubscription_name,
                       enable_metrics=enable_metrics, enable_profiling=enable_profiling)
        if options_path is not None:
            from_file, runtime_from_file = _compile.load_options_file(options_path, _RUNTIME_OPTIONS)
            for key, value in from_file.items():
                options.setdefault(key, value)
                if options[key] in (None, False, []):
                    options[key] = value
            for key, value in runtime_from_file.items():
                if runtime[key] is None or runtime[key] is False:  # not given (0 is given)
                    runtime[key] = _runtime_value(key, value, options_path)
        for key, default in _RUNTIME_DEFAULTS.items():
            if runtime[key] is None:
                runtime[key] = default
        if path.suffix in (".onnx", ".json"):
            path = _compile.compile_model(path, options, cache_dir)
        elif not path.exists():
            raise FileNotFoundError(f"model_path '{model_path}' does not exist")
        self.model_path = path
        self.qpc = qaicrt.Qpc(str(path))
        program = self.qpc.getInfo().program[0]
        self.batch_size = program.batchSize or 1

        properties = qaicrt.QAicContextProperties()
        properties.initialLogLevel = log_level
        self.dev_id = runtime["dev_id"]
        self.num_activations = runtime["num_activations"]
        self.set_size = runtime["set_size"]
        self.oversubscription_name = runtime["oversubscription_name"]
        self.enable_metrics = bool(runtime["enable_metrics"])
        self.enable_profiling = bool(runtime["enable_profiling"])
        if self.oversubscription_name is not None and self.num_activations != 1:
            raise ValueError(f"oversubscription_name {self.oversubscription_name!r}: a session that shares its "
                             f"device takes num_activations=1, not {self.num_activations}")
        self.device_ids = _device_ids(device_ids)
        set_properties = qaicrt.InferenceSetProperties()
        set_properties.name = f"qaic.Session({path.name})"
        if self.device_ids:
            # The devices given, in order: a multi-device program's part p goes on the p-th.
            self.context = qaicrt.Context(self.device_ids, properties)
            self.dev_id = self.device_ids[0]
            set_properties.programProperties.devMapping = self.device_ids
        elif self.qpc.getInfo().numDevices > 1:
            # A multi-device program without device_ids: the runtime takes the first free cards
            # linked peer to peer (docs/runtime.md, "Which devices").
            self.context = qaicrt.Context([], properties)
        else:
            self.context = qaicrt.Context([self.dev_id], properties)
        if runtime["num_threads_per_queue"] is not None:
            set_properties.queueProperties.numThreadsPerQueue = runtime["num_threads_per_queue"]
        if runtime["data_path_timeout_ms"] is not None:
            set_properties.programProperties.dataPathTimeoutMs = runtime["data_path_timeout_ms"]
        if runtime["submit_num_retries"] is not None:
            set_properties.programProperties.submitNumRetries = runtime["submit_num_retries"]
        self.group = None
        if self.oversubscription_name is not None:
            # Factory(name) gives the group registered under the name, so every session of the
            # name in this process joins the same one.
            self.group = qaicrt.InferenceSetGroup.Factory(str(self.oversubscription_name))
            set_properties.inferenceSetGroup = self.group
        self._set_properties = set_properties
        self._setup_lock = threading.Lock()
        self._closed = False
        self.inference_set = None
        self.setup()
        self._attach(self.qpc.getBufferMappingsV2(), self.qpc.getInfo().retainedState)

    def setup(self) -> None:
        """Puts the program on the device (the vendor's setup(): load and activate) unless it is
        there already. The constructor calls it; after reset() the next run() does, or this."""
        if self.inference_set is not None:
            return
        with self._setup_lock:
            if self.inference_set is not None:
                return
            if self._closed:
                raise ValueError(f"{self.model_path}: the session is closed")
            if self.group is not None and self.group.isEnabled():
                # A group takes no new member while enabled: it is disabled (its active member
                # drained and deactivated) and enabled again by the next submission to any member.
                self.group.disable()
            self.inference_set = qaicrt.InferenceSet(self.context, self.qpc, self.dev_id, self.set_size,
                                                     self.num_activations, self._set_properties)

    def reset(self) -> None:
        """Lets go of the device (the vendor's reset(): the program's NSPs and its activations'
        retained state are released); the next run() or setup() puts the program back, from
        zeroed state. Metrics are kept."""
        with self._setup_lock:
            inference_set, self.inference_set = self.inference_set, None
        del inference_set  # the set deactivates when its last reference goes, which is here

    def _active_set(self):
        inference_set = self.inference_set
        if inference_set is None:
            self.setup()
            inference_set = self.inference_set
        return inference_set

    def _attach(self, mappings, retained_state):
        """The tables run() converts its arguments by, from the program's BufferMappings V2 (a
        method of its own: the fuzz_python_args harness drives run() over a set without a device)."""
        self._buffers = [_Buffer(m) for m in mappings]
        self._inputs = [b for b in self._buffers if b.is_input]
        self._outputs = [b for b in self._buffers if not b.is_input]
        self._by_name = {b.name: b for b in self._buffers}
        self._input_names = frozenset(b.name for b in self._inputs)
        self._droppable = [b for b in self._buffers if b.droppable]
        self._retained_state = list(retained_state)
        # Specialized programs (more than the default shape combination): every buffer of one
        # request takes its dims from the same combination.
        self._combinations = max((len(b.allowed) for b in self._buffers), default=1)
        self._simple = self._combinations <= 1 and not any(b.partial for b in self._buffers)
        self._request_ids = itertools.count(1)
        self._latencies = collections.deque(maxlen=_LATENCY_WINDOW)
        self._runs = 0
        self._metrics_lock = threading.Lock()
        self._stage_totals = {}  # stage -> [microseconds, samples]
        self._stage_samples = 0
        self._profiles = collections.deque(maxlen=_PROFILE_WINDOW)  # (request id, seconds, counts)
        self._sample_every = 1 if self.enable_metrics or self.enable_profiling else _STAGE_SAMPLING

    # ---- the program's buffers ---------------------------------------------------------------

    @property
    def input_names(self) -> List[str]:
        return [b.name for b in self._inputs]

    @property
    def output_names(self) -> List[str]:
        return [b.name for b in self._outputs]

    @property
    def retained_state(self) -> List[str]:
        """The inputs the program keeps in each activation's device memory (qaic-exec
        -retained-state), each fed by its output <name>_RetainedState; empty for other programs.
        Neither buffer is among the inputs and outputs run() takes and returns."""
        return list(self._retained_state)

    @property
    def specializations(self) -> List[Dict[str, Tuple[int, ...]]]:
        """The shape combinations the program accepts ({buffer name: dims}, one dict per
        -network-specialization-config entry), in the program's order; [] for a program without
        specializations. run() picks the one the input arrays' dims match."""
        if self._combinations <= 1:
            return []
        return [{b.name: b.allowed[k] for b in self._buffers if b.allowed} for k in range(self._combinations)]

    def reset_state(self, activation: Optional[int] = None) -> None:
        """Makes the next inference on `activation` (every activation when None) start from
        zeroed retained state: a new sequence that depends on nothing run before it. Inferences
        already submitted on it are not affected. ValueError for a program without retained
        state or an activation the session lacks."""
        if not self._retained_state:
            raise ValueError(f"{self.model_path}: the program retains no state (not compiled with -retained-state)")
        activations = range(self.num_activations) if activation is None else [self._check_activation(activation)]
        inference_set = self._active_set()
        for index in activations:
            inference_set.resetRetainedState(index)

    def _check_activation(self, activation):
        index = None
        if not isinstance(activation, bool):
            try:
                index = operator.index(activation)
            except TypeError:
                pass
        if index is None or not 0 <= index < self.num_activations:
            # Anything but an integer is shown by its type: its repr may fail (numpy's repr of a 'U'
            # array of invalid code points raises SystemError, found by fuzz_python_args).
            shown = index if index is not None else f"of type {type(activation).__name__}"
            raise ValueError(f"activation {shown}: the session has activations 0..{self.num_activations - 1}")
        return index

    @property
    def model_input_shape_dict(self) -> ShapeDict:
        """{input name: (shape, numpy dtype)} at the program's full (default) dims; subscript it
        (['x']) or call it (()), a new mapping each time."""
        return ShapeDict((b.name, (b.shape, b.dtype)) for b in self._inputs)

    @property
    def model_output_shape_dict(self) -> ShapeDict:
        """{output name: (shape, numpy dtype)} at the program's full (default) dims; subscript it
        or call it, as model_input_shape_dict."""
        return ShapeDict((b.name, (b.shape, b.dtype)) for b in self._outputs)

    # ---- one inference ----------------------------------------------------------------------

    def run(self, input_dict: Mapping[str, Any], output_dict: Optional[Mapping[str, np.ndarray]] = None,
            activation: Optional[int] = None) -> Dict[str, np.ndarray]:
        """Runs one inference: {input name: array} -> {output name: array}.

        Arrays must have the program's dtype (TypeError otherwise) and, for regular buffers,
        its shape (ValueError); lists and scalars are converted to the program's dtype. Input
        arrays are read in place when C-contiguous. output_dict may give arrays to fill in
        place; other outputs are new arrays. A failed inference raises qaicrt.Error naming its
        QStatus.

        activation: the activation to run on (its retained state, if any, is the one read and
        updated); None takes any free handle, which a retained-state program allows only with
        one activation (ValueError otherwise: the steps of a sequence would land on different
        activations' state)."""
        if not isinstance(input_dict, collections.abc.Mapping):
            raise TypeError(f"run() takes a mapping of input name -> array, not {type(input_dict).__name__}; "
                            f"the program's inputs are {self.input_names}")
        if output_dict is not None and not isinstance(output_dict, collections.abc.Mapping):
            raise TypeError("output_dict must be a mapping of output name -> array, not "
                            f"{type(output_dict).__name__}")
        for name in input_dict:
            if name not in self._input_names:
                shown = repr(name) if isinstance(name, str) else f"of type {type(name).__name__}"
                raise ValueError(f"unknown input {shown}; the program's inputs are {self.input_names}")
        if activation is not None:
            activation = self._check_activation(activation)
        elif self._retained_state and self.num_activations > 1:
            raise ValueError(f"{self.model_path}: the program retains state on each of its {self.num_activations} "
                             "activations; run(..., activation=k) says which one the sequence is on")
        inference_set = self._active_set()  # after reset(), the vendor's session loads again here
        start = time.perf_counter()
        arrays, dims, skipped = self._prepare(input_dict, output_dict or {})
        request_id = next(self._request_ids)
        # One call through the bindings: getAvailable, setBuffers, setBufferDims,
        # setBufferSkipped, submit, waitForCompletion, putCompleted.
        status, message, produced, counts = inference_set._runSync(
            arrays, request_id, dims, skipped, dims is not None, self._runs % self._sample_every == 0, activation)
        if status != qaicrt.QS_SUCCESS:
            raise qaicrt.errorFor(status, f"inference failed: {message}")
        if counts is not None:
            self._add_stages(counts.items(), 1)
        if produced is None:
            results = {b.name: arrays[b.index] for b in self._outputs}
        else:
            results = {b.name: arrays[b.index].reshape(-1)[:math.prod(produced[b.index])].reshape(produced[b.index])
                       for b in self._outputs}
        elapsed = time.perf_counter() - start
        with self._metrics_lock:
            self._runs += 1
            self._latencies.append(elapsed)
            if self.enable_profiling and counts is not None:
                self._profiles.append((request_id, elapsed, counts))
        return results

    def _input_array(self, b, value):
        if type(value) is not np.ndarray:
            try:
                value = np.asarray(value, dtype=b.dtype)
            except TypeError as error:
                raise TypeError(f"{b.describe()}: {error}") from error
            except MemoryError:
                raise
            except Exception as error:
                # What else numpy's conversion raises for a value it cannot take: OverflowError for
                # an int the dtype cannot hold, RuntimeError for a buffer whose format disagrees
                # with its item size (found by fuzz_python_args), ValueError itself.
                raise ValueError(f"{b.describe()}: {error}") from error
        elif value.dtype != b.dtype:
            raise TypeError(f"{b.describe()}: dtype {value.dtype}, the program expects {b.dtype}")
        if self._simple and value.shape != b.shape:
            raise ValueError(f"{b.describe()}: shape {value.shape}, the program expects {b.shape}")
        return value if value.flags.c_contiguous else np.ascontiguousarray(value)

    def _output_array(self, b, given):
        if given is None:
            return np.empty(b.shape, b.dtype)
        if not isinstance(given, np.ndarray):
            raise TypeError(f"{b.describe()}: output_dict needs a numpy array, got {type(given).__name__}")
        if given.dtype != b.dtype:
            raise TypeError(f"{b.describe()}: dtype {given.dtype}, the program writes {b.dtype}")
        if given.size < b.elements or (self._simple and given.shape != b.shape):
            raise ValueError(f"{b.describe()}: shape {given.shape}, the program writes {b.shape}")
        if not given.flags.c_contiguous or not given.flags.writeable:
            raise ValueError(f"{b.describe()}: the array must be C-contiguous and writable to be filled in place")
        return given

    def _prepare(self, input_dict, output_dict):
        """The buffers of one request, by buffer index (an empty bytearray for a dropped input),
        and for the handle: the dims of each buffer (None where the default holds; None for a
        program without partial or specialized buffers) and whether each droppable buffer is
        left out (None for the others; None without droppable buffers)."""
        arrays = [None] * len(self._buffers)
        for b in self._inputs:
            value = input_dict.get(b.name)
            if value is not None:
                arrays[b.index] = self._input_array(b, value)
            elif not b.droppable:
                raise ValueError(f"{b.describe()} is missing; the program needs "
                                 f"{[i.name for i in self._inputs if not i.droppable]}")
        for b in self._outputs:
            given = output_dict.get(b.name)
            arrays[b.index] = np.empty(b.shape, b.dtype) if given is None else self._output_array(b, given)
        skipped = None
        if self._droppable:
            skipped = [None] * len(self._buffers)
            for b in self._droppable:
                skipped[b.index] = arrays[b.index] is None
                if arrays[b.index] is None:
                    arrays[b.index] = bytearray()
        dims = None
        if not self._simple:
            dims = [list(d) if d is not None else None for d in self._request_dims(arrays, skipped)]
        return arrays, dims, skipped

    def _bind(self, handle, input_dict, output_dict):
        """Sets a handle's buffers, dims and dropped buffers for a request; returns the arrays."""
        arrays, dims, skipped = self._prepare(input_dict, output_dict)
        handle.setBuffers(arrays)
        for index, value in enumerate(dims or []):
            if value is not None:
                handle.setBufferDims(index, value)
        for index, value in enumerate(skipped or []):
            if value is not None:
                handle.setBufferSkipped(index, value)
        return arrays

    def _request_dims(self, arrays, skipped):
        """The dims of every buffer of a request to a partial or specialized program: inputs from
        their arrays; outputs from the shape combination the inputs chose (specialized) or their
        full dims (partial)."""
        dims = [None] * len(self._buffers)
        for b in self._inputs:
            if not (skipped and skipped[b.index]):
                dims[b.index] = arrays[b.index].shape
        if self._combinations > 1:
            chosen = None
            for k in range(self._combinations):
                if all(dims[b.index] is None or b.allowed[k] == dims[b.index] for b in self._inputs if b.allowed):
                    chosen = k
                    break
            if chosen is None:
                for b in self._inputs:
                    if dims[b.index] is not None and b.allowed and dims[b.index] not in b.allowed:
                        raise ValueError(f"{b.describe()}: shape {dims[b.index]} is not one of the allowed shapes "
                                         f"{b.allowed}")
                raise ValueError("the inputs' shapes " +
                                 str({b.name: dims[b.index] for b in self._inputs if dims[b.index] is not None}) +
                                 " are not one allowed combination of the program")
            for b in self._outputs:
                if b.allowed:
                    dims[b.index] = b.allowed[chosen]
        return dims

    # ---- throughput -------------------------------------------------------------------------

    def run_benchmark(self, num_inferences: Optional[int] = None, inf_time: Optional[float] = None,
                      input_dict: Optional[Mapping[str, Any]] = None) -> Tuple[int, float, float, int]:
        """Keeps every inference handle of the set busy until num_inferences completed or
        inf_time seconds passed (default: 40 inferences, as qaic-runner's -n), with input_dict
        or random inputs (floats in [0, 1), integers in [0, 16), as qaic-runner's), then prints
        qaic-runner's Stats lines. The pipeline stages of its inferences go into get_metrics().
        Returns (inferences completed, inferences/s x batch size, seconds, batch size)."""
        if num_inferences is None and inf_time is None:
            num_inferences = 40
        inputs = input_dict if input_dict is not None else self._random_inputs()
        reports = []
        profiler = qaicrt.ProfilingHandle(self._active_set(), min(num_inferences or _BENCHMARK_STAGE_SAMPLES,
                                                                  _BENCHMARK_STAGE_SAMPLES),
                                          lambda report, _: reports.append(report))
        profiler.start()
        try:
            completed, elapsed = self._keep_busy(inputs, num_inferences, inf_time)
        finally:
            profiler.stop()
        for report in reports:
            self._add_stages(((stage, mean) for stage, mean in report.meanUs.items()), len(report.samples))
        rate = completed * self.batch_size / elapsed if elapsed > 0 else 0.0
        print(" ---- Stats ----")
        print(f"InferenceCnt {completed} TotalDuration {int(elapsed * 1e6)}us BatchSize {self.batch_size} "
              f"Inf/Sec {rate:.3f}", flush=True)
        return completed, rate, elapsed, self.batch_size

    def _keep_busy(self, inputs, num_inferences, inf_time):
        """Binds the request to every handle of the set, then keeps them all busy in
        InferenceSet._keepBusy (the GIL given up throughout: the figure is the program's
        throughput, not the interpreter's). Returns (inferences completed, seconds)."""
        inference_set = self._active_set()
        handles = []
        try:
            for _ in range(self.set_size * self.num_activations):
                status, handle = inference_set.getAvailable()
                if handle is None:
                    raise qaicrt.errorFor(status, "no inference handle became available")
                handles.append(handle)
                self._bind(handle, inputs, {})
        except BaseException:
            for handle in handles:
                inference_set.putCompleted(handle)
            raise
        # Session waits for handles, never by request id: the ids only label the requests.
        completed, elapsed, status, message = inference_set._keepBusy(handles, next(self._request_ids),
                                                                      num_inferences, inf_time)
        if status != qaicrt.QS_SUCCESS:
            raise qaicrt.errorFor(status, f"inference failed during run_benchmark: {message}")
        return completed, elapsed

    def _random_inputs(self):
        rng = np.random.default_rng(20261121)
        inputs = {}
        for b in self._inputs:
            if b.dtype.kind == "f":
                inputs[b.name] = rng.random(b.shape, dtype=np.float32).astype(b.dtype)
            elif b.dtype.kind == "c":
                inputs[b.name] = (rng.random(b.shape) + 1j * rng.random(b.shape)).astype(b.dtype)
            else:
                inputs[b.name] = rng.integers(0, 16, b.shape).astype(b.dtype)
        return inputs

    # ---- metrics ----------------------------------------------------------------------------

    def _add_stages(self, means, samples):
        """Adds `samples` inferences whose stages took `means` (stage -> microseconds, or
        PerfCounter) on average."""
        with self._metrics_lock:
            for stage, value in means:
                mean = value.realTimeUs if isinstance(value, qaicrt.PerfCounter) else value
                totals = self._stage_totals.setdefault(stage, [0.0, 0])
                totals[0] += mean * samples
                totals[1] += samples
            self._stage_samples += samples

    def get_metrics(self) -> Dict[str, Any]:
        """{'inferences': Session.run calls, 'latency_us': {mean, min, p50, p90, p99, max} of
        run() over the last 10000 calls, 'stages_us': {stage: mean microseconds} of the pipeline
        stages (seed 002), 'stage_samples': the inferences they were measured on (every
        run_benchmark inference, up to 50000 per call, and one run() in 16)}."""
        with self._metrics_lock:
            stages = {stage: total / count for stage, (total, count) in self._stage_totals.items() if count}
            samples, runs = self._stage_samples, self._runs
            latencies = sorted(self._latencies)
        latency = {}
        if latencies:
            latency = {"mean": sum(latencies) / len(latencies) * 1e6, "min": latencies[0] * 1e6,
                       "p50": _percentile(latencies, 50) * 1e6, "p90": _percentile(latencies, 90) * 1e6,
                       "p99": _percentile(latencies, 99) * 1e6, "max": latencies[-1] * 1e6}
        ordered = {name: stages[name] for name, _ in STAGES if name in stages}
        return {"inferences": runs, "latency_us": latency, "stages_us": ordered, "stage_samples": samples}

    def print_metrics(self) -> None:
        """Prints get_metrics() with the stage lines qaic-runner prints for --aic-profiling-type latency."""
        metrics = self.get_metrics()
        latency = metrics["latency_us"]
        print(f" ---- Session.run ({metrics['inferences']} calls) ----")
        if latency:
            print("latency          " + "  ".join(f"{k} {v:.1f}us" for k, v in latency.items()))
        print(" ---- Latency (mean per inference) ----")
        for stage, vendor_name in STAGES:
            if stage in metrics["stages_us"]:
                print(f"{vendor_name:<16} {metrics['stages_us'][stage]:10.1f}us  ({stage}, "
                      f"{metrics['stage_samples']} samples)")
        if self.enable_metrics:
            self._print_vendor_latency()

    def _print_vendor_latency(self):
        """The vendor's print_metrics lines, in seconds, over the run() latencies kept."""
        with self._metrics_lock:
            latencies = sorted(self._latencies)
        if not latencies:
            return
        mean = sum(latencies) / len(latencies)
        print(f"Number of inferences utilized for calculation are {len(latencies)}")
        print(f"Minimum latency observed {latencies[0]} s")
        print(f"Maximum latency observed {latencies[-1]} s")
        print(f"Average latency / inference time observed is {mean} s")
        for p in (25, 50, 75, 90, 99):
            print(f"P{p} / {p}% of inferences observed latency less than {_percentile(latencies, p)} s")
        print(f"Sum of all the inference times {sum(latencies)} s")

    def print_profile_data(self, n: int = 5) -> None:
        """Prints the profile of the last n run() inferences (a session made with
        enable_profiling=True), oldest first, as rows of the vendor's table: (where, stage
        number, stage) num calls, the stage's own seconds, seconds from the request's start to
        the stage's end; the runtime's performance counters of the inference (seed 002's stages,
        named as qaic-runner names them), then run() as a whole."""
        if not self.enable_profiling:
            raise ValueError(f"{self.model_path}: print_profile_data needs a session made with enable_profiling=True")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"print_profile_data: n must be a positive integer, not {n!r}")
        with self._metrics_lock:
            profiles = list(self._profiles)[-n:]
        print("|  File-Line-Function  | |  num calls  | |  func time  | |  tot time  |")
        for request_id, elapsed, counts in profiles:
            print(f"\n---- inference {request_id} ----")
            total = 0.0
            for number, (stage, vendor_name) in enumerate(STAGES):
                counter = counts.get(stage)
                if counter is None:
                    continue
                seconds = counter.realTimeUs / 1e6
                total += seconds
                print(f"('qaic-runtime', {number}, '{vendor_name} ({stage})') 1 {seconds:.9g} {total:.9g}")
            print(f"('qaic.Session', 0, 'run') 1 {elapsed - total:.9g} {elapsed:.9g}")

    def close(self) -> None:
        """Releases the device now (deactivates the program); the session is unusable after."""
        self._closed = True
        self.inference_set = None
        self.context = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc):
        self.close()
