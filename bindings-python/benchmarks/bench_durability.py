"""Durable transactions from Python: transfers between shared accounts in colors_shm.atomically on a
server with --data-dir and --durability full|async|none, against the same transfers through
Python's sqlite3 on a database file on disk, in WAL mode, with synchronous=FULL|NORMAL|OFF.

Each colors level is paired with the sqlite3 setting that promises about the same:
  * full  / FULL:   a commit returns once it is on disk (colors: a log record covering it is
                    fdatasync'ed, group commit; sqlite3: the WAL is fsync'ed at every commit);
  * async / NORMAL: a commit may be lost in a crash of the machine, not of the process (colors: a
                    log record at most every --async-delay ms; sqlite3: the WAL is fsync'ed only at
                    its checkpoints);
  * none  / OFF:    no sync at commit (colors: checkpoints only; sqlite3: never fsyncs).
A transfer debits one account and credits another, both chosen at random among 1000, from each
number of worker processes committing at once given by --procs (default 1,2) (colors: `atomically`;
sqlite3: BEGIN IMMEDIATE; two UPDATEs; COMMIT).
The colors data directory and the sqlite3 file are in one temporary directory on a disk file
system (default: the system's temp dir; --dir; tmpfs is refused, since nothing there reaches a
disk). Rounds are interleaved (each round measures every configuration once) and the table shows
medians over the rounds: transfers per second of each side, the median of the per-round ratios
colors/sqlite3, and for 1 process the median and p99 latency of one commit (one atomically() call,
one BEGIN..COMMIT). From each server's log (--log-level debug) it counts the durability log records
written during the runs and their median page count, clients-stopped time and write+sync time.
After every colors run the sum of all balances is checked (it must not change); the same for
sqlite3 at the end.
Starts its own colors-servers (as the tests do: $COLORS_SERVER_BIN or build/colors-server).
`--quick`: shorter runs. `--procs 1,2,4,8`: more processes committing at once (group commit).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from conftest import Server, child_env  # noqa: E402  (the tests' server launcher)

N_ACCOUNTS = 1000
START_BALANCE = 1000
REPO = "bench.durability.accounts"
# (colors --durability, sqlite3 PRAGMA synchronous)
LEVELS = (("full", "FULL"), ("async", "NORMAL"), ("none", "OFF"))

# Creates the accounts in a fresh server (`setup`) or prints the sum of their balances (`sum`).
ACCOUNTS = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {here!r})
    import colors_shm as cs
    from bench_types import Account
    if sys.argv[1] == "setup":
        cs.repository({repo!r}).set(cs.copy_to([Account({start}) for _ in range({n})]))
    balances = [a.balance for a in cs.repository({repo!r}).get()]
    print(len(balances), sum(b != {start} for b in balances), sum(balances), flush=True)
    """
)

# One worker process: `colors` (atomically) or `sqlite PATH SYNCHRONOUS`. Waits for a line on
# stdin, runs `seconds`, prints its transfer count, the median and p99 latency of one commit in
# ns, and how many commits raised DurabilityError (committed in memory, not made durable).
WORKER = textwrap.dedent(
    """
    import random, sqlite3, sys, time
    sys.path.insert(0, {here!r})
    mode, seconds, seed = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    n = {n}
    errors = 0
    if mode == "colors":
        import colors_shm as cs
        from bench_types import Account
        accounts = list(cs.repository({repo!r}).get())
        def transfer(a, b, amount):
            a.balance -= amount
            b.balance += amount
        def step(i, j, amount):
            global errors
            try:
                cs.atomically(transfer, accounts[i], accounts[j], amount, retries=1_000_000)
            except cs.DurabilityError:
                errors += 1
    else:
        db = sqlite3.connect(sys.argv[4], isolation_level=None, timeout=60)
        db.execute("PRAGMA synchronous=" + sys.argv[5])
        def step(i, j, amount):
            db.execute("BEGIN IMMEDIATE")
            db.execute("UPDATE accounts SET balance = balance - ? WHERE id = ?", (amount, i))
            db.execute("UPDATE accounts SET balance = balance + ? WHERE id = ?", (amount, j))
            db.execute("COMMIT")
    clock = time.perf_counter_ns
    lat = []
    print("ready", flush=True)
    sys.stdin.readline()
    count = 0
    end = clock() + int(seconds * 1e9)
    while True:
        for _ in range(16):
            i = rng.randrange(n)
            j = rng.randrange(n - 1)
            if j >= i:
                j += 1
            amount = rng.randrange(100)
            t0 = clock()
            step(i, j, amount)
            lat.append(clock() - t0)
        count += 16
        if clock() >= end:
            break
    lat.sort()
    print(count, lat[len(lat) // 2], lat[min(len(lat) - 1, len(lat) * 99 // 100)], errors, flush=True)
    """
)

RECORD = re.compile(
    r"log record \d+ after checkpoint \d+: (\d+) page\(s\); (\d+) client process\(es\) stopped for (\d+) us[^;]*; "
    r"captured in \d+ us, appended and synced in (\d+) us"
)
CHECKPOINT = re.compile(r"checkpoint \d+ written to \S+: (\d+) B of data in \d+ extent\(s\); \d+ client process\(es\) "
                        r"stopped for (\d+) us")


class Run:
    """One measurement: transfers per second of all workers together; latency of worker 0."""

    def __init__(self, rate: float, p50_ns: int, p99_ns: int, errors: int):
        self.rate, self.p50_ns, self.p99_ns, self.errors = rate, p50_ns, p99_ns, errors


def run_workers(procs: int, seconds: float, args: list[str], socket: str | None) -> Run:
    code = WORKER.format(here=str(HERE), n=N_ACCOUNTS, repo=REPO)
    env = child_env(socket)
    ps = [subprocess.Popen([sys.executable, "-c", code, args[0], str(seconds), str(k + 1), *args[1:]],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
          for k in range(procs)]
    for p in ps:
        line = p.stdout.readline().strip()
        if line != "ready":
            raise SystemExit(f"worker {args[0]} did not start (exit {p.wait()})")
    t0 = time.perf_counter()
    for p in ps:
        p.stdin.write("go\n")
        p.stdin.flush()
    results = [p.stdout.readline().split() for p in ps]
    elapsed = time.perf_counter() - t0
    for p in ps:
        if p.wait() != 0 or len(results[0]) != 4:
            raise SystemExit(f"worker {args[0]} failed (exit {p.returncode})")
    counts = [int(r[0]) for r in results]
    return Run(sum(counts) / elapsed, int(results[0][1]), int(results[0][2]), sum(int(r[3]) for r in results))


def colors_accounts(socket: str, command: str) -> tuple[int, int, int]:
    """(accounts, accounts whose balance is not the starting one, total of balances)."""
    code = ACCOUNTS.format(here=str(HERE), repo=REPO, n=N_ACCOUNTS, start=START_BALANCE)
    out = subprocess.run([sys.executable, "-c", code, command], stdout=subprocess.PIPE, text=True,
                         env=child_env(socket), check=True, timeout=60).stdout
    n, changed, total = (int(x) for x in out.split()[-3:])
    return n, changed, total


def sqlite_db(path: str) -> None:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL)")
    db.executemany("INSERT INTO accounts VALUES (?, ?)", [(i, START_BALANCE) for i in range(N_ACCOUNTS)])
    db.close()


def sqlite_sum(path: str) -> int:
    db = sqlite3.connect(path)
    try:
        return db.execute("SELECT sum(balance) FROM accounts").fetchone()[0]
    finally:
        db.close()


def file_system(path: str) -> tuple[str, str]:
    """(type, device) of the file system holding `path`: the longest mount point above it."""
    path = os.path.realpath(path)
    best = ("", "?", "?")
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            mnt = mnt.replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, fstype, dev)
    return best[1], best[2]


def records_since(log_path: str, offset: int) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int]], int]:
    """What the server logged after `offset` of its log: the durability log records (pages,
    processes stopped, stop us, write+sync us), the checkpoints (bytes of data, stop us); and the
    new offset."""
    with open(log_path, "rb") as f:
        f.seek(offset)
        data = f.read()
    # Only whole lines: a line being written stays for the next call.
    cut = data.rfind(b"\n") + 1
    text = data[:cut].decode(errors="replace")
    recs = [tuple(int(g) for g in m.groups()) for m in RECORD.finditer(text)]
    cps = [tuple(int(g) for g in m.groups()) for m in CHECKPOINT.finditer(text)]
    return recs, cps, offset + cut


def procs_list(text: str) -> tuple[int, ...]:
    """--procs: comma-separated worker process counts, each at least 1, no repeats."""
    try:
        counts = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text!r}") from None
    if any(c < 1 for c in counts) or len(set(counts)) != len(counts):
        raise argparse.ArgumentTypeError(f"process counts must be at least 1 and distinct: {text!r}")
    return counts


def med(xs) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="short runs (under a minute)")
    ap.add_argument("--dir", default=tempfile.gettempdir(),
                    help="where the temporary directory with the sqlite3 file and the colors data directory goes "
                         "(a disk file system; default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default: 3, --quick 2)")
    ap.add_argument("--seconds", type=float, default=None, help="seconds per run (default: 2.5, --quick 0.5)")
    ap.add_argument("--procs", type=procs_list, default=(1, 2), metavar="LIST",
                    help="comma-separated numbers of worker processes committing at once; every configuration "
                         "runs with each (default: 1,2)")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 3)
    seconds = args.seconds or (0.5 if args.quick else 2.5)
    proc_counts = args.procs

    fstype, dev = file_system(args.dir)
    if fstype in ("tmpfs", "ramfs"):
        raise SystemExit(f"--dir {args.dir} is on {fstype}: nothing there reaches a disk; give a disk file system")
    work = tempfile.mkdtemp(prefix="colors-bench-durability-", dir=args.dir)
    servers: dict[str, Server] = {}
    logs: dict[str, str] = {}
    try:
        db_path = os.path.join(work, "bank.db")
        sqlite_db(db_path)
        total = N_ACCOUNTS * START_BALANCE
        for level, _ in LEVELS:
            data_dir = os.path.join(work, f"data-{level}")
            logs[level] = os.path.join(work, f"server-{level}.log")
            extra = ["--data-dir", data_dir, "--durability", level, "--log-level", "debug"]
            servers[level] = Server(heap="64M", extra=tuple(extra), log=logs[level])
            got = colors_accounts(servers[level].socket, "setup")
            if got != (N_ACCOUNTS, 0, total):
                raise SystemExit(f"colors {level}: setup made (accounts, changed, total) {got}")

        print(f"durable transfers between {N_ACCOUNTS} accounts: colors atomically vs sqlite3 (WAL, file on disk)")
        print(f"  data: {work} ({fstype} on {dev}); {rounds} rounds x {seconds:g} s per run, interleaved")
        # results[(level, side, procs)] = [Run per round]; recs[(level, procs)] = [record tuples]
        results: dict[tuple[str, str, int], list[Run]] = {}
        recs: dict[tuple[str, int], list[tuple[int, int, int, int]]] = {}
        checkpoints: dict[str, list[tuple[int, int]]] = {level: [] for level, _ in LEVELS}
        offsets = {level: 0 for level, _ in LEVELS}
        for r in range(rounds):
            for level, sync in LEVELS:
                sock = servers[level].socket
                for procs in proc_counts:
                    _, cps, offsets[level] = records_since(logs[level], offsets[level])  # setup, checks
                    checkpoints[level] += cps
                    run = run_workers(procs, seconds, ["colors"], sock)
                    # The server logs a record after its sync; give the last one time to appear.
                    time.sleep(0.05)
                    new, cps, offsets[level] = records_since(logs[level], offsets[level])
                    recs.setdefault((level, procs), []).extend(new)
                    checkpoints[level] += cps
                    results.setdefault((level, "colors", procs), []).append(run)
                    n, changed, got = colors_accounts(sock, "sum")
                    # `changed`: the transfers did reach the accounts (a few may be back at the start).
                    if n != N_ACCOUNTS or got != total or changed < N_ACCOUNTS // 2:
                        raise SystemExit(f"colors {level}, {procs} process(es), round {r + 1}: {n} accounts, "
                                         f"{changed} changed, total of balances {got}, expected {total}")
                    sq = run_workers(procs, seconds, ["sqlite", db_path, sync], None)
                    results.setdefault((level, "sqlite", procs), []).append(sq)
            print(f"  round {r + 1}/{rounds} done", flush=True)
        got = sqlite_sum(db_path)
        if got != total:
            raise SystemExit(f"sqlite3: total of balances {got}, expected {total}")

        print()
        print("transfers per second (all processes together; medians over rounds), ratio = median of per-round "
              "colors/sqlite3 (range: lowest-highest per-round ratio)")
        print(f"  {'colors / sqlite3 synchronous':<30}{'procs':>6}{'colors':>11}{'sqlite3':>11}{'ratio':>8}{'range':>12}"
              f"{'colors p50':>12}{'p99':>9}{'sqlite p50':>12}{'p99':>9}")
        errors = 0
        for level, sync in LEVELS:
            for procs in proc_counts:
                c, s = results[(level, "colors", procs)], results[(level, "sqlite", procs)]
                errors += sum(x.errors for x in c)
                ratios = [a.rate / b.rate for a, b in zip(c, s)]
                line = (f"  {level + ' / ' + sync:<30}{procs:>6}{med([x.rate for x in c]):>11,.0f}"
                        f"{med([x.rate for x in s]):>11,.0f}{med(ratios):>8.2f}"
                        f"{f'{min(ratios):.2f}-{max(ratios):.2f}':>12}")
                if procs == 1:
                    us = lambda runs, attr: med([getattr(x, attr) for x in runs]) / 1000  # noqa: E731
                    line += (f"{us(c, 'p50_ns'):>10.1f}us{us(c, 'p99_ns'):>7.0f}us"
                             f"{us(s, 'p50_ns'):>10.1f}us{us(s, 'p99_ns'):>7.0f}us")
                print(line)
        print("  (latency: one atomically() call / one BEGIN..COMMIT, 1 process; medians over rounds of the "
              "per-run median and p99)")
        if errors:
            print(f"  {errors} commit(s) raised DurabilityError (committed in memory, not made durable)")
        print(f"  total of balances unchanged after every run: colors {total} (each level), sqlite3 {total}")

        print()
        print("colors durability log records written during the runs (server log, --log-level debug)")
        print(f"  {'level':<8}{'procs':>6}{'records':>9}{'per s':>9}{'commits/rec':>13}{'pages':>7}{'stopped':>10}"
              f"{'procs':>7}{'write+sync':>12}")
        for level, _ in LEVELS:
            for procs in proc_counts:
                rs = recs.get((level, procs), [])
                runs = results[(level, "colors", procs)]
                if not rs:
                    print(f"  {level:<8}{procs:>6}{0:>9}")
                    continue
                commits = sum(x.rate * seconds for x in runs)
                print(f"  {level:<8}{procs:>6}{len(rs):>9}{len(rs) / (seconds * len(runs)):>9.0f}"
                      f"{commits / len(rs):>13.1f}{med([x[0] for x in rs]):>7.0f}{med([x[2] for x in rs]):>8.0f}us"
                      f"{med([x[1] for x in rs]):>7.0f}{med([x[3] for x in rs]):>10.0f}us")
        print("  (medians per record: pages written, clients-stopped time, client processes stopped, "
              "append+fdatasync time)")
        for level, _ in LEVELS:
            cps = checkpoints[level]
            if cps:
                print(f"  {level}: {len(cps)} full checkpoint(s) since the server started, the last of "
                      f"{cps[-1][0] / 2**20:.1f} MiB of data (what a record compares page by page when write "
                      f"tracking cannot vouch for the pages written), clients stopped for "
                      f"{med([x[1] for x in cps]):.0f} us (median)")
    finally:
        for srv in servers.values():
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
