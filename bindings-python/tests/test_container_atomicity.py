"""Each operation on a shared list, dict or set is atomic across processes (libshared/src/containers.hpp).

4 processes x 2 threads append, pop (from the end and from the front), set, delete, read and
iterate tagged values in one shared list, put/setdefault/pop values in one shared dict and
add/pop values in one shared set, without any monitor, for STRESS_SECS seconds (default 8;
CONTAINER_STRESS_SECS=20 or more for a long run). Every value is tagged writer * 10**9 + seq, each
writer numbering its values 0, 1, 2, ..., so afterwards:
  * nothing read was never written: every value read is a tag with seq < its writer's count (no
    None, which nobody stores);
  * nothing popped twice: the values popped (from list, dict and set, by all processes) are
    distinct, and none of them is still in the container;
  * counts are conserved: appended - popped - deleted == len(list); inserted - popped == len(dict)
    and len(set).
The second test kill -9s workers at random meanwhile: the others go on (a lock held by a killed
process passes to them), every value they read is still one that was written, and the server's
heap verifier (after every collector cycle, --gc-debug) stays clean.
"""

from __future__ import annotations

import array
import json
import os
import random
import signal
import subprocess
import time

import colors_shm as cs
from conftest import Server, spawn, unique

STRESS_SECS = float(os.environ.get("CONTAINER_STRESS_SECS", "8"))
TAG = 10**9

WORKER = r"""
import array, json, random, sys, threading, time
import colors_shm as cs

name, proc, secs, out_dir, tolerate_dead = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
TAG = 10**9
lst = cs.repository(name + ":list").get()
dct = cs.repository(name + ":dict").get()
st = cs.repository(name + ":set").get()
results = {}

def work(wid):
    rng = random.Random(wid)
    seq = 0
    popped = array.array("q")
    r = dict(appended=0, popped=0, deleted=0, dict_in=0, dict_out=0, set_in=0, set_out=0,
             bad=[], max_seen={}, ops=0, owner_died=0)

    def tag():
        nonlocal seq
        seq += 1
        return wid * TAG + seq - 1

    def seen(v, where):
        if type(v) is not int or v < TAG:
            r["bad"].append([where, repr(v)])
            return
        w, s = divmod(v, TAG)
        if s > r["max_seen"].get(w, -1):
            r["max_seen"][w] = s

    end = time.monotonic() + secs
    while time.monotonic() < end:
        op = rng.randrange(12)
        r["ops"] += 1
        try:
            if op <= 2:
                lst.append(tag())
                r["appended"] += 1
            elif op == 3:
                v = lst.pop()
                r["popped"] += 1
                seen(v, "pop")
                popped.append(v)
            elif op == 4:
                v = lst.pop(0)
                r["popped"] += 1
                seen(v, "pop(0)")
                popped.append(v)
            elif op == 5:
                del lst[rng.randrange(-4, 4)]
                r["deleted"] += 1
            elif op == 6:
                lst[rng.randrange(-8, 8)] = tag()
            elif op == 7:
                seen(lst[rng.randrange(-8, 8)], "get")
            elif op == 8:
                if rng.random() < 0.1:
                    for v in lst:
                        seen(v, "iter")
                else:
                    lst.insert(rng.randrange(-3, 3), tag())
                    r["appended"] += 1
            elif op == 9:
                key = rng.randrange(64)
                t = tag()
                if dct.setdefault(key, t) == t:
                    r["dict_in"] += 1
                v = dct.get(rng.randrange(64))
                if v is not None:
                    seen(v, "dict.get")
            elif op == 10:
                v = dct.pop(rng.randrange(64), None)
                if v is not None:
                    r["dict_out"] += 1
                    seen(v, "dict.pop")
                    popped.append(v)
            else:
                if rng.random() < 0.5:
                    st.add(tag())
                    r["set_in"] += 1
                else:
                    v = st.pop()
                    r["set_out"] += 1
                    seen(v, "set.pop")
                    popped.append(v)
        except (IndexError, KeyError):
            pass  # empty, or the index is out of range now
        except cs.OwnerDiedError:
            if not tolerate_dead:
                raise
            r["owner_died"] += 1  # a killed worker was moving elements: op not performed
    r["written"] = seq
    with open(f"{out_dir}/popped-{wid}", "wb") as f:
        popped.tofile(f)
    results[wid] = r

threads = [threading.Thread(target=work, args=(proc * 10 + t + 1,)) for t in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with open(f"{out_dir}/result-{proc}.json", "w") as f:
    json.dump(results, f)
print("done", flush=True)
"""

SETUP = r"""
import sys
import colors_shm as cs
name = sys.argv[1]
for suffix, empty in ((":list", []), (":dict", {}), (":set", set())):
    cs.repository(name + suffix).set(cs.copy_to(empty))
print("ready", flush=True)
"""

FINAL = r"""
import json, sys
import colors_shm as cs
name = sys.argv[1]


def read(fn):
    # A worker killed inside a multi-slot list change, with no survivor touching the list since,
    # leaves the report to this first reader: once, then the list reads normally.
    try:
        return fn()
    except cs.OwnerDiedError:
        return fn()


lst = read(lambda: list(cs.repository(name + ":list").get()))
dct = read(lambda: dict(cs.repository(name + ":dict").get()))
st = read(lambda: set(cs.repository(name + ":set").get()))
print(json.dumps({"list": lst, "dict": list(dct.values()), "set": sorted(st)}))
"""


def run_script(code: str, *args: str, socket: str, timeout: float = 60) -> str:
    p = spawn("import sys; sys.argv[1:] = " + repr(list(args)) + "\n" + code, socket=socket)
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err
    return out


def start_worker(proc: int, name: str, secs: float, out_dir, socket: str, tolerate_dead: bool) -> subprocess.Popen:
    code = "import sys; sys.argv[1:] = " + repr([name, str(proc), str(secs), str(out_dir), "1" if tolerate_dead else "0"]) + "\n" + WORKER
    return spawn(code, socket=socket)


def load_results(out_dir, procs) -> dict:
    results = {}
    for proc in procs:
        with open(out_dir / f"result-{proc}.json") as f:
            results.update({int(w): r for w, r in json.load(f).items()})
    return results


def popped_values(out_dir, wids) -> list[int]:
    out = []
    for wid in wids:
        a = array.array("q")
        with open(out_dir / f"popped-{wid}", "rb") as f:
            a.frombytes(f.read())
        out.extend(a)
    return out


def check_reads(results: dict, written: dict) -> None:
    for wid, r in results.items():
        assert not r["bad"], f"worker {wid} read values nobody stored: {r['bad'][:10]}"
        for w, s in r["max_seen"].items():
            assert s < written.get(int(w), 0), f"worker {wid} read {w}:{s}, never written (writer wrote {written.get(int(w), 0)})"


def server_for(tmp_path) -> Server:
    log = tmp_path / "colors-server.log"
    return Server(heap="128M", extra=("--gc-debug", "--gc-min-trigger", "8M"), log=str(log))


def verifier_lines(tmp_path) -> list[str]:
    return [line for line in (tmp_path / "colors-server.log").read_text().splitlines() if "heap verifier" in line]


def test_container_operations_are_atomic_across_processes(tmp_path):
    srv = server_for(tmp_path)
    name = unique("atomic")
    try:
        run_script(SETUP, name, socket=srv.socket)
        procs = list(range(4))
        workers = [start_worker(p, name, STRESS_SECS, tmp_path, srv.socket, tolerate_dead=False) for p in procs]
        for w in workers:
            out, err = w.communicate(timeout=STRESS_SECS + 120)
            assert w.returncode == 0, err
        results = load_results(tmp_path, procs)
        written = {wid: r["written"] for wid, r in results.items()}
        check_reads(results, written)

        final = json.loads(run_script(FINAL, name, socket=srv.socket))
        popped = popped_values(tmp_path, results)
        assert len(popped) == len(set(popped)), "a value was popped twice"
        remaining = final["list"] + final["dict"] + final["set"]
        assert None not in remaining, "a container holds None, which nobody stored"
        assert len(remaining) == len(set(remaining)), "a value is held twice"
        assert not set(remaining) & set(popped), "a value was popped and is still held"
        for v in remaining + popped:
            w, s = divmod(v, TAG)
            assert s < written.get(w, 0), f"{w}:{s} was never written"

        tot = {k: sum(r[k] for r in results.values()) for k in ("appended", "popped", "deleted", "dict_in", "dict_out", "set_in", "set_out")}
        assert tot["appended"] - tot["popped"] - tot["deleted"] == len(final["list"]), tot
        assert tot["dict_in"] - tot["dict_out"] == len(final["dict"]), tot
        assert tot["set_in"] - tot["set_out"] == len(final["set"]), tot
        assert sum(r["ops"] for r in results.values()) > 1000
        assert srv.proc.poll() is None
        assert not verifier_lines(tmp_path)
    finally:
        srv.stop()


def test_killed_workers_leave_containers_usable(tmp_path):
    srv = server_for(tmp_path)
    name = unique("atomic-kill")
    rng = random.Random()
    seed = rng.randrange(10**9)
    print(f"kill seed {seed}")
    rng.seed(seed)
    try:
        run_script(SETUP, name, socket=srv.socket)
        # Workers 0 and 1 run the whole time; 2 and 3 are killed with SIGKILL at random moments and
        # restarted under a new number.
        survivors = [start_worker(p, name, STRESS_SECS, tmp_path, srv.socket, tolerate_dead=True) for p in (0, 1)]
        victims: list[subprocess.Popen] = []
        next_proc = 2
        kills = 0
        end = time.monotonic() + STRESS_SECS
        while time.monotonic() < end:
            while len(victims) < 2:
                victims.append(start_worker(next_proc, name, 3600, tmp_path, srv.socket, tolerate_dead=True))
                next_proc += 1
            time.sleep(rng.uniform(0.3, 1.0))
            v = victims.pop(rng.randrange(len(victims)))
            v.send_signal(signal.SIGKILL)
            v.communicate()
            kills += 1
        for v in victims:
            v.send_signal(signal.SIGKILL)
            v.communicate()
        for s in survivors:
            out, err = s.communicate(timeout=STRESS_SECS + 120)
            assert s.returncode == 0, err
        results = load_results(tmp_path, (0, 1))
        print(f"{kills} kills; survivors: {sum(r['ops'] for r in results.values())} operations, "
              f"{sum(r['owner_died'] for r in results.values())} OwnerDiedError")
        assert all(r["ops"] > 100 for r in results.values()), "a survivor stopped making progress"
        # Survivors read only tagged values (the killed writers' counts are unknown: check the tags'
        # shape and the survivors' own numbering).
        for wid, r in results.items():
            assert not r["bad"], f"worker {wid} read values nobody stored: {r['bad'][:10]}"
            for w, s in r["max_seen"].items():
                if int(w) in results:
                    assert s < results[int(w)]["written"]
        # The containers still work and hold only tagged values; collections verify the heap.
        final = json.loads(run_script(FINAL, name, socket=srv.socket))
        for v in final["list"] + final["dict"] + final["set"]:
            assert type(v) is int and v >= TAG, f"a container holds {v!r}, which nobody stored"
        run_script("import colors_shm as cs\nfor _ in range(2): cs.collect()\n", socket=srv.socket)
        assert kills >= 3
        assert srv.proc.poll() is None
        assert not verifier_lines(tmp_path)
    finally:
        srv.stop()


# Every whole-container rewrite a process can make while another process adds to the container.
# Each one reads the elements, computes the result privately and writes it back; an add that came
# between the read and the write was overwritten (list) or dropped by a clear-and-refill (set's &=),
# silently, and a reader of the set saw it empty meanwhile.
REWRITES = {
    "reverse": lambda lst, s, n: lst.reverse(),
    "sort": lambda lst, s, n: lst.sort(),
    "slice assignment": lambda lst, s, n: lst.__setitem__(slice(0, 0), []),
    "slice deletion": lambda lst, s, n: lst.__delitem__(slice(n + 10**6, None)),
    "*= 1": lambda lst, s, n: lst.__imul__(1),
    "set &=": lambda lst, s, n: s.intersection_update(range(n)),
}


def test_whole_container_rewrites_lose_no_concurrent_add():
    n = 20000
    name = unique("rewrite")
    lst = cs.copy_to([])
    s = cs.copy_to(set())
    cs.repository(name + ":list").set(lst)
    cs.repository(name + ":set").set(s)
    adder = spawn(
        f"""
        import colors_shm as cs
        lst = cs.repository({name!r} + ":list").get()
        s = cs.repository({name!r} + ":set").get()
        print("ready", flush=True)
        for i in range({n}):
            lst.append(i)
            s.add(i)
        """
    )
    assert adder.stdout.readline().strip() == "ready", adder.stderr.read()
    rounds = dict.fromkeys(REWRITES, 0)
    sort_conflicts = 0
    while adder.poll() is None:
        for what, rewrite in REWRITES.items():
            try:
                rewrite(lst, s, n)
            except ValueError as e:  # a sort that met a concurrent change refuses to write
                assert what == "sort" and "modified during sort" in str(e)
                sort_conflicts += 1
            rounds[what] += 1
    out, err = adder.communicate()
    assert adder.returncode == 0, err
    assert min(rounds.values()) >= 1, rounds
    assert sorted(lst) == list(range(n)), f"lost: {sorted(set(range(n)) - set(lst))[:10]} after {rounds}"
    assert set(s) == set(range(n)), f"lost: {sorted(set(range(n)) - set(s))[:10]} after {rounds}"
