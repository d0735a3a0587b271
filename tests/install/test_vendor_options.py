# SPDX-License-Identifier: Apache-2.0
"""The vendor tools' options and fields that scripts use, against a real qaic-emu: qaic-util's
-q fields, filters and JSON file; qaic-runner's device list, auto-pick, long options, latency
files, input dumps and unbound random inputs; qaic-exec's hardware version, operator list,
stats batch size, compatibility options and the qaic-compile name."""
import json
import math
import os
import pathlib
import re
import shutil
import struct
import subprocess
import tempfile
import time

import pytest

from conftest import BUILD, SOURCE, run

BIN = BUILD / "bin"
SMALLCNN = SOURCE / "examples/smallcnn/smallcnn.json"


@pytest.fixture
def work():
    directory = pathlib.Path(tempfile.mkdtemp(prefix="qaic-vendor."))
    yield directory
    shutil.rmtree(directory)


def compile_smallcnn(directory, *extra):
    run([BIN / "qaic-exec", f"-m={SMALLCNN}", f"-aic-binary-dir={directory}", *extra])
    return directory


def query(emu, *args):
    return run([BIN / "qaic-util", "-q", *args], env=emu.env()).stdout


def fields(text):
    """{qid: {label: value}} of qaic-util -q output."""
    devices, current = {}, None
    for line in text.splitlines():
        if line.startswith("QID "):
            current = devices.setdefault(int(line[4:]), {})
        elif line.startswith("\t") and current is not None:
            label, _, value = line[1:].partition(":")
            current[label] = value
    return devices


def wait_for(condition, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    return condition()


# ---- qaic-util ---------------------------------------------------------------------------------

def test_query_prints_the_fields_scripts_read_from_the_configuration(emulator, work):
    config = work / "emu.json"
    config.write_text(json.dumps({"devices": [
        {"board_serial": "1P23AB0042", "serial": "0x8d9e2b2b", "fw_version": "1.15.0.3",
         "fw_oem_image_version": "OEM.7", "fw_image_variant": "AIC100.DBG", "capabilities": {"HybridBoot": True, "MDP": True},
         "current_link_width": 4, "ddr_frequency_mhz": 1866, "tdp_cap_w": 60.5},
        {}]}))
    emu = emulator(config=config)
    devices = fields(query(emu))
    d0, d1 = devices[0], devices[1]
    assert d0["Board serial"] == "1P23AB0042" and d0["HW Serial"] == "0x8d9e2b2b"
    assert d0["FW Version"] == "1.15.0.3" and d0["FW QC_IMAGE_VERSION"] == "QSM.AIC.1.15.0.3"
    assert d0["FW OEM_IMAGE_VERSION"] == "OEM.7" and d0["FW IMAGE_VARIANT"] == "AIC100.DBG"
    assert d0["Device Capabilities"] == "HybridBoot+ MDP+"
    assert d0["Max Link Speed"] == "16.0 GT/s PCIe" and d0["Max Link Width"] == "x8"
    assert d0["Current Link Width"] == "x4" and d0["DDR Frequency(Mhz)"] == "1866"
    assert d0["TDP Cap(Watts)"] == "60.50"
    assert float(d0["SoC temperature(degree C)"]) > 0 and float(d0["Board power(Watts)"]) > 0
    # Defaults differ per device, as two cards' serials do.
    assert d1["Board serial"] != d0["Board serial"] and d1["HW Serial"] != d0["HW Serial"]
    # Two cards are peers by default (p2p_groups), so the second reports MDP+.
    assert d1["Device Capabilities"] == "HybridBoot- MDP+ ECC+" and d1["TDP Cap(Watts)"] == "75.00"
    # The same, as the files the tool read: the emulator's identity under qaic-emu/, the PCI
    # function's attributes under device/ (docs/emulator.md).
    sys = emu.root / "sys/class/accel/accel0"
    assert (sys / "qaic-emu/board_serial").read_text() == "1P23AB0042\n"
    assert (sys / "device/current_link_width").read_text() == "4\n"
    assert (sys / "device/hwmon/hwmon0/power1_max").read_text() == "60500000\n"


def test_power_and_temperature_rise_while_nsps_work(emulator, work):
    emu = emulator()
    qpc = compile_smallcnn(work / "qpc", "-aic-num-cores=4")
    idle = fields(query(emu, "-d", "0"))[0]
    runner = subprocess.Popen([str(BIN / "qaic-runner"), "-t", str(qpc), "-a", "3", "--time", "20"], env=emu.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        busy = wait_for(lambda: (f := fields(query(emu, "-d", "0"))[0])["Networks Active"] == "3" and f)
        assert busy, "the runner's activations never showed"
        assert float(busy["Board power(Watts)"]) > float(idle["Board power(Watts)"])
        assert float(busy["SoC temperature(degree C)"]) > float(idle["SoC temperature(degree C)"])
        assert float(busy["Board power(Watts)"]) <= float(busy["TDP Cap(Watts)"])
    finally:
        runner.terminate()
        runner.communicate(timeout=60)


def test_filters_select_devices_by_any_field(emulator, work):
    config = work / "emu.json"
    config.write_text(json.dumps({"devices": [{"nsps": 8}, {"nsps": 16}, {"nsps": 16, "sku": "AIC100 M.2"}]}))
    emu = emulator(config=config)
    qids = lambda *f: sorted(fields(query(emu, *f)))
    assert qids("-f", "Nsp Free==16") == [1, 2]
    assert qids("-f", "nsp total == 8") == [0]  # any case, spaces around the operator
    assert qids("-f", "Status==Ready", "-f", "Sku Type!=AIC100 M.2") == [0, 1]
    assert qids("-f", "Dram Free==16384") == [0, 1, 2]  # a number matches "16384 MB"
    assert qids("-f", "Status==Error") == []
    table = run([BIN / "qaic-util", "-t", "1", "--count", "1", "-f", "Nsp Total==8"], env=emu.env()).stdout
    assert len([l for l in table.splitlines() if re.match(r"^\d+\s", l)]) == 1
    bad = run([BIN / "qaic-util", "-q", "-f", "Nsp Freee==16"], env=emu.env(), check=False)
    assert bad.returncode == 2 and "unknown field 'Nsp Freee'" in bad.stderr and "Nsp Free" in bad.stderr
    assert run([BIN / "qaic-util", "-q", "-f", "Nsp Free"], env=emu.env(), check=False).returncode == 2


def test_json_goes_to_a_file_or_stdout(emulator, work):
    emu = emulator(devices=2)
    out = work / "status.json"
    result = run([BIN / "qaic-util", "-j", out, "-f", "QID==1"], env=emu.env(), check=False)
    assert result.returncode == 2  # QID is the block's title, not a field
    result = run([BIN / "qaic-util", "--json", out, "-d", "1"], env=emu.env())
    assert result.stdout == ""
    status = json.loads(out.read_text())
    assert [d["qid"] for d in status["devices"]] == [1]
    device = status["devices"][0]
    assert device["board_serial"] and device["fw_image_variant"] == "AIC100.REL"
    assert device["tdp_cap_w"] == 75.0 and device["max_link_width"] == "8"
    assert json.loads(run([BIN / "qaic-util", "-j"], env=emu.env()).stdout)["devices"][1]["qid"] == 1
    assert not list(work.glob("*.tmp*"))
    unwritable = run([BIN / "qaic-util", "-j", work / "missing-dir/x.json"], env=emu.env(), check=False)
    assert unwritable.returncode == 1 and "missing-dir/x.json" in unwritable.stderr


def test_missing_device_says_so_as_the_vendor_tool_does(emulator):
    emu = emulator()
    result = run([BIN / "qaic-util", "-q", "-d", "3"], env=emu.env(), check=False)
    assert result.returncode == 1
    assert "Failed to find requested device ID 3" in result.stdout
    ok = run([BIN / "qaic-util", "--query", "--device", "0"], env=emu.env()).stdout
    assert "Status:Ready" in ok


# ---- qaic-runner -------------------------------------------------------------------------------

def active(emu, qid):
    return int((emu.root / f"sys/class/accel/accel{qid}/qaic-emu/networks_active").read_text())


def test_dev_list_spreads_activations_over_the_devices(emulator, work):
    emu = emulator(devices=3)
    qpc = compile_smallcnn(work / "qpc")
    runner = subprocess.Popen([str(BIN / "qaic-runner"), "-t", str(qpc), "-D", "2:0", "-a", "3", "--time", "20"],
                              env=emu.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: (active(emu, 2), active(emu, 0)) == (2, 1)), (active(emu, 2), active(emu, 0))
        assert active(emu, 1) == 0
    finally:
        runner.terminate()
        runner.communicate(timeout=60)
    # Without -a, one activation per listed device; the run completes and counts.
    out = run([BIN / "qaic-runner", "-t", qpc, "--dev-list", "0,1", "-n", "30"], env=emu.env()).stdout
    assert "InferenceCnt 30 " in out
    for bad in (["-D", "0:0"], ["-D", "0:1", "-d", "0"], ["-D", "0:1:2", "-a", "2"], ["-D", "0:x"]):
        result = run([BIN / "qaic-runner", "-t", qpc, *bad], env=emu.env(), check=False)
        assert result.returncode == 2, (bad, result.stderr)


def test_without_d_the_first_device_with_room_is_picked(emulator, work):
    config = work / "emu.json"
    config.write_text(json.dumps({"devices": [{"nsps": 2}, {"nsps": 16}]}))
    emu = emulator(config=config)
    qpc = compile_smallcnn(work / "qpc", "-aic-num-cores=4")
    runner = subprocess.Popen([str(BIN / "qaic-runner"), "-t", str(qpc), "--time", "20", "-v"], env=emu.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_for(lambda: active(emu, 1) == 1)
        assert active(emu, 0) == 0
    finally:
        runner.terminate()
        _, err = runner.communicate(timeout=60)
    assert "picked device 1" in err
    # No device has room for 5 activations of 4 NSPs: a clear refusal, exit 4.
    full = run([BIN / "qaic-runner", "-t", qpc, "-a", "5", "-n", "1"], env=emu.env(), check=False)
    assert full.returncode == 4 and "no device has room for 5 activation(s)" in full.stderr


def test_long_forms_and_input_dumps(emulator, work):
    emu = emulator()
    qpc = compile_smallcnn(work / "qpc")
    image = work / "image.raw"
    image.write_bytes(struct.pack("<768f", *[(i % 17) / 16.0 for i in range(768)]))
    out = work / "out"
    run([BIN / "qaic-runner", "--test-data", qpc, "--device-id", "0", "--input-file", image, "-n", "5",
         "--write-output-dir", out, "--write-output-start-iter", "2", "--write-output-num-samples", "2",
         "--dump-input-buffers"], env=emu.env())
    assert sorted(p.name for p in out.iterdir()) == ["image-inf-2.bin", "image-inf-3.bin", "probs-inf-2.bin", "probs-inf-3.bin"]
    assert (out / "image-inf-3.bin").read_bytes() == image.read_bytes()
    missing_dir = run([BIN / "qaic-runner", "-t", qpc, "--dump-input-buffers"], env=emu.env(), check=False)
    assert missing_dir.returncode == 2 and "--write-output-dir" in missing_dir.stderr


def test_unbound_random_inputs_cover_the_types_range(emulator, work):
    emu = emulator()
    qpc = compile_smallcnn(work / "qpc")
    for flags, bounded in (([], True), (["--unbound-random"], False)):
        out = work / ("bounded" if bounded else "unbound")
        run([BIN / "qaic-runner", "-t", qpc, "-n", "1", "--write-output-dir", out, "--dump-input-buffers", *flags],
            env=emu.env())
        values = struct.unpack("<768f", (out / "image-inf-0.bin").read_bytes())
        assert all(math.isfinite(v) for v in values)
        if bounded:
            assert all(0 <= v < 1 for v in values)
        else:
            assert any(v < 0 for v in values) and any(abs(v) > 1e6 for v in values)
    both = run([BIN / "qaic-runner", "-t", qpc, "--unbound-random", "-i", work / "x"], env=emu.env(), check=False)
    assert both.returncode == 2


def test_latency_file_in_the_vendor_format(emulator, work):
    emu = emulator()
    qpc = compile_smallcnn(work / "qpc")
    out = work / "profile"
    result = run([BIN / "qaic-runner", "-t", qpc, "-n", "40", "--aic-profiling-type", "latency",
                  "--aic-profiling-start-iter", "10", "--aic-profiling-num-samples", "25",
                  "--aic-profiling-out-dir", out], env=emu.env())
    files = list(out.iterdir())
    assert [f.name for f in files] == ["aic-profiling-latency-smallcnn.txt"]
    assert f"Latency samples: {files[0]}" in result.stdout
    lines = files[0].read_text().splitlines()
    assert lines[4] == ("Sample,hostRoundTrip,enqTime,preProcTime,submitTime,execTotal,exectoVc,execToComplete,"
                        "postProc,totalRoundtripTime")
    rows = [list(map(int, line.split(","))) for line in lines[5:]]
    assert [r[0] for r in rows] == list(range(10, 35))
    for sample, host, enq, pre, submit, total, to_vc, to_complete, post, roundtrip in rows:
        assert total == to_vc + to_complete
        assert roundtrip >= host > 0
        assert host >= pre + submit + to_complete  # stages inside the round trip
    # The mean summary covers the same 25 samples.
    assert "(1. input preprocessing, 25 samples)" in result.stdout
    lonely = run([BIN / "qaic-runner", "-t", qpc, "--aic-profiling-out-dir", out], env=emu.env(), check=False)
    assert lonely.returncode == 2


# ---- qaic-exec / qaic-compile --------------------------------------------------------------------

def test_exec_hw_version_stats_batchsize_and_compatibility_options(emulator, work):
    for version in ("2.0", "ai100"):
        compile_smallcnn(work / version, "-aic-hw", f"-aic-hw-version={version}", "-mos=1", "-ols=1",
                         "-aic-enable-depth-first", "-stats-level=70", "-time-passes", "-retained-state=true",
                         "-multicast-weights", "-compile-only")
    wrong = run([BIN / "qaic-exec", f"-m={SMALLCNN}", f"-aic-binary-dir={work / 'x'}", "-aic-hw-version=ai200"], check=False)
    assert wrong.returncode == 2 and "ai200" in wrong.stderr and not (work / "x/programqpc.bin").exists()
    emu = emulator()
    qpc = compile_smallcnn(work / "stats", "-stats-batchsize=4")
    assert "BatchSize 4 " in run([BIN / "qaic-runner", "-t", qpc, "-n", "8"], env=emu.env()).stdout


def test_operators_supported_lists_the_importers_table(work):
    listed = work / "ops.txt"
    result = run([BIN / "qaic-exec", f"-operators-supported={listed}"])
    names = listed.read_text().split()
    assert names == sorted(set(names)) and len(names) >= 20
    assert {"Conv", "Relu", "Gemm", "MatMul", "Softmax", "Reshape"} <= set(names)
    assert f"wrote {len(names)} supported ONNX operators" in result.stdout
    # Every name it lists is one the importer accepts: an unlisted one is refused by name.
    model = work / "m.onnx"
    subprocess.run(["/usr/bin/python3", "-c", f"""
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info('y', TensorProto.INT64, [2, 4])
g = helper.make_graph([helper.make_node('NonZero', ['x'], ['y'])], 'g', [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '{model}')
"""], check=True)
    refused = run([BIN / "qaic-exec", f"-m={model}", f"-aic-binary-dir={work / 'o'}"], check=False)
    assert "NonZero" not in names and refused.returncode == 2 and "NonZero" in refused.stderr


def test_an_io_type_the_runtime_cannot_exchange_is_refused_when_compiling(work):
    """A float64 input compiled without complaint and failed at the first inference; now qaic-exec
    names the buffer and its type, and writes nothing."""
    model = work / "double.onnx"
    subprocess.run(["/usr/bin/python3", "-c", f"""
import onnx
from onnx import helper, TensorProto
x = helper.make_tensor_value_info('x', TensorProto.DOUBLE, [3])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [3])
g = helper.make_graph([helper.make_node('Cast', ['x'], ['y'], to=TensorProto.FLOAT)], 'g', [x], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 13)]), '{model}')
"""], check=True)
    refused = run([BIN / "qaic-exec", f"-m={model}", f"-aic-binary-dir={work / 'd'}"], check=False)
    assert refused.returncode == 2, refused.stderr
    assert "input 'x' is TL_DOUBLE, which the runtime does not exchange" in refused.stderr
    assert not (work / "d/programqpc.bin").exists()


def test_qaic_compile_is_the_same_program_under_its_newer_name(work):
    compile_name = BIN / "qaic-compile"
    assert compile_name.is_symlink() and compile_name.resolve() == (BIN / "qaic-exec").resolve()
    run([compile_name, f"-m={SMALLCNN}", f"-aic-binary-dir={work / 'q'}"])
    assert (work / "q/programqpc.bin").is_file()
    bad = run([compile_name, "-bogus"], check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("qaic-compile: error: ")
    assert run([compile_name, "--help"]).stdout.startswith("Usage: qaic-compile ")
