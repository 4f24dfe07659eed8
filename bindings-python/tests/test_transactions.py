"""Transactions (colors_shm.transaction, atomically, in_transaction): commit and rollback of every
kind of change, flat nesting, retries, conflicts and deadlocks between threads and processes,
misuse, what is refused inside, a process killed inside one, and collector cycles during one.

Timing: nothing here depends on tight timings. Waits for another process use generous deadlines;
where a conflict must come from a real wait rather than a timeout, the child sets
COLORS_TX_CONFLICT_WAIT_MS far above the test's own bound."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sortedcontainers import SortedDict

import colors_shm as cs
from colors_shm import (
    InvalidArgumentError,
    SharedMemoryError,
    TransactionAbortedError,
    TransactionConflictError,
)
from conftest import child_env, unique

TESTS = str(pathlib.Path(__file__).resolve().parent)
sys.path.insert(0, TESTS)
from accounts import Account  # noqa: E402

PRELUDE = f"import sys, time; sys.path.insert(0, {TESTS!r})\nimport colors_shm as cs\nfrom accounts import Account\n"


def account(balance=0, **fields) -> Account:
    a = cs.allocate(Account)
    a.balance = balance
    for k, v in fields.items():
        setattr(a, k, v)
    return a


class Child:
    """A child Python process (PRELUDE + code) whose stdout lines are read one at a time."""

    def __init__(self, code: str, env: dict | None = None):
        e = child_env()
        e.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PRELUDE + textwrap.dedent(code)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)

    def expect(self, line: str) -> None:
        got = self.proc.stdout.readline().strip()
        if got != line:
            self.proc.kill()
            raise AssertionError(f"child printed {got!r}, expected {line!r}\nstderr: {self.proc.stderr.read()}")

    def finish(self, timeout: float = 60) -> str:
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"child timed out\nstdout: {out}\nstderr: {err}")
        assert self.proc.returncode == 0, f"child exited {self.proc.returncode}\nstdout: {out}\nstderr: {err}"
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


def wait_until(cond, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


# ---- the API ----------------------------------------------------------------------------------


def test_errors_are_shared_memory_errors():
    assert issubclass(TransactionConflictError, SharedMemoryError)
    assert issubclass(TransactionAbortedError, SharedMemoryError)
    assert cs.TransactionConflictError is TransactionConflictError
    assert "TransactionConflictError" in cs.__all__ and "atomically" in cs.__all__


def test_commit_publishes_every_field_kind():
    other = account(7)
    a = account(1, name="old", ratio=0.5, flag=False, data=None)
    assert not cs.in_transaction()
    with cs.transaction() as tx:
        assert cs.in_transaction() and tx.active
        a.balance = 2
        a.name = "new name, longer than a few words " * 3
        a.ratio = 1e300          # boxed (outside the immediate float range)
        a.flag = True
        a.data = 2**62           # a boxed int
        a.friend = other
        # reads inside see the transaction's own writes
        assert (a.balance, a.ratio, a.flag, a.data) == (2, 1e300, True, 2**62)
        assert a.name.startswith("new name") and a.friend is other
    assert not tx.active and not cs.in_transaction()
    assert (a.balance, a.ratio, a.flag, a.data) == (2, 1e300, True, 2**62)
    assert a.name.startswith("new name") and a.friend is other


def test_exception_rolls_back_every_field_kind_and_propagates():
    other = account(7)
    a = account(1, name="old", ratio=0.25, flag=True, data="d")
    with pytest.raises(ZeroDivisionError):
        with cs.transaction():
            a.balance = 2
            a.name = "new"
            a.ratio = 1e-300
            a.flag = False
            a.data = b"bytes"
            a.friend = other
            a.balance += 10
            1 / 0
    assert (a.balance, a.name, a.ratio, a.flag, a.data, a.friend) == (1, "old", 0.25, True, "d", None)
    assert not cs.in_transaction()


def test_explicit_commit_and_rollback_end_it_early():
    a = account(1)
    with cs.transaction() as tx:
        a.balance = 2
        tx.rollback()
        assert not cs.in_transaction() and not tx.active
        a.balance += 100  # outside the transaction now
    assert a.balance == 101
    with cs.transaction() as tx:
        a.balance = 3
        tx.commit()
        assert not cs.in_transaction()
    assert a.balance == 3


def test_reads_inside_a_transaction_give_the_same_values_and_proxies():
    friend = account(3)
    lst = cs.copy_to([1, "two", 3.5])
    a = account(5, name="é" * 40, ratio=float("inf"), flag=True, data=lst, friend=friend)
    outside = (a.balance, a.name, a.ratio, a.flag, a.data, a.friend)
    with cs.transaction():
        inside = (a.balance, a.name, a.ratio, a.flag, a.data, a.friend)
        assert inside[4] is lst and inside[5] is friend  # the live proxies, not new ones
        assert list(a.data) == [1, "two", 3.5]
        assert a.friend.balance == 3
    assert inside == outside
    # a field read inside that makes a new proxy
    holder = account(0, friend=account(42))
    with cs.transaction():
        f = holder.friend
        assert isinstance(f, Account) and f.balance == 42
    assert holder.friend is f


def test_generic_object_fields_in_a_transaction():
    from colors_shm._classes import KINDS

    # a class no Python class maps to: a generic SharedObject proxy
    obj = cs._colors_shm._new_object(unique("txgeneric") + ".Thing", [("v", KINDS["integer"], "")])
    assert type(obj) is cs.SharedObject
    obj.v = 1
    with pytest.raises(RuntimeError):
        with cs.transaction():
            obj.v = 5
            assert obj.v == 5
            raise RuntimeError
    assert obj.v == 1
    with cs.transaction():
        obj.v = 6
    assert obj.v == 6


def test_repository_set_is_rolled_back_and_committed():
    repo = cs.repository(unique("tx-repo"))
    first = cs.copy_to([1])
    repo.set(first)
    with pytest.raises(KeyError):
        with cs.transaction():
            repo.set(cs.copy_to([2]))
            assert list(repo.get()) == [2]
            raise KeyError("x")
    assert repo.get() is first
    with cs.transaction():
        repo.set(cs.copy_to({"k": 3}))
    assert dict(repo.get()) == {"k": 3}


def test_allocations_inside_a_transaction():
    a = account(0, data=None)
    repo = cs.repository(unique("tx-alloc"))
    with cs.transaction() as tx:
        made = cs.copy_to({"list": [1, 2, 3], "acct": Account()})
        b = cs.allocate(Account)
        b.balance = 9
        private = Account()
        private.balance = 5
        u = cs.copy_to(private)
        assert u.balance == 5
        a.data = made
        a.friend = b
        repo.set(b)
        tx.rollback()
    assert a.data is None and a.friend is None and repo.get() is None
    # every write is undone, also those that filled the new objects; they stay usable
    assert len(made) == 0 and b.balance is None and u.balance is None
    made["x"] = 1
    b.balance = 2
    assert dict(made) == {"x": 1} and b.balance == 2
    with cs.transaction():
        made = cs.copy_to({"list": [4], "n": 1})
        a.data = made
        repo.set(made)
    assert dict(a.data)["n"] == 1 and repo.get() is made and list(made["list"]) == [4]


# ---- containers: random operation sequences ---------------------------------------------------

values = st.one_of(st.integers(-50, 50), st.text(max_size=4), st.none(), st.booleans())
positions = st.integers(-6, 8)

list_ops = st.one_of(
    st.tuples(st.just("append"), values),
    st.tuples(st.just("insert"), positions, values),
    st.tuples(st.just("pop"), positions),
    st.tuples(st.just("set"), positions, values),
    st.tuples(st.just("del"), positions),
    st.tuples(st.just("extend"), st.lists(values, max_size=3)),
    st.tuples(st.just("slice"), positions, positions, st.lists(values, max_size=3)),
    st.tuples(st.just("remove"), values),
    st.tuples(st.just("reverse")),
    st.tuples(st.just("clear")),
)


def apply_list(lst, op):
    kind = op[0]
    if kind == "append":
        lst.append(op[1])
    elif kind == "insert":
        lst.insert(op[1], op[2])
    elif kind == "pop":
        return lst.pop(op[1])
    elif kind == "set":
        lst[op[1]] = op[2]
    elif kind == "del":
        del lst[op[1]]
    elif kind == "extend":
        lst.extend(op[1])
    elif kind == "slice":
        lst[op[1]:op[2]] = op[3]
    elif kind == "remove":
        lst.remove(op[1])
    elif kind == "reverse":
        lst.reverse()
    elif kind == "clear":
        lst.clear()
    return None


def outcome(fn, *args):
    """fn's result or the builtin class of the exception it raised, for comparing shared and private."""
    try:
        return ("ok", fn(*args))
    except (IndexError, KeyError, ValueError, TypeError) as e:
        for base in (IndexError, KeyError, ValueError, TypeError):
            if isinstance(e, base):
                return ("error", base)
        raise


def run_in_transaction(shared, model, ops, apply, commit: bool):
    """Applies ops to the shared container inside a transaction and to the private model; checks
    every result and the contents as seen inside; then commits or rolls back."""
    with cs.transaction() as tx:
        for op in ops:
            assert outcome(apply, shared, op) == outcome(apply, model, op), op
        inside = snapshot(shared)
        assert inside == snapshot(model)
        if not commit:
            tx.rollback()
    return inside


def snapshot(c):
    if isinstance(c, (list, cs.SharedList)):
        return list(c)
    if isinstance(c, (set, cs.SharedSet)):
        return set(c)
    if isinstance(c, (SortedDict, cs.SharedSortedDict)):
        return list(c.items())
    return dict(c)


@settings(max_examples=40, deadline=None)
@given(initial=st.lists(values, max_size=6), ops=st.lists(list_ops, max_size=12), commit=st.booleans())
def test_list_operations_commit_or_roll_back(initial, ops, commit):
    shared = cs.copy_to(initial)
    model = list(initial)
    run_in_transaction(shared, model, ops, apply_list, commit)
    assert list(shared) == (model if commit else initial)


keys = st.one_of(st.integers(-5, 5), st.sampled_from(["a", "b", "c", "d"]))
dict_ops = st.one_of(
    st.tuples(st.just("set"), keys, values),
    st.tuples(st.just("del"), keys),
    st.tuples(st.just("pop"), keys),
    st.tuples(st.just("get"), keys),
    st.tuples(st.just("setdefault"), keys, values),
    st.tuples(st.just("update"), st.dictionaries(keys, values, max_size=3)),
    st.tuples(st.just("popitem")),
    st.tuples(st.just("clear")),
)


def apply_dict(d, op):
    kind = op[0]
    if kind == "set":
        d[op[1]] = op[2]
    elif kind == "del":
        del d[op[1]]
    elif kind == "pop":
        return d.pop(op[1])
    elif kind == "get":
        return d.get(op[1], "missing")
    elif kind == "setdefault":
        return d.setdefault(op[1], op[2])
    elif kind == "update":
        d.update(op[1])
    elif kind == "popitem":
        # order differs (hash order vs insertion order): pop the smallest key by repr from both
        if not d:
            raise KeyError("popitem(): dictionary is empty")
        k = min(d.keys(), key=repr)
        return (k, d.pop(k))
    elif kind == "clear":
        d.clear()
    return None


@settings(max_examples=40, deadline=None)
@given(initial=st.dictionaries(keys, values, max_size=6), ops=st.lists(dict_ops, max_size=12), commit=st.booleans())
def test_dict_operations_commit_or_roll_back(initial, ops, commit):
    shared = cs.copy_to(initial)
    model = dict(initial)
    run_in_transaction(shared, model, ops, apply_dict, commit)
    assert dict(shared) == (model if commit else initial)


set_ops = st.one_of(
    st.tuples(st.just("add"), keys),
    st.tuples(st.just("discard"), keys),
    st.tuples(st.just("remove"), keys),
    st.tuples(st.just("contains"), keys),
    st.tuples(st.just("update"), st.sets(keys, max_size=3)),
    st.tuples(st.just("difference_update"), st.sets(keys, max_size=3)),
    st.tuples(st.just("intersection_update"), st.sets(keys, max_size=4)),
    st.tuples(st.just("clear")),
)


def apply_set(s, op):
    kind = op[0]
    if kind == "contains":
        return op[1] in s
    if kind == "clear":
        return s.clear()
    return getattr(s, kind)(op[1])


@settings(max_examples=40, deadline=None)
@given(initial=st.sets(keys, max_size=6), ops=st.lists(set_ops, max_size=12), commit=st.booleans())
def test_set_operations_commit_or_roll_back(initial, ops, commit):
    shared = cs.copy_to(initial)
    model = set(initial)
    run_in_transaction(shared, model, ops, apply_set, commit)
    assert set(shared) == (model if commit else initial)


sorted_keys = st.integers(-20, 20)
sorted_ops = st.one_of(
    st.tuples(st.just("set"), sorted_keys, values),
    st.tuples(st.just("del"), sorted_keys),
    st.tuples(st.just("pop"), sorted_keys),
    st.tuples(st.just("get"), sorted_keys),
    st.tuples(st.just("setdefault"), sorted_keys, values),
    st.tuples(st.just("popitem"), st.integers(-3, 3)),
    st.tuples(st.just("peekitem"), st.integers(-3, 3)),
    st.tuples(st.just("bisect"), sorted_keys),
    st.tuples(st.just("clear")),
)


def apply_sorted(d, op):
    kind = op[0]
    if kind == "popitem":
        return d.popitem(op[1])
    if kind == "peekitem":
        return d.peekitem(op[1])
    if kind == "bisect":
        return d.bisect_left(op[1])
    return apply_dict(d, op)


@settings(max_examples=40, deadline=None)
@given(initial=st.dictionaries(sorted_keys, values, max_size=8), ops=st.lists(sorted_ops, max_size=12),
       commit=st.booleans())
def test_sorted_dict_operations_commit_or_roll_back(initial, ops, commit):
    shared = cs.copy_to(SortedDict(initial))
    assert isinstance(shared, cs.SharedSortedDict)
    model = SortedDict(initial)
    run_in_transaction(shared, model, ops, apply_sorted, commit)
    assert list(shared.items()) == list((model if commit else SortedDict(initial)).items())


def test_rollback_of_a_removed_key_whose_slot_was_reused():
    # Regression (found by test_dict_operations_commit_or_roll_back): a key removed inside a
    # transaction leaves a tombstone; an insert in the same transaction reused it and wrote its own
    # hash there, unlogged; the rollback restored the removed key with the other key's hash, so the
    # key was iterated but not found (d["a"] raised KeyError). Each insert below probes from its own
    # hash, so some of them land on the tombstone.
    for k in list(range(-8, 9)) + ["b", "c", "d", "e"]:
        for kind in ("dict", "set"):
            c = cs.copy_to({"a": None, "z": 1} if kind == "dict" else {"a", "z"})
            with cs.transaction() as tx:
                if kind == "dict":
                    del c["a"]
                    c[k] = 0
                else:
                    c.remove("a")
                    c.add(k)
                tx.rollback()
            assert "a" in c, (kind, k)
            if kind == "dict":
                assert c["a"] is None and dict(c) == {"a": None, "z": 1}, k
            else:
                assert set(c) == {"a", "z"}, k


def test_changes_to_several_containers_and_fields_are_one_unit():
    lst, d, s = cs.copy_to([1, 2]), cs.copy_to({"a": 1}), cs.copy_to({1})
    a = account(5)
    with pytest.raises(ValueError):
        with cs.transaction():
            lst.append(3)
            d["b"] = 2
            s.add(2)
            a.balance = 6
            lst.sort(reverse=True)
            raise ValueError
    assert (list(lst), dict(d), set(s), a.balance) == ([1, 2], {"a": 1}, {1}, 5)


# ---- nesting ----------------------------------------------------------------------------------


def test_nesting_is_flat():
    a = account(1)
    with pytest.raises(LookupError):
        with cs.transaction():
            a.balance = 2
            with cs.transaction() as inner:
                assert cs._colors_shm._transaction_depth() == 2
                a.balance = 3
            assert not inner.active and cs.in_transaction()  # the inner commit just ended its level
            raise LookupError
    assert a.balance == 1  # the outer rollback undid the inner's writes too


def test_an_inner_rollback_dooms_the_whole_transaction():
    a = account(1)
    with pytest.raises(TransactionAbortedError, match="inner transaction rolled back"):
        with cs.transaction():
            a.balance = 2
            try:
                with cs.transaction():
                    a.balance = 3
                    raise OSError
            except OSError:
                pass
            with pytest.raises(TransactionAbortedError):
                a.balance = 4  # doomed: every later operation fails
    assert a.balance == 1 and not cs.in_transaction()


def test_atomically_joins_an_enclosing_transaction():
    a = account(1)
    with pytest.raises(ArithmeticError):
        with cs.transaction():
            assert cs.atomically(lambda: setattr(a, "balance", 2) or "joined") == "joined"
            assert cs.in_transaction()
            raise ArithmeticError
    assert a.balance == 1


# ---- atomically ---------------------------------------------------------------------------------


def test_atomically_returns_the_result_and_passes_arguments():
    a = account(10)

    def move(x, amount, *, factor):
        x.balance -= amount * factor
        return x.balance

    assert cs.atomically(move, a, 3, factor=2) == 4
    assert a.balance == 4


def test_atomically_rolls_back_and_does_not_retry_other_exceptions():
    a = account(10)
    calls = []

    def fail():
        calls.append(1)
        a.balance = 0
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        cs.atomically(fail)
    assert calls == [1] and a.balance == 10 and not cs.in_transaction()


def test_atomically_threads_lose_no_increment():
    counter = account(0)
    n_threads, n = 4, 150
    errors = []
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch inside transactions: conflicts and retries

    def inc():
        counter.balance += 1

    def work():
        try:
            for _ in range(n):
                cs.atomically(inc, retries=10_000)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    try:
        threads = [threading.Thread(target=work) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    assert counter.balance == n_threads * n


def test_atomically_processes_lose_no_increment():
    name = unique("tx-counter")
    counter = account(0)
    cs.repository(name).set(counter)
    n = 400
    code = f"""
        c = cs.repository({name!r}).get()
        def inc():
            c.balance += 1
        print("ready", flush=True)
        sys.stdin.readline()
        for _ in range({n}):
            cs.atomically(inc, retries=100_000)
        print("done", flush=True)
    """
    children = [Child(code) for _ in range(2)]
    for ch in children:
        ch.expect("ready")
    for ch in children:  # both start at once
        ch.proc.stdin.write("go\n")
        ch.proc.stdin.flush()
    for _ in range(n):
        cs.atomically(lambda: setattr(counter, "balance", counter.balance + 1), retries=100_000)
    for ch in children:
        assert ch.finish().strip() == "done"
    assert counter.balance == 3 * n


# ---- conflicts ----------------------------------------------------------------------------------

HOLDER = """
    a = cs.repository(NAME).get()
    with cs.transaction():
        a.balance = 1000
        print("holding", flush=True)
        sys.stdin.readline()
    print("committed", flush=True)
"""


def holder(name: str) -> Child:
    ch = Child(HOLDER.replace("NAME", repr(name)))
    ch.expect("holding")
    return ch


def release(ch: Child) -> None:
    ch.proc.stdin.write("\n")
    ch.proc.stdin.flush()
    assert ch.finish().strip() == "committed"


def test_conflict_names_the_holder_and_dooms_the_transaction():
    name = unique("tx-held")
    a = account(5)
    cs.repository(name).set(a)
    ch = holder(name)
    try:
        with pytest.raises(TransactionAbortedError):
            with cs.transaction():
                with pytest.raises(TransactionConflictError) as e:
                    a.balance = 6
                assert f"process {ch.proc.pid}" in str(e.value), str(e.value)
                a.balance  # the transaction is doomed: every later operation fails
        assert not cs.in_transaction()
    finally:
        release(ch)
    assert a.balance == 1000


def test_atomically_retries_then_raises_the_conflict():
    name = unique("tx-retry")
    a = account(5)
    cs.repository(name).set(a)
    ch = holder(name)
    calls = []

    def write():
        calls.append(1)
        a.balance = 6

    try:
        with pytest.raises(TransactionConflictError):
            cs.atomically(write, retries=2)
        assert len(calls) == 3  # the first attempt and two retries
        calls.clear()
        with pytest.raises(TransactionConflictError):  # nested: joins, no retry of a part
            with cs.transaction():
                cs.atomically(write, retries=5)
        assert len(calls) == 1
    finally:
        release(ch)
    assert cs.atomically(write) is None and a.balance == 6


def run_child(code: str, env: dict, timeout: float = 60) -> str:
    ch = Child(code, env)
    return ch.finish(timeout)


def test_deadlock_between_two_threads_is_detected():
    # Each thread holds one account and then wants the other's. The conflict wait is 30 s here,
    # so a "deadlock" answer well before that comes from the detection, which needs the waiting
    # thread to release the GIL (otherwise the other thread could not reach its second write).
    out = run_child("""
        import threading
        a, b = cs.allocate(Account), cs.allocate(Account)
        a.balance = b.balance = 0
        barrier = threading.Barrier(2)
        results = {}
        def worker(me, first, second):
            try:
                with cs.transaction():
                    first.balance = 1
                    barrier.wait()
                    second.balance = 2
                results[me] = "committed"
            except cs.TransactionConflictError as e:
                results[me] = "conflict: " + str(e)
        t0 = time.monotonic()
        ts = [threading.Thread(target=worker, args=(0, a, b)), threading.Thread(target=worker, args=(1, b, a))]
        for t in ts: t.start()
        for t in ts: t.join()
        for r in sorted(results.values()):
            print(r, flush=True)
        print(round(time.monotonic() - t0), flush=True)
    """, {"COLORS_TX_CONFLICT_WAIT_MS": "30000"})
    *results, seconds = out.strip().splitlines()
    # Both threads may see the cycle at once (each then gives up); never neither, never a hang.
    assert len(results) == 2 and any(r.startswith("conflict: deadlock") for r in results), out
    assert all(r == "committed" or r.startswith("conflict: deadlock") for r in results), out
    assert int(seconds) < 20, out


def test_a_conflict_wait_releases_the_gil():
    # The holder is a thread of the same process that sleeps, then commits; the waiter must get
    # the object once it commits, not time out after the (30 s) conflict wait with the GIL held.
    out = run_child("""
        import threading
        a = cs.allocate(Account)
        a.balance = 0
        held = threading.Event()
        def hold():
            with cs.transaction():
                a.balance = 1
                held.set()
                time.sleep(0.3)
        t = threading.Thread(target=hold)
        t.start()
        held.wait()
        t0 = time.monotonic()
        with cs.transaction():
            a.balance += 10   # waits for the holder's commit
        t.join()
        print(a.balance, round(time.monotonic() - t0), flush=True)
    """, {"COLORS_TX_CONFLICT_WAIT_MS": "30000"})
    balance, seconds = out.split()
    assert balance == "11" and int(seconds) < 20, out


def test_a_plain_change_waits_for_the_transaction_holding_the_container():
    # A thread's transaction changes a sorted dict, a dict and a list, sleeps, and rolls back;
    # the main thread meanwhile changes the same containers outside any transaction. Those
    # changes wait for the rollback (which would otherwise overwrite part of them and leave a
    # size that disagrees with the contents), and the wait releases the GIL, which the holder
    # needs to roll back: the plain wait is 30 s here, so an answer well before it comes from
    # the holder's rollback.
    out = run_child("""
        import threading
        sd = cs.allocate(cs.SharedSortedDict)
        d = cs.copy_to({})
        l = cs.copy_to([])
        for i in range(100):
            sd[i] = i
            d[i] = i
            l.append(i)
        held = threading.Event()
        class Rollback(Exception):
            pass
        def hold():
            try:
                with cs.transaction():
                    for i in range(100, 300):
                        sd[i] = i
                        d[i] = i
                    for i in range(50):
                        del sd[i]
                        del d[i]
                        del l[0]
                    held.set()
                    time.sleep(0.3)
                    raise Rollback()
            except Rollback:
                pass
        t = threading.Thread(target=hold)
        t.start()
        held.wait()
        t0 = time.monotonic()
        for i in range(1000, 4000):
            sd[i] = i
            d[i] = i
            l.append(i)
        t.join()
        expected = list(range(100)) + list(range(1000, 4000))
        assert len(sd) == len(expected) and list(sd) == expected, (len(sd), len(list(sd)))
        assert len(d) == len(expected) and sorted(d) == expected, (len(d), len(list(d)))
        assert len(l) == len(expected) and list(l) == expected, (len(l), len(list(l)))
        print("ok", round(time.monotonic() - t0), flush=True)
    """, {"COLORS_TX_PLAIN_WAIT_MS": "30000"})
    verdict, seconds = out.split()
    assert verdict == "ok" and int(seconds) < 20, out


# Child code: hold(l, seconds) starts a thread whose transaction appends 2 to the shared list `l`
# and keeps it for `seconds` before committing; it returns the thread once the transaction holds l.
HOLD_LIST = """
import threading
def hold(l, seconds):
    held = threading.Event()
    def run():
        with cs.transaction():
            l.append(2)
            held.set()
            time.sleep(seconds)
    t = threading.Thread(target=run)
    t.start()
    held.wait()
    return t
"""


def test_ctrl_c_stops_a_plain_change_waiting_for_a_transaction_and_nothing_changes():
    # The wait for a transaction holding the container is up to COLORS_TX_PLAIN_WAIT_MS (30 s
    # here); a SIGINT 0.3 s into it raises KeyboardInterrupt at once, and the append is not made.
    out = run_child(HOLD_LIST + textwrap.dedent("""
        import os, signal
        l = cs.copy_to([1])
        t = hold(l, 3)
        threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
        t0 = time.monotonic()
        try:
            l.append(3)
            print("appended", flush=True)
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - t0, 1), flush=True)
        t.join()
        print(*list(l), flush=True)
    """), {"COLORS_TX_PLAIN_WAIT_MS": "30000"})
    lines = out.splitlines()
    assert lines[0].split()[0] == "interrupted" and float(lines[0].split()[1]) < 1.5, out
    assert lines[1].split() == ["1", "2"], out


def test_a_signal_handler_detaching_during_a_plain_changes_wait_is_refused_not_deadlocked():
    # The wait runs signal handlers (the interrupt hook); detach() from one would wait forever for
    # the very call it interrupted. It is refused, as inside any blocking call.
    out = run_child(HOLD_LIST + textwrap.dedent("""
        import os, signal
        l = cs.copy_to([1])
        def handler(signum, frame):
            cs.detach()
        signal.signal(signal.SIGUSR1, handler)
        t = hold(l, 1)
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGUSR1)).start()
        try:
            l.append(3)
            print("appended", flush=True)
        except cs.InvalidArgumentError as e:
            print("refused", "signal handler" in str(e), flush=True)
        t.join()
        print(*list(l), flush=True)
    """), {"COLORS_TX_PLAIN_WAIT_MS": "30000"})
    assert out.split() == ["refused", "True", "1", "2"], out


@pytest.mark.parametrize("wait_ms", ["99999999999999999999", "18446744073709551615"])
def test_a_huge_plain_wait_waits_instead_of_overflowing(wait_ms):
    # COLORS_TX_PLAIN_WAIT_MS beyond a day is a day. Values whose nanoseconds overflowed made a
    # plain change conflict at once ("within 0 ms").
    out = run_child(HOLD_LIST + textwrap.dedent("""
        l = cs.copy_to([1])
        t = hold(l, 0.3)
        l.append(3)   # waits for the commit
        t.join()
        print(*list(l), flush=True)
    """), {"COLORS_TX_PLAIN_WAIT_MS": wait_ms})
    assert out.split() == ["1", "2", "3"], out


def test_a_plain_read_modify_write_never_writes_back_a_rolled_back_change():
    # reverse, sort, slice assignment and deletion, extend by itself and intersection_update read
    # the elements (or the length) and write a result back. Run outside any transaction while another thread's transaction
    # held the container, they read its uncommitted changes, waited for its rollback in the
    # write, and then wrote those changes back. Their read now waits for the transaction too.
    out = run_child("""
        import threading
        def against_a_rollback(container, change, op):
            held = threading.Event()
            def hold():
                try:
                    with cs.transaction():
                        change(container)
                        held.set()
                        time.sleep(0.3)
                        raise KeyError("roll back")
                except KeyError:
                    pass
            t = threading.Thread(target=hold)
            t.start()
            held.wait()
            op(container)
            t.join()
        def list_change(l):
            l.append(999)
            del l[0]
        results = []
        for op in (lambda l: l.reverse(), lambda l: l.sort(), lambda l: l.__setitem__(slice(1, 3), [7]),
                   lambda l: l.__delitem__(slice(0, 8)), lambda l: l.__delitem__(slice(-2, None)),
                   lambda l: l.extend(l)):
            l = cs.copy_to(list(range(10)))
            model = list(range(10))
            op(model)
            against_a_rollback(l, list_change, op)
            results.append(list(l) == model)
        s = cs.copy_to(set(range(10)))
        def set_change(s):
            s.add(999)
            s.discard(0)
        against_a_rollback(s, set_change, lambda s: s.intersection_update(set(range(5)) | {999}))
        results.append(set(s) == set(range(5)))
        print(*results, flush=True)
    """, {})
    assert out.split() == ["True"] * 7, out


def test_a_conflict_reading_an_added_field_keeps_its_error_state():
    # A field the class does not declare is read after the attribute lookup failed: the binding
    # holds that AttributeError while it reads the shared field. A conflict raised by the read
    # released it twice, one reference to AttributeError per conflict, until the type was freed
    # under the interpreter (SIGSEGV after about ten).
    out = run_child("""
        import threading
        a = cs.allocate(Account)
        a.added = 0   # not declared by Account: a field added to the shared object
        lost = 0
        for k in range(30):
            held, done = threading.Event(), threading.Event()
            def hold():
                with cs.transaction():
                    a.added = a.added + 1
                    held.set()
                    done.wait()
            t = threading.Thread(target=hold)
            t.start()
            held.wait()
            before = sys.getrefcount(AttributeError)
            try:
                with cs.transaction():
                    a.added
                print("no conflict", flush=True)
            except cs.TransactionConflictError:
                pass
            lost += before - sys.getrefcount(AttributeError)
            done.set()
            t.join()
        print("lost", lost, a.added, flush=True)
    """, {})
    assert out.split() == ["lost", "0", "30"], out


# ---- misuse and what is refused inside -----------------------------------------------------------


def test_misuse_gets_clear_errors():
    a = account(0)
    with pytest.raises(InvalidArgumentError, match="not begun"):
        cs.transaction().commit()
    with pytest.raises(InvalidArgumentError, match="not begun"):
        cs.transaction().rollback()
    tx = cs.transaction()
    with tx:
        a.balance = 1
    with pytest.raises(InvalidArgumentError, match="already ended"):
        tx.commit()
    with pytest.raises(InvalidArgumentError, match="already ended"):
        tx.rollback()
    with pytest.raises(InvalidArgumentError, match="used for one transaction"):
        with tx:
            pass
    with cs.transaction() as tx:
        tx.commit()
        with pytest.raises(InvalidArgumentError, match="already ended"):
            tx.commit()
    # an inner level still open
    outer, inner = cs.transaction(), cs.transaction()
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(InvalidArgumentError, match="inner transaction is still open"):
        outer.commit()
    inner.commit()
    outer.commit()
    assert not cs.in_transaction()
    for bad in (0, -1, float("nan")):
        with pytest.raises(InvalidArgumentError):
            cs.transaction(timeout=bad)
    with pytest.raises(TypeError):
        cs.transaction(timeout="1")
    with pytest.raises(TypeError):
        cs.atomically(42)
    with pytest.raises(InvalidArgumentError):
        cs.atomically(lambda: None, retries=-1)
    assert cs.transaction(timeout=1.5).timeout == 1.5 and cs.transaction().timeout is None


def test_a_transaction_belongs_to_its_thread():
    a = account(0)
    errors = []
    with cs.transaction() as tx:
        a.balance = 1

        def other():
            for call in (tx.commit, tx.rollback, lambda: tx.__exit__(None, None, None)):
                try:
                    call()
                except InvalidArgumentError as e:
                    errors.append(str(e))
            errors.append(cs.in_transaction())

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert cs.in_transaction()
    assert len(errors) == 4 and all("other than the one that began it" in e for e in errors[:3]), errors
    assert errors[3] is False  # the other thread was never in this transaction
    assert a.balance == 1


def test_atomically_refuses_a_function_that_leaves_a_level_open():
    a = account(3)

    def leaky():
        a.balance = 4
        leaky.inner = cs.transaction()  # kept: a dropped one would roll its level back
        leaky.inner.__enter__()

    with pytest.raises(InvalidArgumentError, match="left an inner transaction open"):
        cs.atomically(leaky)
    assert a.balance == 3 and not cs.in_transaction()


def test_a_dropped_open_transaction_is_rolled_back():
    a = account(3)
    tx = cs.transaction()
    tx.__enter__()
    a.balance = 4
    del tx  # never ended: rolled back like a C++ Transaction leaving its scope
    assert not cs.in_transaction() and a.balance == 3


def test_operations_that_cannot_be_rolled_back_are_refused():
    from colors_shm import rpc

    a = account(1)
    ch = cs.channel(unique("tx-ch"), capacity=4)
    ch.send(1)
    repo_name = unique("tx-del")
    cs.repository(repo_name).set(1)

    class Handler:
        def add(self, x, y):
            return x + y

    srv = rpc.serve(unique("tx-rpc"), Handler())
    client = rpc.connect(srv.name)
    try:
        assert client.add(1, 2) == 3
        with cs.transaction():
            a.balance = 2
            for refused in (lambda: ch.send(2), lambda: ch.try_send(2), lambda: ch.receive(timeout=1),
                            lambda: ch.try_receive(), lambda: client.add(1, 2),
                            lambda: client.call_async("add", 1, 2),
                            lambda: cs.delete_repository(repo_name)):
                with pytest.raises(InvalidArgumentError, match="transaction"):
                    refused()
            with pytest.raises(InvalidArgumentError, match="schema evolution"):
                a.undeclared = 5   # adding a field
            with pytest.raises(InvalidArgumentError, match="schema evolution"):
                del a.name         # removing one
            assert a.balance == 2  # the transaction goes on
        assert a.balance == 2
        assert ch.receive(timeout=5) == 1 and ch.try_receive() is None
        assert cs.repository(repo_name).get() == 1
    finally:
        srv.stop()


def test_timeout_rolls_back_a_transaction_that_ran_too_long():
    a = account(1)
    with pytest.raises(TransactionAbortedError, match="timeout"):
        with cs.transaction(timeout=0.05):
            a.balance = 2
            time.sleep(0.2)
    assert a.balance == 1 and not cs.in_transaction()


def test_detach_inside_a_transaction():
    name = unique("tx-detach")
    a = account(1)
    cs.repository(name).set(a)
    with pytest.raises(TransactionAbortedError, match="attachment"):
        with cs.transaction():
            a.balance = 2
            cs.detach()
            with pytest.raises(cs.NotAttachedError):
                a.balance = 3
            repo = cs.repository(name)  # attaches again, inside the dead transaction
            with pytest.raises(TransactionAbortedError, match="attachment"):
                repo.get()
    assert not cs.in_transaction()
    a = cs.repository(name).get()
    assert wait_until(lambda: a.balance == 1)  # the server rolled the transaction back
    with cs.transaction():
        a.balance = 4
    assert a.balance == 4


# ---- process death and the collector ---------------------------------------------------------


def test_a_process_killed_inside_a_transaction_is_rolled_back():
    name = unique("tx-kill")
    a = account(10, name="before")
    lst, d = cs.copy_to([1, 2]), cs.copy_to({"k": 1})
    cs.repository(name).set(cs.copy_to([a, lst, d]))
    ch = Child(f"""
        a, lst, d = cs.repository({name!r}).get()
        with cs.transaction():
            a.balance = 999
            a.name = "during"
            lst.append(3)
            del lst[0]
            d["k"] = 2
            d["new"] = 3
            print("inside", flush=True)
            time.sleep(600)
    """)
    try:
        ch.expect("inside")
        assert a.balance == 999  # not isolated from non-transactional reads
        os.kill(ch.proc.pid, signal.SIGKILL)
        ch.proc.wait(timeout=30)
        assert wait_until(lambda: a.balance == 10), a.balance
        assert a.name == "before" and list(lst) == [1, 2] and dict(d) == {"k": 1}
        # its objects are free again for transactions
        with cs.transaction():
            a.balance = 11
            lst.append(4)
            d["k"] = 5
        assert (a.balance, list(lst), dict(d)) == (11, [1, 2, 4], {"k": 5})
    finally:
        ch.kill()


def test_a_long_transaction_across_collector_cycles():
    a = account(0, name="old " * 20)
    a.data = cs.copy_to(["old", {"deep": [1, 2]}])  # reachable only from the field
    with cs.transaction() as tx:
        a.data = cs.copy_to(["new"])     # the old list is now reachable only from the undo log
        a.name = "new " * 20
        for _ in range(3):
            cs.collect(timeout=60)
        assert list(a.data) == ["new"] and a.name == "new " * 20
        tx.rollback()
    for _ in range(2):
        cs.collect(timeout=60)
    assert a.name == "old " * 20
    old = a.data
    assert old[0] == "old" and list(old[1]["deep"]) == [1, 2]
    with cs.transaction():
        a.data = cs.copy_to(["committed"])
        cs.collect(timeout=60)
    cs.collect(timeout=60)
    assert list(a.data) == ["committed"]


def test_transfers_keep_the_total_while_workers_are_killed():
    # Worker processes move money between accounts in atomically (some with a pause inside every
    # commit, so that kills land there too) and are killed with SIGKILL at random and replaced;
    # the auditor's transactional sum never changes, and nor does the final one once the server
    # rolled the dead workers back. TX_STRESS_SECS seconds (default 4).
    import random

    seconds = float(os.environ.get("TX_STRESS_SECS", "4"))
    name = unique("tx-bank")
    accts = [account(1000) for _ in range(16)]
    cs.repository(name).set(cs.copy_to(accts))
    total = 16 * 1000
    code = f"""
        import random
        accts = list(cs.repository({name!r}).get())
        rng = random.Random()
        def transfer(a, b, amount):
            a.balance -= amount
            b.balance += amount
        print("ready", flush=True)
        while True:
            i, j = rng.sample(range(len(accts)), 2)
            cs.atomically(transfer, accts[i], accts[j], rng.randrange(100), retries=1_000_000)
    """
    rng = random.Random(5)

    def start(k: int) -> Child:
        env = {"COLORS_TX_FAULT_COMMIT_US": "200"} if k % 2 else {}
        ch = Child(code, env)
        ch.expect("ready")
        return ch

    def audit() -> int:
        return sum(a.balance for a in accts)

    workers = [start(k) for k in range(3)]
    kills = audits = 0
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(rng.uniform(0.05, 0.3))
            for _ in range(3):
                assert cs.atomically(audit, retries=1_000_000) == total
                audits += 1
            k = rng.randrange(len(workers))
            os.kill(workers[k].proc.pid, signal.SIGKILL)
            workers[k].kill()
            kills += 1
            workers[k] = start(kills)
    finally:
        for w in workers:
            w.kill()
    assert cs.atomically(audit, retries=1_000_000) == total
    assert kills >= 3 and audits >= 9
    assert any(a.balance != 1000 for a in accts)  # the workers did transfer
    # every account is free again for a transaction
    with cs.transaction():
        for a in accts:
            a.balance += 1
    assert audit() == total + 16
