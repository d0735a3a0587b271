# SPDX-License-Identifier: Apache-2.0
"""Compiling a model with qaic-exec into a cache keyed by the model's content and the options."""
import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import Any, Mapping, Optional, Union

# What Session's compile options become on qaic-exec's command line. The vendor's tuning keys
# (mos, ols, ...) are qaic-exec's compatibility options: accepted, without effect here.
_FLAG_OPTIONS = {
    "convert_to_fp16": "-convert-to-fp16",
    "aic_enable_depth_first": "-aic-enable-depth-first",
    "multicast_weights": "-multicast-weights",
    "mxfp6_matmul": "-mxfp6-matmul",
    "aic_perf_warnings": "-aic-perf-warnings",
    "aic_perf_metrics": "-aic-perf-metrics",
    "compile_only": "-compile-only",
}
_VALUE_OPTIONS = {
    "aic_num_cores": "-aic-num-cores",
    "batchsize": "-batchsize",
    "stats_batchsize": "-stats-batchsize",
    "mos": "-mos",
    "ols": "-ols",
    "allocator_dealloc_delay": "-allocator-dealloc-delay",
    "size_split_granularity": "-size-split-granularity",
}
_NUMBER_OPTIONS = {"vtcm_working_set_limit_ratio": "-vtcm-working-set-limit-ratio"}
# Every compile option Session and its options file take.
COMPILE_OPTIONS = frozenset([*_FLAG_OPTIONS, *_VALUE_OPTIONS, *_NUMBER_OPTIONS, "onnx_define_symbol", "compile_options"])


class CompileError(RuntimeError):
    """qaic-exec could not compile the model; the message carries its own."""


def find_qaic_exec() -> pathlib.Path:
    """qaic-exec: $QAIC_EXEC, else bin/qaic-exec of the tree this package lies in (the build
    tree's build/python/qaic, or <prefix>/lib/python3/dist-packages/qaic), else PATH."""
    explicit = os.environ.get("QAIC_EXEC")
    if explicit:
        return pathlib.Path(explicit)
    here = pathlib.Path(__file__).resolve().parent
    for parent in list(here.parents)[:4]:
        candidate = parent / "bin" / "qaic-exec"
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("qaic-exec")
    if found:
        return pathlib.Path(found)
    raise FileNotFoundError("qaic-exec not found: set QAIC_EXEC, install qaic-tools, or put qaic-exec on PATH "
                            f"(looked in bin/ above {here} and on PATH)")


def exec_arguments(options):
    """qaic-exec flags for a dict of Session compile options (unknown keys are an error)."""
    args = []
    for key, value in sorted(options.items()):
        if value is None or value is False:
            continue
        if key in _FLAG_OPTIONS:
            args.append(_FLAG_OPTIONS[key])
        elif key in _VALUE_OPTIONS:
            args.append(f"{_VALUE_OPTIONS[key]}={int(value)}")
        elif key in _NUMBER_OPTIONS:
            args.append(f"{_NUMBER_OPTIONS[key]}={float(value)}")
        elif key == "onnx_define_symbol":
            for name, symbol_value in sorted(dict(value).items()):
                args.append(f"-onnx-define-symbol={name},{int(symbol_value)}")
        elif key == "compile_options":
            args.extend(str(flag) for flag in value)
        else:
            raise TypeError(f"unknown compile option '{key}'")
    return args


def load_options_file(path, runtime_keys=()):
    """The options of a JSON or YAML file (the vendor's options_path) as (compile options,
    run-time options): keys as Session's keyword arguments (aic_num_cores, convert_to_fp16,
    onnx_define_symbol, ..., and the run-time keys given, num_activations, set_size, ...), each
    also in the vendor's hyphenated spelling (multicast-weights, compile-only, aic-num-cores).
    A key that is neither is a ValueError naming it and the file."""
    path = pathlib.Path(path)
    text = path.read_text()
    if path.suffix in (".yaml", ".yml"):
        try:
            import yaml  # python3-yaml
        except ImportError:
            raise ImportError(f"{path}: reading YAML options needs python3-yaml (or write them as JSON)") from None
        data = yaml.safe_load(text)
    else:
        data = json.loads(text)
    if data is None:  # an empty YAML file (or one of comments only) sets nothing
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of option names to values")
    compile_options, runtime_options = {}, {}
    for key, value in data.items():
        name = key.replace("-", "_") if isinstance(key, str) else key
        if name in COMPILE_OPTIONS:
            target = compile_options
        elif name in runtime_keys:
            target = runtime_options
        else:
            known = ", ".join(sorted([*COMPILE_OPTIONS, *runtime_keys]))
            raise ValueError(f"{path}: unknown option {key!r} (known, with '-' or '_': {known})")
        if name in target:
            raise ValueError(f"{path}: option {key!r} is given twice (as '-' and '_' spellings)")
        target[name] = value
    return compile_options, runtime_options


def _external_locations(graph, tensor_proto):
    """Where the tensors of an ONNX graph (and its subgraphs) that live in external files are."""
    tensors = list(graph.initializer)
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                tensors.append(attribute.t)
            tensors.extend(attribute.tensors)
            if attribute.HasField("g"):
                yield from _external_locations(attribute.g, tensor_proto)
            for subgraph in attribute.graphs:
                yield from _external_locations(subgraph, tensor_proto)
    for tensor in tensors:
        if tensor.data_location == tensor_proto.EXTERNAL:
            yield from (entry.value for entry in tensor.external_data if entry.key == "location")


def _model_files(model):
    """The model file and the files it refers to, which are part of the model: an ONNX model's
    external data, an IR's weights side file."""
    files = [model]
    if model.suffix == ".onnx":
        try:
            import onnx
        except ImportError:  # without python3-onnx only the model file itself is the key
            return files
        try:
            proto = onnx.load(str(model), load_external_data=False)
        except Exception:  # not a model: qaic-exec will say what is wrong with it
            return files
        files += [model.parent / name for name in sorted(set(_external_locations(proto.graph, onnx.TensorProto)))]
    elif model.suffix == ".json":
        try:
            weights = json.loads(model.read_text()).get("weights")
        except (ValueError, AttributeError):  # not an IR: qaic-exec will say so
            return files
        if isinstance(weights, str):
            files.append(model.parent / weights)
    return [f for f in files if f.is_file()]


# qaic-exec options whose value is a file the compiled program depends on.
_FILE_OPTIONS = ("-custom-IO-list-file", "-network-specialization-config")


def _option_files(args):
    """The files named by the arguments of _FILE_OPTIONS: their content is part of the key."""
    for arg in args:
        name, _, value = arg.partition("=")
        if name in _FILE_OPTIONS and value and os.path.isfile(value):
            yield pathlib.Path(value)


def cache_key(model, args, compiler):
    digest = hashlib.sha256()
    for path in [*_model_files(model), *_option_files(args)]:
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    digest.update(json.dumps(args).encode())
    stat = compiler.stat()  # a rebuilt compiler invalidates what it compiled
    digest.update(f"{compiler.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:32]


def default_cache_dir():
    explicit = os.environ.get("QAIC_CACHE_DIR")
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "qaic"


def compile_model(model: Union[str, os.PathLike], options: Mapping[str, Any],
                  cache_dir: Optional[Union[str, os.PathLike]] = None) -> pathlib.Path:
    """The directory of `model` compiled with `options`, compiled now unless the cache has it.

    The entry appears atomically (compiled into a temporary directory, then renamed), so
    processes compiling the same model at once both end up with one complete entry."""
    model = pathlib.Path(model).resolve()
    if not model.is_file():
        raise FileNotFoundError(f"model '{model}' does not exist")
    compiler = find_qaic_exec()
    args = exec_arguments(options)
    cache = pathlib.Path(cache_dir) if cache_dir else default_cache_dir()
    entry = cache / cache_key(model, args, compiler)
    if (entry / "programqpc.bin").is_file():
        return entry
    cache.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=cache))
    try:
        cmd = [str(compiler), f"-m={model}", f"-aic-binary-dir={staging}", *args]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            message = (result.stderr or result.stdout).strip()
            raise CompileError(f"qaic-exec failed on '{model}' (exit {result.returncode}): {message}\n"
                               f"command: {' '.join(cmd)}")
        (staging / "compile.json").write_text(json.dumps({"model": str(model), "arguments": args}, indent=1) + "\n")
        try:
            os.rename(staging, entry)
        except OSError:
            if not (entry / "programqpc.bin").is_file():  # not another process's complete entry
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return entry
