"""Read scopes (colors_shm.read_scope()): proxies of mapped classes read inside one take no root,
one per object; those still referenced when the scope ends are rooted then (promote on escape),
those stored somewhere shared are rooted at the store; and borrowed reads stay correct while a
writer replaces what they read and the collector runs."""

from __future__ import annotations

import gc
import threading
import time

import pytest

import colors_shm as cs
from employees import Node


def tree(depth: int, first: list[int]) -> Node | None:
    """A private full tree, values numbered in preorder from first[0]."""
    if depth == 0:
        return None
    n = Node(first[0])
    first[0] += 1
    n.left = tree(depth - 1, first)
    n.right = tree(depth - 1, first)
    return n


def shared_tree(depth: int) -> Node:
    """A shared copy of tree(depth): only its root has a proxy."""
    return cs.copy_to(tree(depth, [0]))


def total(n: Node | None) -> int:
    return 0 if n is None else n.value + total(n.left) + total(n.right)


def test_proxies_read_in_a_scope_are_borrowed_one_per_object():
    root = shared_tree(5)  # 31 nodes
    assert not cs.in_read_scope()
    with cs.read_scope():
        assert cs.in_read_scope()
        assert cs._ext._borrowed_count() == 0
        left = root.left
        assert left is root.left, "one proxy per object within a scope"
        assert cs._ext._borrowed_count() == 1, "a proxy read in the scope has no root of its own"
        assert total(root) == 30 * 31 // 2
        del left
        gc.collect()
        assert cs._ext._borrowed_count() == 0, "proxies that died in the scope left it"
    assert not cs.in_read_scope()
    assert total(root) == 30 * 31 // 2


def test_a_proxy_that_escapes_the_scope_is_rooted_when_it_ends():
    root = shared_tree(4)
    kept = []
    with cs.read_scope():
        kept.append(root.left.left)  # escapes in a private list
        kept.append(root.right)
        assert cs._ext._borrowed_count() >= 2
    root.left = None  # only the escaped proxy holds that subtree now
    root.right = None
    cs.collect()
    cs.collect()
    assert total(kept[0]) == 2 + 3 + 4, "the escaped proxy's object survived two collections"
    assert kept[1].value == 8
    kept[0].value = 42
    assert kept[0].value == 42


def test_a_borrowed_proxy_stored_into_shared_memory_is_rooted_at_the_store():
    root = shared_tree(3)
    holder = cs.copy_to([])
    with cs.read_scope():
        right = root.right
        assert cs._ext._borrowed_count() == 1
        holder.append(right)  # its object goes into a shared list: rooted now
        assert cs._ext._borrowed_count() == 0
        root.left = right  # and into a field
    root.right = None
    cs.collect()
    cs.collect()
    assert holder[0] is right
    assert root.left is right
    assert right.value == 4


def test_list_elements_read_in_a_scope_are_borrowed():
    nodes = cs.copy_to([tree(2, [10 * i]) for i in range(20)] + [[1, 2], "text", 3])
    with cs.read_scope():
        items = list(nodes)
        assert cs._ext._borrowed_count() == 20, "user objects borrowed; other references rooted"
        assert [n.value for n in items[:20]] == [10 * i for i in range(20)]
        assert items[0] is nodes[0]
        assert items[20] == [1, 2] and items[21] == "text" and items[22] == 3
        del items
        gc.collect()
        assert cs._ext._borrowed_count() == 0


def test_scopes_nest_and_exclude_waits_for_the_collector():
    root = shared_tree(2)
    with cs.read_scope():
        with cs.read_scope():
            inner = root.left
        assert cs.in_read_scope(), "the outer scope is still open"
        assert cs._ext._borrowed_count() == 1, "nothing is promoted before the outermost scope ends"
        with pytest.raises(cs.InvalidArgumentError):
            cs.collect()
        with pytest.raises(cs.InvalidArgumentError):
            with cs.transaction():
                pass
    assert inner.value == 1
    with cs.transaction():
        with pytest.raises(cs.InvalidArgumentError):
            with cs.read_scope():
                pass
        assert not cs.in_read_scope()
    scope = cs.read_scope()
    with scope:
        pass
    with pytest.raises(cs.InvalidArgumentError):
        with scope:  # a ReadScope is entered once
            pass
    cs.collect()


def test_borrowed_reads_stay_correct_while_a_writer_replaces_trees_and_the_collector_runs():
    n = 24
    trees = cs.copy_to([tree(4, [0]) for _ in range(n)])
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer():
        try:
            k = 0
            while not stop.is_set():
                trees[k % n] = cs.copy_to(tree(4, [0]))
                k += 1
        except BaseException as e:  # noqa: BLE001 - reported by the test
            failures.append(e)

    def collector():
        try:
            while not stop.is_set():
                cs.collect()
                time.sleep(0.001)
        except BaseException as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=writer), threading.Thread(target=collector)]
    for t in threads:
        t.start()
    kept = []
    scopes = 0
    deadline = time.monotonic() + 2.0
    try:
        while time.monotonic() < deadline and not failures:
            with cs.read_scope():
                for t in trees:
                    assert total(t) == 14 * 15 // 2
                kept.append(trees[scopes % n])  # one escapes each scope
            scopes += 1
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures, failures
    assert scopes > 5
    cs.collect()
    cs.collect()
    for t in kept:
        assert total(t) == 14 * 15 // 2, "every escaped tree survived the trees the writer replaced"
