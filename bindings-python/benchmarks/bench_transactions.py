"""Transactions from Python: transfers between shared accounts in colors_shm.atomically, and
read-only traversals inside vs outside a transaction.

Every row is a ratio against a baseline measured in the same run:
  * transfers per second (debit one account, credit another, both chosen at random among 1000) in
    `colors_shm.atomically`, from 1 worker process and from 2 at once, vs the same transfers
    through Python's sqlite3 (BEGIN IMMEDIATE; two UPDATEs; COMMIT), journal off the disk:
    1 process on a `:memory:` database; 2 processes cannot share a `:memory:` database (a
    shared-cache memory database is shared only within one process), so they use one database
    file in /dev/shm (WAL, synchronous=OFF: no disk, no fsync). The same transfers without a
    transaction (plain field updates, not atomic) are shown for scale, and the same transfers
    from C++ (`bank-worker`, tests/bank: `colors::atomically` over 1000 `bank.accounts`) against
    the same sqlite3 figure.
  * a read-only walk of 1024 depth-4 trees of shared objects (bench_types.walk: every field of every
    node) and a sum over the 1000 accounts, inside `with colors_shm.transaction()` vs outside.
Starts its own colors-server (as the tests do: $COLORS_SERVER_BIN or build/colors-server).
`--quick`: shorter runs.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import Server, child_env  # noqa: E402  (the tests' server launcher)

from bench_types import Account, make_tree, walk  # noqa: E402

N_ACCOUNTS = 1000
REPO = "bench.tx.accounts"

# One worker process: `colors` (atomically), `plain` (no transaction) or `sqlite PATH`. Waits for a
# line on stdin, runs `seconds`, prints its transfer count.
WORKER = textwrap.dedent(
    """
    import random, sqlite3, sys, time
    sys.path.insert(0, {here!r})
    mode, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    n = {n}
    if mode in ("colors", "plain"):
        import colors_shm as cs
        from bench_types import Account
        accounts = list(cs.repository({repo!r}).get())
        def transfer(a, b, amount):
            a.balance -= amount
            b.balance += amount
        if mode == "colors":
            step = lambda i, j, amount: cs.atomically(transfer, accounts[i], accounts[j], amount, retries=1_000_000)
        else:
            step = lambda i, j, amount: transfer(accounts[i], accounts[j], amount)
    else:
        db = sqlite3.connect(sys.argv[4], isolation_level=None, timeout=60)
        db.execute("PRAGMA synchronous=OFF")
        if sys.argv[4] == ":memory:":
            db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
            db.executemany("INSERT INTO accounts VALUES (?, ?)", [(i, 1000) for i in range(n)])
        def step(i, j, amount):
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, i))
            db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, j))
            db.execute("COMMIT")
    print("ready", flush=True)
    sys.stdin.readline()
    count = 0
    end = time.perf_counter() + seconds
    while True:
        for _ in range(64):
            i = rng.randrange(n)
            j = rng.randrange(n - 1)
            if j >= i:
                j += 1
            step(i, j, rng.randrange(100))
        count += 64
        if time.perf_counter() >= end:
            break
    print(count, flush=True)
    """
)


def run_workers(mode: str, procs: int, seconds: float, extra: list[str]) -> float:
    """Transfers per second of `procs` worker processes started together."""
    code = WORKER.format(here=str(HERE), n=N_ACCOUNTS, repo=REPO)
    ps = [subprocess.Popen([sys.executable, "-c", code, mode, str(seconds), str(k + 1), *extra],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env())
          for k in range(procs)]
    for p in ps:
        assert p.stdout.readline().strip() == "ready"
    t0 = time.perf_counter()
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    counts = [int(p.stdout.readline()) for p in ps]
    elapsed = time.perf_counter() - t0
    for p in ps:
        p.wait()
    return sum(counts) / elapsed


def bank_worker_bin() -> str | None:
    """The C++ bank worker: $COLORS_BANK_WORKER_BIN, else next to the server in the build dir."""
    path = os.environ.get("COLORS_BANK_WORKER_BIN")
    if path:
        return path
    server = os.environ.get("COLORS_SERVER_BIN") or str(HERE.parent.parent / "build" / "colors-server" / "colors-server")
    p = pathlib.Path(server).resolve().parent.parent / "tests" / "bank" / "bank-worker"
    return str(p) if p.exists() else None


def run_cpp_workers(binary: str, socket: str, procs: int, seconds: float) -> float:
    """Transfers per second of `procs` C++ bank workers running `seconds` at once."""
    ps = [subprocess.Popen([binary, "--socket", socket, "--seed", str(k + 1), "--seconds", str(seconds)],
                           stdout=subprocess.PIPE, text=True, env=child_env())
          for k in range(procs)]
    total = 0
    for p in ps:
        out, _ = p.communicate(timeout=seconds + 60)
        if p.returncode != 0:
            raise SystemExit(f"bank-worker exited with {p.returncode}")
        counts = [int(line.split()[1]) for line in out.splitlines() if line.startswith("transfers ")]
        total += counts[-1]
    return total / seconds


def sqlite_db(path: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    db.executemany("INSERT INTO accounts VALUES (?, ?)", [(i, 1000) for i in range(N_ACCOUNTS)])
    db.close()


def best_ns(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        best = min(best, time.perf_counter_ns() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    seconds = 0.5 if args.quick else 2.0
    repeat = 5 if args.quick else 15

    srv = Server(heap="256M")
    os.environ["COLORS_SOCKET"] = srv.socket
    import colors_shm as cs

    try:
        accounts = cs.copy_to([Account(1000) for _ in range(N_ACCOUNTS)])
        cs.repository(REPO).set(accounts)
        plist = list(accounts)
        total_before = sum(a.balance for a in plist)

        print(f"transfers between {N_ACCOUNTS} accounts (per second, all processes together; {seconds:g} s per run)")
        print(f"  {'':<30}{'colors':>12}{'sqlite3':>12}{'ratio':>8}")
        with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as d:
            path = os.path.join(d, "bank.db")
            sqlite_db(path)
            cpp = bank_worker_bin()
            if cpp is not None:
                subprocess.run([cpp, "--socket", srv.socket, "--setup", str(N_ACCOUNTS)], check=True,
                               stdout=subprocess.DEVNULL, env=child_env())
            for procs, db, where in ((1, ":memory:", "sqlite3 :memory:"), (2, path, "sqlite3 file in /dev/shm, WAL")):
                tx = run_workers("colors", procs, seconds, [])
                plain = run_workers("plain", procs, seconds, [])
                sql = run_workers("sqlite", procs, seconds, [db])
                label = f"{procs} process{'es' if procs > 1 else ''}"
                print(f"  {label + ', atomically':<30}{tx:>12,.0f}{sql:>12,.0f}{tx / sql:>8.2f}   ({where})")
                print(f"  {label + ', no transaction':<30}{plain:>12,.0f}{'':>12}{tx / plain:>8.2f}   (atomically / plain)")
                if cpp is not None:
                    c = run_cpp_workers(cpp, srv.socket, procs, seconds)
                    print(f"  {label + ', C++ atomically':<30}{c:>12,.0f}{sql:>12,.0f}{c / sql:>8.2f}   ({where}, from Python)")
                else:
                    print(f"  {label + ', C++ atomically':<30}   (bank-worker not built: row skipped)")
        # The plain runs lose updates (not atomic); the atomic ones do not: only the plain runs may
        # change the total.
        print(f"  total of balances: {total_before} before, {sum(a.balance for a in plist)} after "
              "(the runs without a transaction may lose updates)")

        trees = cs.copy_to([make_tree(4, k) for k in range(1024)])
        nodes = 1024 * 15

        def walk_inside():
            with cs.transaction():
                walk(trees)

        def sum_inside():
            with cs.transaction():
                sum(a.balance for a in accounts)

        print(f"\nread-only traversals (ns per object, best of {repeat})")
        print(f"  {'':<34}{'outside':>12}{'inside tx':>12}{'ratio':>8}")
        out_w = best_ns(lambda: walk(trees), repeat) / nodes
        in_w = best_ns(walk_inside, repeat) / nodes
        print(f"  {'1024 depth-4 trees, every field':<34}{out_w:>12.0f}{in_w:>12.0f}{in_w / out_w:>8.2f}")
        out_s = best_ns(lambda: sum(a.balance for a in accounts), repeat) / N_ACCOUNTS
        in_s = best_ns(sum_inside, repeat) / N_ACCOUNTS
        print(f"  {'sum of 1000 account balances':<34}{out_s:>12.0f}{in_s:>12.0f}{in_s / out_s:>8.2f}")
    finally:
        cs.detach()
        srv.stop()


if __name__ == "__main__":
    main()
