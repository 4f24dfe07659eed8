"""sync.cpp: repositories, channels and monitors between processes; GIL release; Ctrl-C."""

import signal
import subprocess
import threading
import time

import pytest

import colors_shm as cs
from conftest import run, spawn, unique


def test_repository_get_set_between_processes():
    name = unique("repo")
    cs.repository(name).set(cs.copy_to({"greeting": "hello", "n": [1, 2, 3]}))
    r = run(f"""
        import colors_shm as cs
        d = cs.repository({name!r}).get()
        print(d["greeting"], sum(d["n"]))
        d["n"].append(4)
        cs.repository({name!r} + "-back").set(cs.copy_to(["from child"]))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["hello", "6"]
    assert cs.repository(name).get()["n"] == [1, 2, 3, 4]
    assert cs.repository(name + "-back").get() == ["from child"]
    assert cs.repository(unique("empty")).get() is None
    assert repr(cs.repository("x")) == "<colors_shm.Repository 'x'>"


def test_cyclic_graph_built_here_walked_there():
    name = unique("graph")
    nodes = [{"id": i} for i in range(50)]
    for i, n in enumerate(nodes):
        n["next"] = nodes[(i + 1) % 50]
        n["self"] = n
    cs.repository(name).set(cs.copy_to(nodes[0]))
    r = run(f"""
        import colors_shm as cs
        head = cs.repository({name!r}).get()
        n, seen = head, []
        while True:
            assert n["self"] is n
            seen.append(n["id"])
            n = n["next"]
            if n is head:
                break
        print(len(seen), sum(seen))
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["50", str(sum(range(50)))]


def test_channel_producer_consumer_with_back_pressure():
    name = unique("chan")
    ch = cs.channel(name, capacity=4)
    assert ch.capacity == 4
    for i in range(4):
        assert ch.try_send(i)
    assert not ch.try_send(99)  # full
    with pytest.raises(TimeoutError):
        ch.send(99, timeout=0.1)
    for i in range(4):
        assert ch.receive(timeout=1) == i
    assert ch.try_receive("empty") == "empty"
    with pytest.raises(TimeoutError):
        ch.receive(timeout=0.05)

    consumer = spawn(f"""
        import colors_shm as cs
        ch = cs.channel({name!r}, 4)
        total = 0
        while True:
            item = ch.receive(timeout=20)
            if item == "end":
                break
            total += item[0] + len(item[1])
        print(total)
    """)
    start = time.monotonic()
    for i in range(200):
        ch.send(cs.copy_to([i, "x" * (i % 7)]), timeout=20)
    with pytest.raises(cs.InvalidArgumentError, match="null"):
        ch.send(None)
    ch.send("end", timeout=20)
    out, err = consumer.communicate(timeout=30)
    assert consumer.returncode == 0, err
    assert int(out) == sum(range(200)) + sum(i % 7 for i in range(200))
    assert time.monotonic() - start < 20


HANDOFF_CHILD = """
    import colors_shm as cs
    box = cs.repository({name!r}).get()
    with cs.synchronized(box):
        while box["request"] is None:
            if not cs.wait(box, 10):
                raise SystemExit("timed out waiting for the request")
        box["reply"] = box["request"].upper()
        cs.notify_all(box)
    print("child done")
"""


def test_synchronized_wait_notify_all_handoff():
    name = unique("handoff")
    box = cs.copy_to({"request": None, "reply": None})
    cs.repository(name).set(box)
    child = spawn(HANDOFF_CHILD.format(name=name))
    time.sleep(0.3)  # let the child reach wait() (not needed for correctness)
    with cs.synchronized(box):
        box["request"] = "ping"
        cs.notify_all(box)
        while box["reply"] is None:
            assert cs.wait(box, 10), "no reply"
    assert box["reply"] == "PING"
    out, err = child.communicate(timeout=20)
    assert child.returncode == 0, err
    assert out.strip() == "child done"


def test_synchronized_on_repository_and_reentrancy():
    repo = cs.repository(unique("monitor-repo"))
    with cs.synchronized(repo):
        with cs.synchronized(repo):
            assert cs._colors_shm._monitor_held(repo)
            assert cs.wait(repo, 0.01) is False
            cs.notify_all(repo)
        assert cs._colors_shm._monitor_held(repo)
    assert not cs._colors_shm._monitor_held(repo)
    obj = cs.copy_to([])
    with pytest.raises(cs.NotOwnerError, match="does not hold"):
        cs.notify_all(obj)
    with pytest.raises(cs.NotOwnerError):
        cs.wait(obj, 0.01)
    with pytest.raises(cs.TypeMismatchError, match="copy_to"):
        with cs.synchronized([1]):
            pass


def test_monitor_excludes_other_process_and_releases_gil():
    name = unique("mutex")
    box = cs.copy_to({"n": 0})
    cs.repository(name).set(box)
    child = spawn(f"""
        import sys, time, colors_shm as cs
        box = cs.repository({name!r}).get()
        with cs.synchronized(box):
            print("held", flush=True)
            time.sleep(1.0)
            box["n"] = 1
    """)
    assert child.stdout.readline().strip() == "held"
    ticks = []
    t = threading.Thread(target=lambda: [ticks.append(time.sleep(0.05)) for _ in range(10)])
    t.start()
    with cs.synchronized(box):  # blocks ~1 s with the GIL released: the thread keeps ticking
        assert box["n"] == 1
    t.join()
    assert len(ticks) == 10
    child.communicate(timeout=20)


def test_owner_died_while_holding_monitor():
    name = unique("died")
    box = cs.copy_to({"state": "ok"})
    cs.repository(name).set(box)
    child = spawn(f"""
        import time, colors_shm as cs
        box = cs.repository({name!r}).get()
        with cs.synchronized(box):
            box["state"] = "half-updated"
            print("held", flush=True)
            time.sleep(60)
    """)
    assert child.stdout.readline().strip() == "held"
    child.kill()
    child.wait()
    with pytest.raises(cs.OwnerDiedError):
        with cs.synchronized(box):
            pass
    with cs.synchronized(box):  # the next enter succeeds
        assert box["state"] == "half-updated"


@pytest.mark.parametrize("blocking", ["receive", "wait", "enter"])
def test_ctrl_c_interrupts_blocking_call(blocking):
    name = unique("ctrlc")
    box = cs.copy_to([0])
    cs.repository(name).set(box)
    holder = None
    if blocking == "enter":
        holder = spawn(f"""
            import time, colors_shm as cs
            box = cs.repository({name!r}).get()
            with cs.synchronized(box):
                print("held", flush=True)
                time.sleep(30)
        """)
        assert holder.stdout.readline().strip() == "held"
    call = {
        "receive": f"cs.channel({name!r}).receive()",
        "wait": "cs.synchronized(box).__enter__(); cs.wait(box)",
        "enter": "cs.synchronized(box).__enter__()",
    }[blocking]
    # The child gets SIGINT's default disposition whatever this process inherited: a suite started
    # in the background by a non-interactive shell runs with SIGINT ignored, and Python keeps an
    # inherited SIG_IGN (no KeyboardInterrupt then).
    child = spawn(f"""
        import sys, time, colors_shm as cs
        box = cs.repository({name!r}).get()
        print("blocking", flush=True)
        try:
            {call}
        except KeyboardInterrupt:
            print("KeyboardInterrupt", flush=True)
            sys.exit(3)
        print("returned?!")
    """, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert child.stdout.readline().strip() == "blocking"
        time.sleep(0.3)
        t0 = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=10)
        elapsed = time.monotonic() - t0
        assert child.returncode == 3, err
        assert out.strip() == "KeyboardInterrupt"
        assert elapsed < 2.0
    finally:
        if holder is not None:
            holder.kill()
            holder.wait()
        if child.poll() is None:
            child.kill()
            child.wait()


def test_timeouts_validated():
    ch = cs.channel(unique("t"))
    with pytest.raises(ValueError):
        ch.receive(timeout=-1)
    with pytest.raises(cs.InvalidArgumentError):
        cs.channel(unique("zero"), capacity=0)


def test_channel_capacity_over_the_maximum_names_it():
    assert cs.CHANNEL_MAX_CAPACITY == 65536
    for bad in (cs.CHANNEL_MAX_CAPACITY + 1, 1 << 32, 1 << 80, -5):
        with pytest.raises(cs.InvalidArgumentError, match=f"between 1 and {cs.CHANNEL_MAX_CAPACITY}"):
            cs.channel(unique("huge"), capacity=bad)
    assert cs.channel(unique("max"), capacity=cs.CHANNEL_MAX_CAPACITY).capacity == cs.CHANNEL_MAX_CAPACITY


def test_delete_repository_makes_handles_stale_and_recreates_empty():
    name = unique("delrepo")
    assert cs.delete_repository(name) is False
    r = cs.repository(name)
    r.set(cs.copy_to([1, 2, 3]))
    assert cs.delete_repository(name) is True
    assert cs.delete_repository(name) is False
    with pytest.raises(cs.SharedKeyError, match=f"repository '{name}' was deleted"):
        r.get()
    with pytest.raises(cs.SharedKeyError, match="was deleted"):
        r.set(1)
    again = cs.repository(name)
    assert again.get() is None
    again.set("new")
    with pytest.raises(cs.SharedKeyError):
        r.get()  # a handle never reaches a later repository of the same name
    assert again.get() == "new"
    assert cs.repository(name).get() == "new"


def test_delete_channel_stale_handle_and_reuse_in_a_loop():
    name = unique("delchan")
    ch = cs.channel(name, 4)
    ch.send(cs.copy_to({"dropped": True}))
    assert cs.delete_channel(name) is True
    assert cs.delete_channel(name) is False
    for op in (lambda: ch.try_send(1), lambda: ch.try_receive(), lambda: ch.capacity):
        with pytest.raises(cs.SharedKeyError, match=f"channel '{name}' was deleted"):
            op()
    # 200 channels of the maximal capacity (512 KiB of slots each: 100 MiB) through a classes space
    # of 64 MiB: only possible because deleted channels' memory is reused.
    for i in range(200):
        c = cs.channel(f"{name}.{i % 10}", cs.CHANNEL_MAX_CAPACITY)
        c.send(i)
        assert c.receive(timeout=1) == i
        assert cs.delete_channel(f"{name}.{i % 10}")
    assert cs.channel(name, 2).try_receive("empty") == "empty"


def test_delete_channel_wakes_receiver_in_another_process():
    name = unique("delwake")
    cs.channel(name, 2)
    child = spawn(f"""
        import sys, colors_shm as cs
        ch = cs.channel({name!r}, 2)
        print("ready", flush=True)
        try:
            ch.receive(timeout=30)
        except cs.SharedKeyError as e:
            print("deleted" if "was deleted" in str(e) else "other: " + str(e), flush=True)
            sys.exit(0)
        print("received", flush=True)
    """)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # let it block; if not yet blocked, its receive fails at once instead
        start = time.monotonic()
        assert cs.delete_channel(name)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 0, err
        assert out.strip() == "deleted"
        assert time.monotonic() - start < 20
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
