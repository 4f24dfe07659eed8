#!/usr/bin/env python3
"""The Python worker of the cross-language bank test (transactions).

    python3 tests/bank/bank_worker.py --socket PATH --seed N [--seconds S] [--counter I]

Repository ``bank.accounts`` holds a shared list of user objects of class ``bank.Account`` with an
integer field ``balance`` (made by the driver). The worker loops: in ``colors_shm.atomically``, it
picks two different accounts at random and moves an amount in [0, 100) from one to the other, so
the sum of the balances never changes for a transaction that can see it. It prints
``transfers <count>`` (flushed) about every 0.5 s and once more when it exits: after ``--seconds``,
on SIGTERM or SIGINT, or never (SIGKILL: the server rolls back the transaction it was in).
With ``--counter I`` each transfer also adds 1 to ``bank.counters[I]`` in the same transaction;
the worker prints ``start <value>`` (the counter when it began) and ``committed <value>`` after
every commit, so the driver can check that no acknowledged commit is lost.
Needs colors_shm importable (PYTHONPATH=<build>/bindings-python).
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time

import colors_shm as cs


@cs.register
class Account:
    """One bank account; the shared class every language of the bank test uses."""

    __colors_name__ = "bank.Account"
    balance: int


def transfer(a: Account, b: Account, amount: int, counter: Account | None) -> int:
    a.balance -= amount
    b.balance += amount
    if counter is None:
        return 0
    counter.balance += 1
    return counter.balance


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--socket", required=True, help="the colors-server socket")
    ap.add_argument("--seed", type=int, required=True, help="seed of the random transfers")
    ap.add_argument("--seconds", type=float, default=None, help="stop after this many seconds (default: run until killed)")
    ap.add_argument("--counter", type=int, default=None, help="index in bank.counters of this worker slot's counter")
    args = ap.parse_args()

    def stop(signum, frame):  # a clean exit that prints the final count
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    cs.attach(args.socket)

    deadline = time.monotonic() + 30
    accounts = cs.repository("bank.accounts").get()
    while accounts is None or len(accounts) < 2:
        if time.monotonic() > deadline:
            print("bank_worker: repository bank.accounts holds no list of two or more accounts", file=sys.stderr)
            return 2
        time.sleep(0.05)
        accounts = cs.repository("bank.accounts").get()
    accounts = list(accounts)  # the driver does not change the list, only the balances
    n = len(accounts)
    counter = None
    if args.counter is not None:
        counters = cs.repository("bank.counters").get()
        if counters is None or args.counter >= len(counters):
            print(f"bank_worker: bank.counters has no counter {args.counter}", file=sys.stderr)
            return 2
        counter = counters[args.counter]
        print(f"start {cs.atomically(lambda: counter.balance)}", flush=True)

    rng = random.Random(args.seed)
    end = None if args.seconds is None else time.monotonic() + args.seconds
    count = 0
    next_report = time.monotonic() + 0.5
    try:
        while True:
            i = rng.randrange(n)
            j = rng.randrange(n - 1)
            if j >= i:
                j += 1
            # 1000 retries, as the C++ worker: a killed worker's objects stay held until the server
            # rolls its transaction back, which a successor that never heard from it does only at
            # its once-a-second check of kept slots (tests/bank/run --server-kills); 100 retries
            # (about 0.4 s of backoff) can run out before.
            counted = cs.atomically(transfer, accounts[i], accounts[j], rng.randrange(100), counter, retries=1000)
            count += 1
            if counter is not None:  # after every commit: a kill leaves at most one unreported
                print(f"committed {counted}", flush=True)
            now = time.monotonic()
            if now >= next_report:
                print(f"transfers {count}", flush=True)
                next_report = now + 0.5
            if end is not None and now >= end:
                break
    except KeyboardInterrupt:
        pass
    finally:
        print(f"transfers {count}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
