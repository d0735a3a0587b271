# SPDX-License-Identifier: Apache-2.0
"""Threads and lifetimes: Python threads sharing one set with the GIL released while they wait,
callbacks from the runtime's threads, objects deleted in any order, and interpreter exit with
inferences in flight (in child processes, under a timeout)."""
import gc
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import qaicrt
from conftest import BUILD, SOURCE, compile_ir, ir_network


def add_ir(elements):
    return ir_network(
        [{"name": "add", "optype": "elew", "tensors_in": [{"arg_name": "src1", "name": "a"}, {"arg_name": "src2", "name": "b"}],
          "tensors_out": [{"arg_name": "dst", "name": "c"}], "params": [{"arg_name": "elew_op", "value": "TL_SUM"}]}],
        [{"name": n, "tensor": n, "direction": d, "dtype": "TL_FLOAT", "dims": [1, elements]}
         for n, d in (("a", "in"), ("b", "in"), ("c", "out"))])


@pytest.fixture(scope="module")
def add256(workdir):
    return compile_ir(workdir, "add256", add_ir(256))


@pytest.fixture(scope="module")
def context(emulator):
    return qaicrt.Context([0])


def test_four_python_threads_share_one_set(context, add256):
    inference_set = qaicrt.InferenceSet(context, qaicrt.Qpc(str(add256)), 0, 4, 2)
    failures = []
    per_thread = 200

    def worker(t):
        try:
            a = np.full((1, 256), t, np.float32)
            for i in range(per_thread):
                b = np.full((1, 256), i, np.float32)
                c = np.empty((1, 256), np.float32)
                request = t * 1_000_000 + i
                status, handle = inference_set.getAvailable(30_000_000)
                assert status == qaicrt.QS_SUCCESS
                handle.setBuffers([a, b, c])
                inference_set.submit(handle, request)
                status, done = inference_set.getCompletedId(request, 30_000_000)
                assert status == qaicrt.QS_SUCCESS and done.getId() == request
                inference_set.putCompleted(done)
                if not (c == t + i).all():
                    failures.append((t, i, c[0, :4]))
        except Exception as e:  # reported to the main thread
            failures.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)
    assert failures == []


def test_blocking_calls_release_the_gil(context, add256):
    inference_set = qaicrt.InferenceSet(context, qaicrt.Qpc(str(add256)), 0, 1, 1)
    status, held = inference_set.getAvailable()
    outcome = {}

    def waiter():
        started = time.monotonic()
        outcome["status"], handle = inference_set.getAvailable(20_000_000)
        outcome["waited"] = time.monotonic() - started
        inference_set.putCompleted(handle)

    thread = threading.Thread(target=waiter)
    thread.start()
    # While the other thread waits inside getAvailable, this one keeps running Python code.
    counted, deadline = 0, time.monotonic() + 0.3
    while time.monotonic() < deadline:
        counted += 1
    inference_set.putCompleted(held)
    thread.join(30)
    assert outcome["status"] == qaicrt.QS_SUCCESS and outcome["waited"] >= 0.25
    assert counted > 10_000


def test_objects_can_be_deleted_in_any_order(emulator, add256):
    qpc = qaicrt.Qpc(str(add256))
    a, b = np.ones((1, 256), np.float32), np.full((1, 256), 2, np.float32)
    # The set outlives the context object, the handle outlives the set object.
    context = qaicrt.Context([0])
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 2, 1)
    del context, qpc
    gc.collect()
    status, handle = inference_set.getAvailable()
    c = np.zeros((1, 256), np.float32)
    handle.setBuffers([a, b, c])
    inference_set.submit(handle, 1)
    del inference_set
    gc.collect()
    assert handle.getId() == 1
    time.sleep(0.2)
    assert handle.getStatus() == qaicrt.QS_SUCCESS and (c == 3).all()
    del handle
    gc.collect()
    # A set dropped with inferences in flight waits for them: the outputs, which only the set
    # holds, are complete before the memory goes away.
    inference_set = qaicrt.InferenceSet(qaicrt.Context([0]), qaicrt.Qpc(str(add256)), 0, 4, 1)
    outputs = []
    for k in range(4):
        _, handle = inference_set.getAvailable()
        out = np.zeros((1, 256), np.float32)
        outputs.append(out)
        handle.setBuffers([np.full((1, 256), k, np.float32), b, out])
        inference_set.submit(handle, k)
    del handle, inference_set
    gc.collect()
    assert [float(o[0, 0]) for o in outputs] == [2.0, 3.0, 4.0, 5.0]
    # A set whose only reference is a callback in flight lives until the callback ran, then goes.
    inference_set = qaicrt.InferenceSet(qaicrt.Context([0]), qaicrt.Qpc(str(add256)), 0, 1, 1)
    _, handle = inference_set.getAvailable()
    handle.setBuffers([a, b, np.zeros((1, 256), np.float32)])
    called = threading.Event()
    inference_set.submit(handle, lambda h, data: (data.append(h.getStatus()), called.set()), seen := [])
    del handle, inference_set
    gc.collect()
    assert called.wait(30) and seen == [qaicrt.QS_SUCCESS]
    # A DMA buffer outlives its context object through its QBuffer.
    context = qaicrt.Context([0])
    region = context.allocateDmaBuffer(0, 1024).qbuffer()
    del context
    gc.collect()
    np.frombuffer(region, np.uint8)[:] = 1
    assert bytes(region) == b"\x01" * 1024


CHILD_PRELUDE = """
import sys, numpy as np, qaicrt
def say(*words):  # one write per line: lines from several threads never interleave
    sys.stdout.write(" ".join(map(str, words)) + "\\n")
    sys.stdout.flush()
qpc = qaicrt.Qpc(sys.argv[1])
context = qaicrt.Context([0])
a, b = np.ones((1, 256), np.float32), np.full((1, 256), 2, np.float32)
"""


def run_child(qpc, script, timeout=120):
    """Runs CHILD_PRELUDE and `script` in a child process against the same emulator; returns the
    finished process and the seconds it took."""
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", CHILD_PRELUDE + textwrap.dedent(script), str(qpc)], env=env,
                            capture_output=True, text=True, timeout=timeout)
    return result, time.monotonic() - started


def test_exit_with_inferences_and_callbacks_in_flight_delivers_them_and_does_not_hang(emulator, add256):
    result, took = run_child(add256, """
    properties = qaicrt.InferenceSetProperties()
    inference_set = qaicrt.InferenceSet(context, qpc, 0, 8, 2, properties)
    def notify(handle, data):
        say("delivered", data, handle.getStatus().name)
        inference_set.putCompleted(handle)  # a call into the runtime from the callback, during exit
    for k in range(16):
        status, handle = inference_set.getAvailable()
        handle.setBuffers([a, b, np.zeros((1, 256), np.float32)])
        if k % 2:
            inference_set.submit(handle, notify, k)
        else:
            inference_set.submit(handle, k)
    say("exiting")
    """)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "exiting" in lines
    assert sorted(int(l.split()[1]) for l in lines if l.startswith("delivered")) == list(range(1, 16, 2))
    assert all(l.endswith(" QS_SUCCESS") for l in lines if l.startswith("delivered"))
    assert took < 60


def test_exit_with_a_hung_device_and_a_waiting_thread_does_not_hang(emulator, add256):
    hang = emulator.root / "sys/class/accel/accel0/qaic-emu/fault/nsp_hang"
    hang.write_text("1")
    try:
        result, took = run_child(add256, """
        import threading
        properties = qaicrt.InferenceSetProperties()
        properties.programProperties.dataPathTimeoutMs = 300
        properties.programProperties.submitNumRetries = 0
        inference_set = qaicrt.InferenceSet(context, qpc, 0, 2, 1, properties)
        for k in range(2):
            status, handle = inference_set.getAvailable()
            handle.setBuffers([a, b, np.zeros((1, 256), np.float32)])
            inference_set.submit(handle, lambda h, d: say("completed", h.getStatus().name))
        # A daemon thread blocked in the runtime when the interpreter goes away.
        threading.Thread(target=lambda: inference_set.getAvailable(2_000_000), daemon=True).start()
        say("exiting")
        """)
    finally:
        hang.write_text("0")
    assert result.returncode == 0, result.stderr
    assert "exiting" in result.stdout and result.stdout.count("completed QS_TIMEDOUT") == 2, result.stdout
    assert took < 60


def _thread_names():
    names = []
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as comm:
                names.append(comm.read().strip())
        except FileNotFoundError:
            pass  # a thread that just ended
    return names


def test_a_session_asking_for_more_activations_than_the_card_has_is_refused_without_threads(emulator, add256):
    import qaic
    gc.collect()  # sets of earlier tests
    before = _thread_names()
    for count in (17, 1000, 2**31 - 1):
        with pytest.raises(qaicrt.Error) as raised:
            qaic.Session(str(add256), num_activations=count)
        assert raised.value.status == qaicrt.QS_NO_RESOURCES
        assert f"{count} activations of " in raised.value.message and " free" in raised.value.message
    after = _thread_names()
    assert after.count("qaic-pipeline") == before.count("qaic-pipeline")
    assert after.count("qaic-complete") == before.count("qaic-complete")
    # The card kept nothing for the refused sessions.
    session = qaic.Session(str(add256), num_activations=16, set_size=1)
    a, b = np.arange(256, dtype=np.float32).reshape(1, 256), np.ones((1, 256), np.float32)
    assert np.array_equal(session.run({"a": a, "b": b})["c"], a + 1)
