"""The worker protocol: frames over real pipes, a worker served in-process and as a child process."""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

from tests.waits import HANG_GUARD_S
from workbench.run.pool import RequestFailed, WorkerProcess, signal_name
from workbench.run.protocol import Connection, ProtocolEOF, ProtocolError, read_message, write_message
from workbench.run.worker import serve


def _pipe():
    r, w = os.pipe()
    return os.fdopen(r, "rb"), os.fdopen(w, "wb")


def test_round_trip_over_a_pipe_pair():
    reader, writer = _pipe()
    arrays = {
        "x": np.linspace(-1, 1, 100_000, dtype=np.float32),  # larger than a pipe's buffer
        "idx": np.arange(7, dtype=np.uint64),
        "grid": np.arange(12, dtype=np.int32).reshape(3, 4),
        "empty": np.zeros(0, np.float64),
    }
    sender = threading.Thread(
        target=lambda: (write_message(writer, {"op": "upload", "n": 3}, arrays), writer.close())
    )
    sender.start()
    header, got = read_message(reader)
    sender.join()
    assert header == {"op": "upload", "n": 3}
    assert list(got) == list(arrays)
    for name, array in arrays.items():
        assert got[name].dtype == array.dtype and got[name].shape == array.shape
        np.testing.assert_array_equal(got[name], array)
    with pytest.raises(ProtocolEOF):
        read_message(reader)  # the writer closed between frames: a clean end


def test_nan_payloads_survive_bit_for_bit():
    reader, writer = _pipe()
    bits = np.array([0x7FCDEAD5, 0x7F800001, 0xFFFFFFFF], np.uint32)
    write_message(writer, {}, {"v": bits.view(np.float32)})
    writer.close()
    _, got = read_message(reader)
    np.testing.assert_array_equal(got["v"].view(np.uint32), bits)


def test_truncated_and_foreign_streams_are_protocol_errors():
    reader, writer = _pipe()
    write_message(writer, {"op": "launch"}, {"x": np.ones(16, np.float32)})
    writer.close()
    data = reader.read()
    r, w = _pipe()
    w.write(data[:-5])  # cut inside the payload
    w.close()
    with pytest.raises(ProtocolError, match="stream ended inside a frame"):
        read_message(r)
    r, w = _pipe()
    w.write(b"Traceback (most recent call last):\n")
    w.close()
    with pytest.raises(ProtocolError, match="not a workbench frame"):
        read_message(r)


def test_worker_serves_requests_in_process():
    to_worker_r, to_worker_w = _pipe()
    from_worker_r, from_worker_w = _pipe()
    thread = threading.Thread(target=serve, args=(to_worker_r, from_worker_w, "cpu"))
    thread.start()
    client = Connection(from_worker_r, to_worker_w)
    hello, _ = client.request({"op": "hello"})
    assert hello["runtime"] == "cpu" and hello["protocol"] == 1
    devices, _ = client.request({"op": "devices"})
    assert devices["available"] and devices["devices"][0]["spec"] == "cpu"
    reply, _ = client.request({"op": "frobnicate"})
    assert "unknown op 'frobnicate'" in reply["error"]
    reply, _ = client.request({"op": "launch", "count": 1})
    assert "no kernel is prepared" in reply["error"] and reply["fatal"] is True
    spec = {
        "runtime": "cpu", "backend": "cpu", "device_index": 0, "kernel": "k",
        "artifact": {"kind": "cdylib", "path": "/nonexistent/libk.so", "entry": "k"},
        "args": [], "threads": [1, 1, 1], "grid": [1, 1, 1],
    }  # fmt: skip
    reply, _ = client.request({"op": "prepare", "spec": spec, "device_index": 0})
    assert "/nonexistent/libk.so does not exist" in reply["error"]
    assert reply["fatal"] is False
    bye, _ = client.request({"op": "shutdown"})
    assert bye == {"bye": True}
    thread.join(timeout=HANG_GUARD_S)
    assert not thread.is_alive()


def test_worker_stdout_carries_only_frames():
    # Chatter on stdout from Python and from native code (fd 1) must not corrupt the frames.
    code = (
        "import os, sys\n"
        "from workbench.run import worker\n"
        "reader, writer = worker._private_streams()\n"
        "print('python chatter')\n"
        "os.write(1, b'native chatter\\n')\n"
        "sys.exit(worker.serve(reader, writer, 'cpu'))\n"
    )
    worker = WorkerProcess("cpu", command=[sys.executable, "-c", code])
    try:
        worker.start()
        assert worker.info["runtime"] == "cpu"
        with pytest.raises(RequestFailed, match="unknown op"):
            worker.request({"op": "nope"}, timeout_s=HANG_GUARD_S)
        assert worker.alive
        reply, _ = worker.request({"op": "devices"}, timeout_s=HANG_GUARD_S)
        assert reply["available"]
        assert "python chatter" in worker.stderr_tail()
        assert "native chatter" in worker.stderr_tail()
    finally:
        worker.shutdown()
    assert not worker.alive


def test_signal_names_are_readable():
    assert signal_name(-11).startswith("SIGSEGV")
    assert signal_name(-6).startswith("SIGABRT")
    assert signal_name(3) == "exit code 3"
