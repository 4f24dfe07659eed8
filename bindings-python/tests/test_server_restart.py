"""A Python client survives its server's kill -9 (colors-server/README.md, "Surviving the
server"): while no server runs it reads, writes and allocates; a successor adopts the heap, the
client's next call that needs the server takes its slot back by itself, and everything it wrote
before and during the gap is there, also for a new client of the successor."""

from __future__ import annotations

import os
import signal
import subprocess

from conftest import Server, run, spawn

CHILD = """
    import sys
    import colors_shm as cs

    cs.attach()
    people = cs.copy_to([{"name": f"p{i}", "tags": [i, i * 2]} for i in range(500)])
    cs.repository("restart").set(people)
    print("READY", flush=True)
    assert sys.stdin.readline().strip() == "killed"
    while cs.is_attached():
        pass
    # No server: reads, writes and allocation go on.
    assert people[10]["name"] == "p10"
    people[10]["name"] = "renamed while no server ran"
    for i in range(500, 800):
        people.append(cs.copy_to({"name": f"p{i}", "tags": [i, i * 2]}))
    print("GAP", flush=True)
    assert sys.stdin.readline().strip() == "restarted"
    again = cs.repository("restart").get()  # needs the server: reattaches to the successor
    assert cs.is_attached()
    assert len(again) == 800, len(again)
    assert again[10]["name"] == "renamed while no server ran"
    for i in (0, 499, 500, 799):
        assert again[i]["tags"][1] == i * 2, i
    cs.collect()
    print("OK", flush=True)
"""

READER = """
    import colors_shm as cs
    cs.attach()
    people = cs.repository("restart").get()
    assert len(people) == 800, len(people)
    assert people[10]["name"] == "renamed while no server ran"
    assert [people[i]["name"] for i in (0, 799)] == ["p0", "p799"]
    print("SEEN", flush=True)
"""


def test_a_python_client_survives_a_server_restart_with_its_objects():
    first = Server(heap="32M")
    successor = None
    try:
        p = spawn(CHILD, socket=first.socket, stdin=subprocess.PIPE)
        assert p.stdout.readline().strip() == "READY", p.stderr.read()
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
        p.stdin.write("killed\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "GAP", p.stderr.read()
        successor = Server(heap="32M", successor_of=first)
        p.stdin.write("restarted\n")
        p.stdin.flush()
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, f"stdout: {out}\nstderr: {err}"
        assert out.strip() == "OK"
        r = run(READER, socket=successor.socket)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "SEEN"
    finally:
        if successor:
            successor.stop()  # SIGTERM: removes the heap
        first.stop()
        heap = f"/dev/shm/colors-{os.geteuid()}/{first.name}.heap"
        if os.path.exists(heap):
            os.unlink(heap)
