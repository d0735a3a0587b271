# SPDX-License-Identifier: Apache-2.0
"""qaic.Session against a real qaic-emu: program containers and models compiled on the fly into a
content-keyed cache, run() with numpy dicts (dtype and shape from the program, partial and
specialized buffers, selective IO, outputs filled in place), errors that name the buffer,
run_benchmark's Stats line, metrics, and several threads on one session."""
import json
import os
import pathlib
import re
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import qaic
import qaicrt
from conftest import BIN, SOURCE, compile_file, compile_ir, relu_ir, run

STATS_LINE = re.compile(r"^InferenceCnt (\d+) TotalDuration (\d+)us BatchSize (\d+) Inf/Sec (\d+\.\d{3})$", re.M)


def mlp_onnx(path, external_data=False, seed=3):
    """y = relu(x @ w + b): x [2, 8] float, w [8, 4], b [4]; returns (w, b)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["z"]),
         helper.make_node("Relu", ["z"], ["y"])],
        "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    if external_data:
        onnx.save_model(model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                        location=path.name + ".data", size_threshold=0)
    else:
        onnx.save_model(model, str(path))
    return w, b


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache"


def test_a_container_directory_or_file_runs_with_dtype_and_shape_from_the_program(emulator, relu16):
    for path in (relu16, relu16 / "programqpc.bin", str(relu16)):
        session = qaic.Session(path, set_size=2)
        assert session.model_input_shape_dict() == {"x": ((1, 16), np.dtype(np.float32))}
        assert session.model_output_shape_dict() == {"y": ((1, 16), np.dtype(np.float32))}
        assert session.input_names == ["x"] and session.output_names == ["y"]
        x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16)
        out = session.run({"x": x})
        assert list(out) == ["y"] and out["y"].dtype == np.float32 and out["y"].shape == (1, 16)
        np.testing.assert_array_equal(out["y"], np.maximum(x, 0))
    # Lists are converted to the program's dtype; an output array given is filled in place.
    given = np.full((1, 16), 9.0, np.float32)
    out = session.run({"x": [[-1.0, 2.0] * 8]}, output_dict={"y": given})
    assert out["y"] is given and given.tolist() == [[0.0, 2.0] * 8]


def counting_compiler(directory, log):
    """A qaic-exec that logs each run, then runs the real one."""
    wrapper = pathlib.Path(directory) / "counting-qaic-exec"
    wrapper.write_text(f"#!/bin/sh\necho run >> '{log}'\nexec '{BIN / 'qaic-exec'}' \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def test_an_onnx_model_is_compiled_once_into_a_cache_keyed_by_content_and_options(emulator, tmp_path, cache,
                                                                                  monkeypatch):
    model = tmp_path / "mlp.onnx"
    w, b = mlp_onnx(model)
    log = tmp_path / "compiles.log"
    monkeypatch.setenv("QAIC_EXEC", str(counting_compiler(tmp_path, log)))
    compiles = lambda: len(log.read_text().splitlines()) if log.exists() else 0  # noqa: E731
    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    session = qaic.Session(model, cache_dir=cache)
    np.testing.assert_allclose(session.run({"x": x})["y"], np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-5)
    entries = list(cache.iterdir())
    assert compiles() == 1 and len(entries) == 1 and (entries[0] / "programqpc.bin").is_file()
    assert session.model_path == entries[0]
    # The same content and options: the cached entry, no compile.
    again = qaic.Session(model, cache_dir=cache)
    assert again.model_path == entries[0] and compiles() == 1
    # Other options, or other content, are another entry.
    other_options = qaic.Session(model, cache_dir=cache, aic_num_cores=2)
    assert compiles() == 2 and other_options.model_path != entries[0]
    assert other_options.qpc.getInfo().program[0].numCores == 2
    w2, b2 = mlp_onnx(model, seed=4)
    other_content = qaic.Session(model, cache_dir=cache)
    assert compiles() == 3 and len(list(cache.iterdir())) == 3
    np.testing.assert_allclose(other_content.run({"x": x})["y"], np.maximum(x @ w2 + b2, 0), rtol=1e-5, atol=1e-5)
    # Nothing but complete entries is left in the cache, also after a failed compile.
    with pytest.raises(qaic.CompileError):
        qaic.Session(model, cache_dir=cache, compile_options=["-no-such-option"])
    assert sorted(p.name for p in cache.iterdir()) == sorted(
        p.name for p in cache.iterdir() if (p / "programqpc.bin").is_file())


def use_stand_in_compiler(tmp_path, program, monkeypatch):
    """QAIC_EXEC becomes a script that 'compiles' any model into a copy of `program`: one cache
    entry per key shows what the cache keys, without a real compile each time."""
    stand_in = tmp_path / "stand-in-qaic-exec"
    stand_in.write_text("#!/bin/sh\nfor a; do case $a in -aic-binary-dir=*) dir=${a#*=};; esac; done\n"
                        f"cp '{program / 'programqpc.bin'}' \"$dir/\"\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv("QAIC_EXEC", str(stand_in))


def test_external_data_is_part_of_the_models_content(emulator, tmp_path, cache, relu16, monkeypatch):
    model = tmp_path / "big.onnx"
    w, b = mlp_onnx(model, external_data=True)
    assert (tmp_path / "big.onnx.data").is_file()
    # The weights are read from the data file beside the model (how ONNX stores models over 2 GiB).
    x = np.random.default_rng(5).standard_normal((2, 8)).astype(np.float32)
    y = qaic.Session(model, cache_dir=cache).run({"x": x})["y"]
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    # The cache keys it: a stand-in compiler shows one entry per content of the data file.
    use_stand_in_compiler(tmp_path, relu16, monkeypatch)
    first = qaic.compile_model(model, {}, cache)
    assert qaic.compile_model(model, {}, cache) == first
    mlp_onnx(model, external_data=True, seed=8)  # the same .onnx bytes, other weights
    assert qaic.compile_model(model, {}, cache) != first


def test_files_named_by_compile_options_are_part_of_the_key(emulator, tmp_path, cache, relu16, monkeypatch):
    """A custom IO list or specialization file edited in place is a new program, not a stale entry."""
    model = tmp_path / "mlp.onnx"
    mlp_onnx(model)
    use_stand_in_compiler(tmp_path, relu16, monkeypatch)
    custom_io = tmp_path / "custom_io.yaml"
    custom_io.write_text("- IOName: x\n  Precision: float16\n")
    options = {"compile_options": [f"-custom-IO-list-file={custom_io}"]}
    first = qaic.compile_model(model, options, cache)
    assert qaic.compile_model(model, options, cache) == first
    custom_io.write_text("- IOName: y\n  Precision: float16\n")
    assert qaic.compile_model(model, options, cache) != first


def test_a_json_ir_is_compiled_too_and_compile_errors_carry_qaic_execs_message(emulator, tmp_path, cache):
    session = qaic.Session(SOURCE / "examples/smallcnn/smallcnn.json", cache_dir=cache)
    assert len(session.input_names) == 1
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"\x08\x07garbage")
    with pytest.raises(qaic.CompileError, match="broken.onnx") as raised:
        qaic.Session(broken, cache_dir=cache)
    assert "qaic-exec" in str(raised.value)
    with pytest.raises(FileNotFoundError):
        qaic.Session(tmp_path / "missing.onnx", cache_dir=cache)


def test_options_from_a_json_file(emulator, tmp_path, cache):
    model = tmp_path / "mlp.onnx"
    mlp_onnx(model)
    options = tmp_path / "options.json"
    options.write_text('{"aic_num_cores": 2, "convert_to_fp16": true}')
    session = qaic.Session(model, cache_dir=cache, options_path=options)
    program = session.qpc.getInfo().program[0]
    assert program.numCores == 2 and program.fp16Constants


def test_the_vendors_backend_argument_and_tuning_keys_are_taken(emulator, tmp_path, cache):
    """Session(model_path=..., backend='aic', options_path=...) as the vendor's examples write it,
    the options file with its tuning keys (qaic-exec's compatibility options)."""
    model = tmp_path / "mlp.onnx"
    w, b = mlp_onnx(model)
    options = tmp_path / "options.json"
    options.write_text('{"aic_num_cores": 2, "mos": 1, "ols": 2, "aic_enable_depth_first": true, '
                       '"vtcm_working_set_limit_ratio": 0.5, "multicast_weights": true}')
    session = qaic.Session(model_path=model, backend="aic", cache_dir=cache, options_path=options)
    assert session.qpc.getInfo().program[0].numCores == 2
    x = np.ones((2, 8), np.float32)
    np.testing.assert_allclose(session.run({"x": x})["y"], np.maximum(x @ w + b, 0), rtol=1e-5, atol=1e-6)
    compiled = json.loads((session.model_path / "compile.json").read_text())["arguments"]
    assert {"-mos=1", "-ols=2", "-aic-enable-depth-first", "-vtcm-working-set-limit-ratio=0.5"} <= set(compiled)
    with pytest.raises(ValueError, match="backend 'qnn' is not supported"):
        qaic.Session(model, backend="qnn", cache_dir=cache)


def test_bad_inputs_name_the_buffer(emulator, relu16):
    session = qaic.Session(relu16, set_size=1)
    with pytest.raises(TypeError, match="input 'x': dtype float64"):
        session.run({"x": np.zeros((1, 16))})
    with pytest.raises(ValueError, match=r"input 'x': shape \(16,\)"):
        session.run({"x": np.zeros(16, np.float32)})
    with pytest.raises(ValueError, match="input 'x' is missing"):
        session.run({})
    with pytest.raises(ValueError, match="unknown input 'z'"):
        session.run({"x": np.zeros((1, 16), np.float32), "z": 1})
    # An array given where the mapping belongs says what run() takes (it raised "unhashable type").
    with pytest.raises(TypeError, match=r"run\(\) takes a mapping of input name -> array, not ndarray; "
                                        r"the program's inputs are \['x'\]"):
        session.run(np.zeros((1, 16), np.float32))
    with pytest.raises(TypeError, match="output_dict must be a mapping of output name -> array, not list"):
        session.run({"x": np.zeros((1, 16), np.float32)}, [np.zeros((1, 16), np.float32)])
    # numpy's conversion errors name the input too (fuzz_python_args: an int too large for an
    # integer dtype raised a bare OverflowError).
    with pytest.raises(ValueError, match="input 'x': could not convert string to float"):
        session.run({"x": "sixteen"})
    # Whatever else numpy raises while converting is the input's ValueError (fuzz_python_args: a
    # buffer whose format disagrees with its item size raised RuntimeError).

    class Unconvertible:
        def __array__(self, dtype=None):
            raise RuntimeError("item size 5 does not match the format's 8")

    with pytest.raises(ValueError, match="input 'x': item size 5"):
        session.run({"x": Unconvertible()})
    with pytest.raises(TypeError, match="output 'y'"):
        session.run({"x": np.zeros((1, 16), np.float32)}, output_dict={"y": np.zeros((1, 16), np.int32)})
    with pytest.raises(ValueError, match="output 'y'.*C-contiguous"):
        session.run({"x": np.zeros((1, 16), np.float32)}, output_dict={"y": np.zeros((16, 2), np.float32).T[:1]})
    # The session is still usable: each failure gave its handle back.
    assert session.run({"x": np.ones((1, 16), np.float32)})["y"].sum() == 16


def test_a_failed_inference_raises_with_its_status(emulator, relu16):
    session = qaic.Session(relu16, set_size=1)
    (emulator.root / "sys/class/accel/accel0/qaic-emu/fault/dma_fail").write_text("3 1")
    with pytest.raises(qaicrt.Error) as raised:
        session.run({"x": np.ones((1, 16), np.float32)})
    assert raised.value.status == qaicrt.QS_DEVICE_ERROR and "inference failed" in str(raised.value)
    assert session.run({"x": np.ones((1, 16), np.float32)})["y"].sum() == 16


def test_a_missing_device_is_a_clear_error(emulator, relu16):
    with pytest.raises(qaicrt.Error) as raised:
        qaic.Session(relu16, dev_id=9)
    assert raised.value.status == qaicrt.QS_NODEV and "device 9" in raised.value.message


def test_specialized_programs_take_dims_from_the_arrays(emulator, tmp_path):
    session = qaic.Session(compile_file(tmp_path, SOURCE / "tests/integration/qaic-runner/data/specialized.json"), set_size=2)
    assert session.model_input_shape_dict()["in1"] == ((1, 128), np.dtype(np.float32))
    for n0, n1 in ((32, 128), (1, 2)):
        in0 = np.linspace(-1, 1, n0, dtype=np.float32).reshape(1, n0)
        in1 = np.arange(n1, dtype=np.float32).reshape(1, n1)
        out = session.run({"in0": in0, "in1": in1})
        assert out["out0"].shape == (1, n0 + n1) and out["out1"].shape == (1, n0)
        np.testing.assert_array_equal(out["out0"], np.concatenate([in0, in1], axis=1))
        np.testing.assert_array_equal(out["out1"], np.maximum(in0, 0))
    with pytest.raises(ValueError, match=r"input 'in1': shape \(1, 3\) is not one of the allowed shapes"):
        session.run({"in0": np.zeros((1, 1), np.float32), "in1": np.zeros((1, 3), np.float32)})
    with pytest.raises(ValueError, match="not one allowed combination"):
        session.run({"in0": np.zeros((1, 1), np.float32), "in1": np.zeros((1, 128), np.float32)})


def test_partial_and_droppable_inputs(emulator, tmp_path):
    session = qaic.Session(compile_file(tmp_path, SOURCE / "tests/integration/qaic-runner/data/partial.json"), set_size=1)
    in0, in1 = np.arange(8, dtype=np.float32), np.arange(128, dtype=np.float32)
    out = session.run({"in0": in0, "in1": in1})
    assert out["out0"].shape == (16,)
    np.testing.assert_array_equal(out["out0"], np.concatenate([in0, in0]))
    np.testing.assert_array_equal(out["out1"], in1[:32])
    # in0 may be left out (selective IO): the program runs on what its device buffer holds.
    out = session.run({"in1": in1 + 1})
    np.testing.assert_array_equal(out["out1"], in1[:32] + 1)
    with pytest.raises(ValueError, match="input 'in1' is missing"):
        session.run({"in0": in0})
    with pytest.raises(ValueError, match="'in0'"):
        session.run({"in0": np.zeros(33, np.float32), "in1": in1})


def test_four_threads_run_one_session(emulator, relu16):
    session = qaic.Session(relu16, set_size=2, num_activations=2)
    failures = []

    def worker(t):
        for i in range(100):
            x = (np.full((1, 16), t * 1000 + i) * np.where(np.arange(16) % 2, 1, -1)).astype(np.float32)
            y = session.run({"x": x})["y"]
            if not np.array_equal(y, np.maximum(x, 0)):
                failures.append((t, i))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == [] and session.get_metrics()["inferences"] == 400


def test_run_benchmark_prints_qaic_runners_stats_line(emulator, smallcnn, capsys):
    session = qaic.Session(smallcnn, set_size=4)
    completed, rate, seconds, batch = session.run_benchmark(num_inferences=50)
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == " ---- Stats ----"
    (count, duration, batch_printed, rate_printed), = STATS_LINE.findall(printed)
    assert completed == int(count) == 50 and batch == int(batch_printed) == session.batch_size
    assert abs(float(rate_printed) - rate) < 0.001 and abs(int(duration) - seconds * 1e6) < 2
    assert rate == pytest.approx(50 * batch / seconds)
    runner = run([BIN / "qaic-runner", "-t", smallcnn, "-n", "50"], env=emulator.env()).stdout
    assert " ---- Stats ----" in runner.splitlines() and len(STATS_LINE.findall(runner)) == 1
    # By time, with the caller's inputs.
    x = np.zeros(session.model_input_shape_dict()[session.input_names[0]][0], np.float32)
    completed, rate, seconds, _ = session.run_benchmark(inf_time=0.3, input_dict={session.input_names[0]: x})
    assert completed > 0 and 0.3 <= seconds < 5 and "InferenceCnt" in capsys.readouterr().out


def test_run_benchmark_over_several_activations_and_its_failures(emulator, relu16, capsys):
    session = qaic.Session(relu16, set_size=3, num_activations=2)
    completed, rate, seconds, _ = session.run_benchmark(num_inferences=500)
    assert completed == 500 and rate > 0
    (emulator.root / "sys/class/accel/accel0/qaic-emu/fault/dma_fail").write_text("3 1")
    with pytest.raises(qaicrt.Error) as raised:
        session.run_benchmark(num_inferences=100)
    assert raised.value.status == qaicrt.QS_DEVICE_ERROR and "run_benchmark" in str(raised.value)
    # Every handle was given back: the whole set is usable again.
    assert session.run_benchmark(num_inferences=50)[0] == 50
    assert session.run({"x": np.ones((1, 16), np.float32)})["y"].sum() == 16


def test_metrics_report_the_pipeline_stages_as_qaic_runner_names_them(emulator, relu16, capsys):
    session = qaic.Session(relu16, set_size=1)
    for _ in range(20):
        session.run({"x": np.ones((1, 16), np.float32)})
    metrics = session.get_metrics()
    assert metrics["inferences"] == 20 and metrics["stage_samples"] == 2  # one run() in 16
    assert list(metrics["stages_us"]) == [stage for stage, _ in qaic.STAGES]
    assert set(metrics["latency_us"]) == {"mean", "min", "p50", "p90", "p99", "max"}
    assert metrics["latency_us"]["min"] <= metrics["latency_us"]["p50"] <= metrics["latency_us"]["max"]
    session.run_benchmark(num_inferences=30)
    assert session.get_metrics()["stage_samples"] == 32  # and every run_benchmark inference
    capsys.readouterr()
    session.print_metrics()
    printed = capsys.readouterr().out
    runner = run([BIN / "qaic-runner", "-t", relu16, "-n", "5", "--aic-profiling-type", "latency"],
                 env=emulator.env()).stdout

    def stage_lines(text):
        return [(m.group(1), m.group(2)) for m in re.finditer(r"^(\w+) +[\d.]+us  \((\d\. [\w ]+), \d+ samples\)$", text, re.M)]

    assert stage_lines(printed) == stage_lines(runner) and len(stage_lines(printed)) == 6
    assert " ---- Latency (mean per inference) ----" in printed.splitlines()
