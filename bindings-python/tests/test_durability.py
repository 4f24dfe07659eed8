"""Durability from Python (colors-server/README.md, "Durability"): checkpoint(), --durability full
across a simulated reboot, and DurabilityError on a full disk. Each case runs its own server with a
data directory and its clients in child processes (the session's attachment stays as it is)."""

from __future__ import annotations

import os
import pathlib
import signal
import tempfile
import time

import pytest

import colors_shm as cs
from conftest import Server, spawn


def heap_file(srv: Server) -> pathlib.Path:
    return pathlib.Path(f"/dev/shm/colors-{os.geteuid()}") / (srv.name + ".heap")


def finish(p, timeout: float = 60) -> str:
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, f"child failed ({p.returncode}):\n{out}\n{err}"
    return out


def test_checkpoint_needs_a_data_dir():
    with pytest.raises(cs.SharedMemoryError, match="--data-dir"):
        cs.checkpoint()


def test_checkpoint_is_refused_inside_a_transaction():
    with cs.transaction():
        with pytest.raises(cs.InvalidArgumentError):
            cs.checkpoint()


def test_durability_error_is_a_shared_memory_error():
    assert issubclass(cs.DurabilityError, cs.SharedMemoryError)
    assert "DurabilityError" in cs.__all__


def test_full_durability_keeps_every_acknowledged_commit_through_a_reboot():
    data = tempfile.mkdtemp(prefix="colors-py-data-")
    flags = ("--data-dir", data, "--durability", "full", "--checkpoint-interval", "0")
    srv = Server(extra=flags)
    succ = None
    writer = None
    try:
        writer = spawn(
            """
            import colors_shm as cs
            counter = cs.copy_to([0])
            cs.repository("dur.counter").set(counter)
            n = 0
            while True:
                def bump():
                    counter[0] = counter[0] + 1
                    return counter[0]
                n = cs.atomically(bump)
                print(n, flush=True)  # acknowledged: durable
            """,
            socket=srv.socket,
        )
        acked = 0
        deadline = time.monotonic() + 30
        while acked < 100 and time.monotonic() < deadline:
            line = writer.stdout.readline()
            if not line:
                break
            acked = int(line)
        assert acked >= 100, writer.stderr.read()
        # The reboot: the server and its client killed, the heap file gone.
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
        writer.kill()
        # Through the file object: readline() above may have buffered acknowledgements it did not
        # return yet, which communicate() (reading the descriptors) would skip.
        rest = writer.stdout.read()
        writer.wait()
        for line in rest.split():
            acked = int(line)
        heap_file(srv).unlink()
        succ = Server(extra=flags, successor_of=srv)
        out = finish(spawn("import colors_shm as cs; print(cs.repository('dur.counter').get()[0])", socket=succ.socket))
        restored = int(out)
        assert acked <= restored <= acked + 1
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
        for s in (succ, srv):
            if s is not None:
                s.stop(signal.SIGKILL)
        heap_file(srv).unlink(missing_ok=True)


def test_a_full_disk_raises_durability_error_and_keeps_the_commit_visible():
    data = tempfile.mkdtemp(prefix="colors-py-data-")
    switch = pathlib.Path(data).with_suffix(".full")
    os.environ["COLORS_DATA_DIR_FAULT_FULL"] = str(switch)
    try:
        srv = Server(extra=("--data-dir", data, "--durability", "full", "--checkpoint-interval", "0"))
    finally:
        del os.environ["COLORS_DATA_DIR_FAULT_FULL"]
    try:
        out = finish(
            spawn(
                f"""
                import pathlib, colors_shm as cs
                box = cs.copy_to([0])
                cs.repository("dur.box").set(box)
                def put(v):
                    box[0] = v
                cs.atomically(put, 1)                     # durable: the first checkpoint
                pathlib.Path({str(switch)!r}).write_text("full")
                try:
                    cs.atomically(put, 2)
                    print("claimed durable")
                except cs.DurabilityError as e:
                    print("refused", "No space left on device" in str(e), box[0])
                pathlib.Path({str(switch)!r}).unlink()
                cs.atomically(put, 3)                     # room again: durable
                print("after", box[0])
                """,
                socket=srv.socket,
            )
        )
        assert out.split("\n")[:2] == ["refused True 2", "after 3"]
    finally:
        srv.stop(signal.SIGKILL)
        heap_file(srv).unlink(missing_ok=True)
