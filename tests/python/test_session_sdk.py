# SPDX-License-Identifier: Apache-2.0
"""qaic.Session called as the SDK's Python examples call it, against a real qaic-emu: the shape
dicts subscripted, sessions sharing a device through oversubscription_name, enable_metrics,
enable_profiling with print_profile_data(n=), setup() and reset(), and options files with run-time
keys and the vendor's hyphenated spellings."""
import gc
import json
import re

import numpy as np
import pytest

import qaic
import qaicrt
from conftest import compile_ir, relu_ir

# A device of the emulator has 16 NSPs: two of these programs cannot be active at once.
BIG_CORES = 10


@pytest.fixture(scope="module")
def big_relus(workdir):
    """Two programs of BIG_CORES NSPs each (relu over [1,16] and over [1,8])."""
    return [compile_ir(workdir, f"big_relu{n}", relu_ir([1, n]), f"-aic-num-cores={BIG_CORES}") for n in (16, 8)]


@pytest.fixture(autouse=True)
def release_sessions():
    """Each test starts on a device no earlier test's session still holds."""
    gc.collect()
    yield
    gc.collect()


def relu_check(session, n):
    x = np.linspace(-1, 1, n, dtype=np.float32).reshape(1, n)
    np.testing.assert_array_equal(session.run({"x": x})["y"], np.maximum(x, 0))


def test_shape_dicts_are_subscripted_and_still_callable(emulator, relu16):
    session = qaic.Session(relu16, set_size=1)
    # As the examples read them.
    input_shape, input_type = session.model_input_shape_dict["x"]
    output_shape, output_type = session.model_output_shape_dict["y"]
    assert (input_shape, input_type) == ((1, 16), np.dtype(np.float32))
    assert (output_shape, output_type) == ((1, 16), np.dtype(np.float32))
    x = np.random.default_rng(1).standard_normal(input_shape).astype(input_type)
    out = session.run({"x": x})
    logits = np.frombuffer(out["y"], dtype=output_type).reshape(output_shape)
    np.testing.assert_array_equal(logits, np.maximum(x, 0))
    assert [(name, info[0]) for name, info in session.model_input_shape_dict.items()] == [("x", (1, 16))]
    assert list(session.model_output_shape_dict) == ["y"]
    # The earlier method call gives the same mapping; a caller's change touches no later one.
    assert session.model_input_shape_dict() == {"x": ((1, 16), np.dtype(np.float32))}
    mine = session.model_input_shape_dict
    mine["x"] = None
    assert session.model_input_shape_dict["x"][0] == (1, 16)
    with pytest.raises(KeyError):
        session.model_input_shape_dict["y"]


def test_sessions_of_one_oversubscription_name_share_the_device(emulator, big_relus):
    relu16, relu8 = big_relus
    # Without a group the second program does not fit beside the first.
    first = qaic.Session(relu16, dev_id=1, set_size=1)
    with pytest.raises(qaicrt.Error) as raised:
        qaic.Session(relu8, dev_id=1, set_size=1)
    assert raised.value.status == qaicrt.QS_NO_RESOURCES
    del first
    gc.collect()
    # As the SDK's whisper and diffusion examples make them: both loaded, one active at a time.
    encoder = qaic.Session(relu16, num_activations=1, set_size=1, dev_id=1, oversubscription_name="group1")
    decoder = qaic.Session(relu8, num_activations=1, set_size=1, dev_id=1, oversubscription_name="group1")
    assert encoder.group.getName() == decoder.group.getName() == "group1"
    for _ in range(3):
        relu_check(encoder, 16)
        relu_check(decoder, 8)
    assert encoder.group.isEnabled()
    # A session joining the enabled group: the group is disabled for it and enabled again.
    late = qaic.Session(relu16, dev_id=1, set_size=1, oversubscription_name="group1")
    relu_check(late, 16)
    relu_check(decoder, 8)
    relu_check(encoder, 16)
    # Another name is another group, which the device has no room for beside group1's active one.
    other = qaic.Session(relu8, dev_id=1, set_size=1, oversubscription_name="group2")
    assert other.group.getName() == "group2"
    with pytest.raises(qaicrt.Error) as raised:
        other.run({"x": np.zeros((1, 8), np.float32)})
    assert raised.value.status == qaicrt.QS_NO_RESOURCES
    with pytest.raises(ValueError, match="oversubscription_name 'group1'.*num_activations=1, not 2"):
        qaic.Session(relu8, dev_id=1, num_activations=2, oversubscription_name="group1")


def test_enable_metrics_measures_every_inference(emulator, relu16, capsys):
    session = qaic.Session(relu16, set_size=1, enable_metrics=True)
    for _ in range(20):
        relu_check(session, 16)
    metrics = session.get_metrics()
    assert metrics["inferences"] == 20 and metrics["stage_samples"] == 20
    assert list(metrics["stages_us"]) == [stage for stage, _ in qaic.STAGES]
    capsys.readouterr()
    session.print_metrics()
    printed = capsys.readouterr().out
    assert "Number of inferences utilized for calculation are 20" in printed.splitlines()
    values = {p: float(v) for p, v in re.findall(r"^P(\d+) / \d+% of inferences observed latency less than (\S+) s$",
                                                  printed, re.M)}
    assert list(values) == ["25", "50", "75", "90", "99"]
    assert sorted(values.values()) == list(values.values()) and values["25"] > 0
    minimum = float(re.search(r"^Minimum latency observed (\S+) s$", printed, re.M).group(1))
    total = float(re.search(r"^Sum of all the inference times (\S+) s$", printed, re.M).group(1))
    assert 0 < minimum <= values["25"] and total >= 20 * minimum
    # A session without it samples one run() in 16 and prints no such lines.
    plain = qaic.Session(relu16, set_size=1)
    for _ in range(20):
        relu_check(plain, 16)
    assert plain.get_metrics()["stage_samples"] == 2
    plain.print_metrics()
    assert "Number of inferences" not in capsys.readouterr().out


def test_enable_profiling_prints_the_last_n_inferences(emulator, relu16, capsys):
    session = qaic.Session(relu16, set_size=1, enable_profiling=True)
    for _ in range(7):
        relu_check(session, 16)
    capsys.readouterr()
    session.print_profile_data(n=3)
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0] == "|  File-Line-Function  | |  num calls  | |  func time  | |  tot time  |"
    blocks = re.split(r"^---- inference (\d+) ----$", printed, flags=re.M)[1:]
    ids = [int(i) for i in blocks[0::2]]
    assert len(ids) == 3 and ids == list(range(ids[0], ids[0] + 3))  # the last three, oldest first
    row = re.compile(r"^\('([\w.-]+)', (\d+), '(.+)'\) 1 (\S+) (\S+)$", re.M)
    for body in blocks[1::2]:
        rows = row.findall(body)
        stages = [(int(number), name) for where, number, name, _, _ in rows if where == "qaic-runtime"]
        assert stages == [(k, f"{vendor} ({stage})") for k, (stage, vendor) in enumerate(qaic.STAGES)]
        own = [float(r[3]) for r in rows]
        cumulative = [float(r[4]) for r in rows]
        assert all(t >= 0 for t in own) and cumulative == sorted(cumulative) and cumulative[-1] > 0
        assert rows[-1][:3] == ("qaic.Session", "0", "run")
    # More than were run prints those there are.
    session.print_profile_data(n=50)
    assert len(re.findall(r"^---- inference", capsys.readouterr().out, re.M)) == 7
    with pytest.raises(ValueError, match="n must be a positive integer"):
        session.print_profile_data(n=0)
    with pytest.raises(ValueError, match="enable_profiling=True"):
        qaic.Session(relu16, set_size=1).print_profile_data(n=5)


def test_setup_is_idempotent_and_reset_lets_go_of_the_device(emulator, big_relus):
    relu16, relu8 = big_relus
    session = qaic.Session(relu16, dev_id=1, set_size=1)
    first_set = session.inference_set
    session.setup()
    session.setup()
    assert session.inference_set is first_set
    del first_set  # the set lets go of the device when its last reference goes
    relu_check(session, 16)
    with pytest.raises(qaicrt.Error) as raised:
        qaic.Session(relu8, dev_id=1, set_size=1)
    assert raised.value.status == qaicrt.QS_NO_RESOURCES
    # reset() releases the NSPs (the tutorials' "release the NSP cores"): another program fits.
    session.reset()
    assert session.inference_set is None
    other = qaic.Session(relu8, dev_id=1, set_size=1)
    relu_check(other, 8)
    with pytest.raises(qaicrt.Error) as raised:
        session.setup()
    assert raised.value.status == qaicrt.QS_NO_RESOURCES and session.inference_set is None
    other.close()
    # The next run() loads the program again, as the vendor's session does without setup().
    relu_check(session, 16)
    assert session.inference_set is not None
    assert session.get_metrics()["inferences"] == 2  # metrics survive a reset
    session.reset()
    session.setup()
    relu_check(session, 16)
    session.close()
    with pytest.raises(ValueError, match="the session is closed"):
        session.setup()


def test_options_file_with_run_time_keys_and_hyphenated_spellings(emulator, tmp_path):
    model = tmp_path / "relu.json"
    model.write_text(json.dumps(relu_ir([1, 16])))
    options = tmp_path / "relu-config.yaml"
    options.write_text("# compile parameters\n"
                       "aic-num-cores: 2\n"
                       "mos: 1\n"
                       "ols: 2\n"
                       "multicast-weights: true\n"
                       "stats-batchsize: 1\n"
                       "compile-only: true\n"
                       "\n# inference parameters\n"
                       "num_activations: 2\n"
                       "set_size: 3\n"
                       "dev_id: 1\n"
                       "data-path-timeout-ms: 7000\n")
    cache = tmp_path / "cache"
    session = qaic.Session(model_path=model, options_path=options, cache_dir=cache)
    assert session.qpc.getInfo().program[0].numCores == 2
    arguments = set(json.loads((session.model_path / "compile.json").read_text())["arguments"])
    assert {"-aic-num-cores=2", "-mos=1", "-ols=2", "-multicast-weights", "-stats-batchsize=1",
            "-compile-only"} <= arguments
    assert (session.num_activations, session.set_size, session.dev_id) == (2, 3, 1)
    assert session.inference_set.getNumActivations() == 2 and session.inference_set.getSetSize() == 3
    relu_check(session, 16)
    session.close()
    # Keyword arguments win over the file; a container takes the file's run-time keys alone (the
    # tutorials' config files hold nothing else).
    session = qaic.Session(model, num_activations=1, set_size=2, dev_id=0, options_path=options, cache_dir=cache)
    assert session.inference_set.getNumActivations() == 1 and session.inference_set.getSetSize() == 2
    assert session.dev_id == 0
    runtime_only = tmp_path / "runtime.yaml"
    runtime_only.write_text("# Inference Parameters\nnum_activations: 2\nset_size: 1\nenable-metrics: true\n")
    from_container = qaic.Session(session.model_path / "programqpc.bin", options_path=runtime_only)
    assert from_container.inference_set.getNumActivations() == 2 and from_container.enable_metrics
    relu_check(from_container, 16)
    assert from_container.get_metrics()["stage_samples"] == 1


def test_an_unknown_or_ill_typed_option_names_the_key_and_the_file(emulator, tmp_path, relu16):
    bad = tmp_path / "bad.yaml"
    bad.write_text("num_activations: 1\naic-num-cores: 2\nmulticast-weight: true\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))}: unknown option 'multicast-weight'"):
        qaic.Session(relu16, options_path=bad)
    typed = tmp_path / "typed.json"
    typed.write_text('{"set_size": "ten"}')
    with pytest.raises(ValueError, match=rf"{re.escape(str(typed))}: option 'set_size' must be an integer"):
        qaic.Session(relu16, options_path=typed)
    twice = tmp_path / "twice.yaml"
    twice.write_text("aic-num-cores: 2\naic_num_cores: 4\n")
    with pytest.raises(ValueError, match="option 'aic_num_cores' is given twice"):
        qaic.Session(relu16, options_path=twice)
