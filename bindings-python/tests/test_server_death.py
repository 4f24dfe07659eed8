"""A client notices its server's death (colors-server/README.md, "Clients notice the server's
death"): is_attached() turns false within 100 ms, what needs the server raises ServerGoneError
once no successor took the client back within COLORS_ATTACH_TIMEOUT_MS, and what the client holds
stays readable and writable. test_server_restart.py has the successor."""

from __future__ import annotations

import signal
import subprocess

from conftest import Server, spawn

CHILD = """
    import os, sys, time
    import colors_shm as cs

    # What needs the server waits this long for a successor; none comes here.
    os.environ["COLORS_ATTACH_TIMEOUT_MS"] = "300"

    cs.attach()
    held = cs.copy_to([1, 2, 3])
    repo = cs.repository("death")
    repo.set(held)
    ch = cs.channel("death", 4)
    print("READY", flush=True)
    sys.stdin.readline()  # the parent killed the server
    t0 = time.monotonic()
    while cs.is_attached() and time.monotonic() - t0 < 5:
        time.sleep(0.001)
    noticed = time.monotonic() - t0
    assert not cs.is_attached(), "is_attached() still true 5 s after the server died"
    assert noticed <= 0.1, f"noticed after {noticed:.3f} s"

    assert list(held) == [1, 2, 3]
    held[0] = 7
    assert held[0] == 7

    def gone(fn):
        try:
            fn()
        except cs.ServerGoneError:
            return True
        return False

    assert gone(lambda: repo.set(held)), "repository.set after the server died"
    assert gone(lambda: cs.repository("other")), "repository() after the server died"
    assert gone(lambda: ch.send(1, timeout=0)), "channel.send after the server died"
    assert gone(lambda: ch.try_receive()), "channel.try_receive after the server died"

    def fill():
        for i in range(200_000):
            held.append("x" * 200)
    # Allocation goes on while the 16 MiB heap has room; a full heap needs the collector.
    assert gone(fill), "a full heap did not raise ServerGoneError without a server"
    print("OK", flush=True)
"""


def test_a_client_notices_its_servers_death_and_what_needs_it_fails():
    srv = Server(heap="16M")
    try:
        p = spawn(CHILD, socket=srv.socket, stdin=subprocess.PIPE)
        assert p.stdout.readline().strip() == "READY", p.stderr.read()
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait(timeout=10)
        p.stdin.write("killed\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, f"stdout: {out}\nstderr: {err}"
        assert out.strip() == "OK"
    finally:
        srv.stop()
