"""The child process of test_fuzz_safety.py: runs one program of random operations against
colors_shm and exits normally, whatever Python exceptions the operations raise.

Usage: python3 fuzz_child.py '<json program>'; COLORS_SOCKET names the server, FUZZ_SERVER_PID
its process (the `kill_server` operation SIGKILLs it).

A program is a list of [opcode, [numbers...]]; the numbers pick operands from a pool of values
(ints, strings, None, floats, private containers, proxies, stale proxies from before a detach,
capsules, classes, whatever gc.get_referents returned) and names from dir() of the extension
module and of the pool's objects, so every public and underscore entry point is reachable.

Exit status: 0, or 3 when an operation raised SystemError (an internal error that should have
been a proper exception), 4 when a value read back differs from what was stored, 5 when an
operation stayed blocked after a detach() from the watchdog. A signal (SIGSEGV, SIGABRT) is what
the test is there to catch.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import signal
import sys
import threading
import time

import colors_shm as cs
from colors_shm import _colors_shm as ext
from colors_shm import _classes, _proxies


@dataclasses.dataclass
class Item:
    """A user class resolvable by name (``__main__.Item``) in this process."""

    name: str
    weight: float
    next: "Item | None" = None


class Plain:
    x: int = 0


class Detaching:
    """copy_to reads its property, which detaches (and attaches again) in the middle of the copy."""

    a: int
    b: int

    def __init__(self):
        self.a = 1

    @property
    def b(self):
        cs.detach()
        if Detaching.reattach:
            cs.attach()
        return 2

    reattach = True


INTS = [0, 1, 2, 3, -1, -3, 7, 40, 2**31, 2**62, -(2**63), 2**63, 10**30]
FLOATS = [0.0, -0.0, 0.5, 1e300, float("nan"), float("inf"), 2.5e-320]
STRS = ["", "a", "fuzz-a", "fuzz-b", "é\u2603", "x" * 300, "\ud800", "__class__", "_ref", "name"]
NAMES = ["fuzz-a", "fuzz-b", "fuzz-c"]
CLASSES = [list, dict, set, tuple, bytes, frozenset, int, str, object, type, Item, Plain,
           cs.SharedList, cs.SharedDict, cs.SharedSet, cs.SharedObject, cs.SharedProxy,
           cs.SharedInstance, ext._Ref, ext.Repository, ext.Channel, ext._RpcClient, ext._RpcServer]
# Names that would end the process or block it by design, not by a bug.
SKIP = {"_exit", "exit", "abort", "kill", "fork", "system", "__del__", "__init_subclass__",
        "__subclasshook__", "__instancecheck__", "__subclasscheck__", "register_at_fork", "wait4"}
# Methods of Python's own objects whose cost grows with their arguments without bound: on the
# ints the fuzzer holds (up to 2**63), (10**30).__pow__(2**31) multiplies for minutes and a str
# times 2**62 asks for the whole memory. They test CPython, not colors.
UNBOUNDED_ON_BUILTINS = {"__pow__", "__rpow__", "__ipow__", "__lshift__", "__rlshift__", "__ilshift__",
                         "__mul__", "__rmul__", "__imul__"}


class Fuzz:
    def __init__(self, program):
        self.program = program
        self.pool: list = [None, True]
        self.pool += INTS + FLOATS + STRS + CLASSES + [b"bytes", bytearray(b"ba"), [1, "a"], {"k": [1]}, {1, 2}, (1,)]
        self.pool += [Item("i", 1.0), Plain(), Detaching(), [Detaching(), [1, 2]]]
        self.base = len(self.pool)  # the values above are never dropped
        self.threads: list[threading.Thread] = []
        self.op_started = 0.0
        self.op_name = ""

    # ---- operands ----
    def num(self, args, i, default=0):
        return args[i] if i < len(args) else default

    def pick(self, args, i):
        return self.pool[self.num(args, i) % len(self.pool)]

    def add(self, v):
        if not self.reachable_ok(v):
            return v
        self.pool.append(v)
        if len(self.pool) > self.base + 200:
            del self.pool[self.base:self.base + 50]
        return v

    def timeout(self, args, i):
        return [0, 0.01, 0.05, None][self.num(args, i) % 4]

    # ---- operations ----
    def op_copy_to(self, a):
        self.add(cs.copy_to(self.pick(a, 0)))

    def op_roundtrip(self, a):
        private = [[1, "two", 3.5, None, True, b"x"], {"a": [1, 2], "b": {"c": None}}, {1, "s", 2.5}][self.num(a, 0) % 3]
        shared = cs.copy_to(private)
        back = list(shared) if isinstance(private, list) else (dict(shared) if isinstance(private, dict) else set(shared))
        if isinstance(private, dict):
            back = {k: dict(v) if isinstance(v, cs.SharedDict) else list(v) for k, v in back.items()}
        if back != private:
            print(f"CORRUPT {private!r} read back as {back!r}", flush=True)
            os._exit(4)
        self.add(shared)

    def op_allocate(self, a):
        cls = self.pick(a, 0)
        n = self.num(a, 1) % 64
        self.add(cs.allocate(cls, n) if not (isinstance(cls, type) and dataclasses.is_dataclass(cls))
                 else cs.allocate(cls, "x", 1.0))

    def op_item(self, a):
        self.add(cs.copy_to(Item(str(self.num(a, 0)), 1.5, Item("n", 2.0))))

    def op_repository(self, a):
        r = cs.repository(NAMES[self.num(a, 0) % len(NAMES)])
        if self.num(a, 1) % 2:
            r.set(self.pick(a, 2))
        else:
            self.add(r.get())
        self.add(r)

    def op_channel(self, a):
        ch = cs.channel(NAMES[self.num(a, 0) % len(NAMES)], 1 + self.num(a, 1) % 4)
        k = self.num(a, 2) % 4
        if k == 0:
            ch.send(self.pick(a, 3), timeout=self.timeout(a, 4) or 0.01)
        elif k == 1:
            self.add(ch.receive(timeout=self.timeout(a, 4) or 0.01))
        elif k == 2:
            ch.try_send(self.pick(a, 3))
        else:
            self.add(ch.try_receive())
        self.add(ch)

    def op_monitor(self, a):
        target = self.pick(a, 0)
        k = self.num(a, 1) % 3
        if k == 0:
            with cs.synchronized(target):
                cs.wait(target, 0.01)
        elif k == 1:
            cs.notify_all(target)
        else:
            with cs.synchronized(target):
                cs.notify_all(target)

    def op_call_ext(self, a):
        names = [n for n in sorted(dir(ext)) if n not in SKIP]
        self.call(getattr(ext, names[self.num(a, 0) % len(names)]), a[1:])

    def op_call_method(self, a):
        obj = self.pick(a, 0)
        builtin = type(obj).__module__ == "builtins"
        names = [n for n in sorted(dir(obj)) if n not in SKIP and not (builtin and n in UNBOUNDED_ON_BUILTINS)]
        if not names:
            return
        f = getattr(obj, names[self.num(a, 1) % len(names)])
        if callable(f):
            self.call(f, a[2:])
        else:
            self.add(f)

    def op_call_api(self, a):
        names = [n for n in sorted(cs.__all__) if n not in SKIP]
        f = getattr(cs, names[self.num(a, 0) % len(names)])
        if callable(f):
            self.call(f, a[1:])

    def call(self, f, a):
        nargs = self.num(a, 0) % 5
        args = [self.pick(a, 1 + i) for i in range(nargs)]
        # Block at most briefly: timeouts given as numbers stay small.
        args = [0.01 if (x is None and i == nargs - 1 and "wait" in getattr(f, "__name__", "")) else x
                for i, x in enumerate(args)]
        r = f(*args)
        self.add(r)

    def op_referents(self, a):
        for o in gc.get_referents(self.pick(a, 0)):
            if self.reachable_ok(o):
                self.add(o)

    @staticmethod
    def reachable_ok(o) -> bool:
        """What gc hands out that the fuzzer keeps: everything of colors_shm and of this program,
        and plain values; not modules, functions or namespaces (their methods would let random
        calls delete files or end the process, which is no bug of colors_shm)."""
        if isinstance(o, type):
            return o.__module__.startswith(("colors_shm", "__main__"))
        if type(o).__module__.startswith("colors_shm") or type(o).__module__ == "__main__":
            return True
        return type(o) in (int, float, str, bytes, tuple, list, set, bool, type(None))

    def op_drop(self, a):
        if len(self.pool) > self.base:
            del self.pool[self.base + self.num(a, 0) % (len(self.pool) - self.base)]

    def op_gc(self, a):
        gc.collect()

    def op_collect(self, a):
        cs.collect(timeout=5)

    def op_detach(self, a):
        cs.detach()

    def op_attach(self, a):
        cs.attach()

    def op_rpc(self, a):
        name = NAMES[self.num(a, 0) % len(NAMES)]
        k = self.num(a, 1) % 3
        if k == 0:
            self.add(ext._RpcServer(name, 1 + self.num(a, 2) % 8))
        else:
            c = ext._RpcClient(name, -1)
            self.add(c)
            self.add(c._capsule())
            if k == 2:
                self.add(c.call_async("m", [self.pick(a, 2)]))

    def op_rpc_call(self, a):
        caps = [x for x in self.pool if type(x).__name__ == "PyCapsule"]
        if caps:
            ext._rpc_call(caps[self.num(a, 0) % len(caps)], "m", (self.pick(a, 1),), 0.01)

    def op_blocked_thread(self, a):
        """A thread blocked in receive / wait / rpc until something (a detach) wakes it."""
        ch = cs.channel(NAMES[self.num(a, 0) % len(NAMES)], 4)
        target = self.pick(a, 1)
        k = self.num(a, 2) % 2

        def run():
            try:
                if k == 0:
                    self.add(ch.receive(timeout=2))
                else:
                    with cs.synchronized(target):
                        cs.wait(target, 2)
            except Exception:  # noqa: BLE001 -- any Python exception is fine here
                pass

        t = threading.Thread(target=run, daemon=True)
        t.start()
        self.threads.append(t)

    def op_kill_server(self, a):
        pid = int(os.environ.get("FUZZ_SERVER_PID", "0"))
        if pid and self.num(a, 0) % 4 == 0:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def op_gc_detach(self, a):
        """At the next collection (which Python runs inside some allocation, e.g. of a proxy the
        extension is making), a gc callback detaches, and maybe attaches again."""
        reattach = self.num(a, 0) % 2 == 0
        gc.set_threshold(1 + self.num(a, 1) % 50)

        def cb(phase, info):
            if phase == "start":
                gc.callbacks.remove(cb)
                gc.set_threshold(700)
                cs.detach()
                if reattach:
                    cs.attach()

        gc.callbacks.append(cb)
        Detaching.reattach = reattach

    OPS = ["gc_detach", "copy_to", "roundtrip", "allocate", "item", "repository", "channel", "monitor", "call_ext",
           "call_method", "call_api", "referents", "drop", "gc", "collect", "detach", "attach", "rpc",
           "rpc_call", "blocked_thread", "kill_server"]

    def watchdog(self):
        """An operation blocked for long is woken by detach(); one that stays blocked is a bug."""
        detached_at = None
        while True:
            time.sleep(0.2)
            started = self.op_started
            if started == 0.0:
                detached_at = None
                continue
            now = time.monotonic()
            if now - started > 3 and detached_at is None:
                detached_at = now
                cs.detach()
            if detached_at is not None and now - detached_at > 30:
                print(f"HANG in {self.op_name} after detach()", flush=True)
                os._exit(5)

    def run(self):
        threading.Thread(target=self.watchdog, daemon=True).start()
        for code, args in self.program:
            name = self.OPS[code % len(self.OPS)]
            self.op_name = name
            self.op_started = time.monotonic()
            try:
                getattr(self, "op_" + name)(args)
            except SystemError as e:
                print(f"SYSTEMERROR in {name} {args}: {e!r}", flush=True)
                os._exit(3)
            except Exception:  # noqa: BLE001 -- Python exceptions are the expected outcome
                pass
            finally:
                self.op_started = 0.0
        cs.detach()  # wakes the blocked threads
        for t in self.threads:
            t.join(30)
            if t.is_alive():
                print("HANG: a blocked thread survived detach()", flush=True)
                os._exit(5)
        gc.collect()
        print("done", flush=True)


if __name__ == "__main__":
    Fuzz(json.loads(sys.argv[1])).run()
