"""Several Python threads using the heap at once (each thread allocates from its own TLAB and
keeps its own root-slot cache) while the collector runs, plus a second process doing the same."""

from __future__ import annotations

import threading

import colors_shm as cs
from conftest import spawn, unique
from employees import Employee, Node

THREADS = 4
ROUNDS = 1500


def test_threads_allocate_share_and_collect_concurrently():
    results = cs.allocate(list)
    board = cs.copy_to({"done": 0})
    errors: list[BaseException] = []
    stop = threading.Event()

    def mutator(t: int) -> None:
        try:
            mine = []
            for i in range(ROUNDS):
                e = cs.allocate(Employee, f"t{t}-{i}", float(i))
                e.manager = cs.allocate(Employee, "boss", 1.0)
                n = cs.copy_to(Node([t, i, {"k": str(i)}]))
                mine.append((e, n))
                if i % 50 == 0:
                    mine = mine[-5:]  # drop most: garbage for the collector
                with cs.synchronized(results):
                    results.append(cs.copy_to((t, i)))
            with cs.synchronized(board):
                board["done"] += 1
                cs.notify_all(board)
            for e, n in mine:  # what we kept is intact
                assert e.manager.name == "boss" and n.value[2]["k"] == str(n.value[1])
        except BaseException as ex:  # reported by the main thread
            errors.append(ex)

    cycles = [0]

    def collector() -> None:
        while not stop.is_set():
            cs.collect(timeout=30)
            cycles[0] += 1

    threads = [threading.Thread(target=mutator, args=(t,)) for t in range(THREADS)]
    gc_thread = threading.Thread(target=collector)
    gc_thread.start()
    for t in threads:
        t.start()
    with cs.synchronized(board):
        while board["done"] < THREADS:
            cs.wait(board, timeout=60)
    for t in threads:
        t.join()
    stop.set()
    gc_thread.join()
    assert not errors, errors
    assert len(results) == THREADS * ROUNDS
    assert sorted(tuple(x) for x in results) == [(t, i) for t in range(THREADS) for i in range(ROUNDS)]
    assert cycles[0] >= 1  # the collector ran while the mutators did


def test_process_and_threads_share_one_counter():
    counter = cs.copy_to({"n": 0})
    repo = unique("counter")
    cs.repository(repo).set(counter)
    child = spawn(f"""
        import threading, colors_shm as cs
        c = cs.repository({repo!r}).get()
        def work():
            for _ in range(500):
                with cs.synchronized(c):
                    c["n"] += 1
        ts = [threading.Thread(target=work) for _ in range(2)]
        [t.start() for t in ts]; [t.join() for t in ts]
    """)

    def work():
        for _ in range(500):
            with cs.synchronized(counter):
                counter["n"] += 1

    ts = [threading.Thread(target=work) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert counter["n"] == 2000
