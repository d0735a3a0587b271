# SPDX-License-Identifier: Apache-2.0
"""qaic: run programs on Cloud AI 100 class devices (real or qaic-emu) from Python.

    import numpy as np, qaic
    session = qaic.Session("model.onnx")            # or a programqpc.bin / QPC directory
    outputs = session.run({"input": np.zeros((1, 3, 224, 224), np.float32)})

Session compiles .onnx and JSON IR models with qaic-exec into a cache, runs them with dicts of
numpy arrays, benchmarks them (run_benchmark) and reports the pipeline's stage latencies
(get_metrics, print_metrics). It is built on qaicrt, the runtime's own API (seed 001).
"""
from ._compile import CompileError, compile_model, find_qaic_exec
from ._dtypes import numpy_dtype
from ._session import STAGES, Session

__all__ = ["Session", "CompileError", "compile_model", "find_qaic_exec", "numpy_dtype", "STAGES"]
