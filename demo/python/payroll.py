"""The payroll process of `make demo` (Python): waits for the staff list the C++ hr process
publishes, gives everyone a raise through its own Employee class (the objects are the C++ ones:
nothing is copied), moves one employee to another state (a new field: a new version of the
class, same object), asks the Java audit service for a report over rpc, and answers hr through a
channel."""

from __future__ import annotations

import os
import time

import colors_shm as cs
from colors_shm import rpc


@cs.register  # the C++ process defines the shared class "demo.Employee"
class Employee:
    __colors_name__ = "demo.Employee"
    name: str
    salary: float

    def raise_salary(self, percent: float) -> None:
        self.salary = self.salary * (1 + percent / 100)


def audit() -> rpc.Client:
    """The Java audit service (started next to us; give its JVM a moment to come up)."""
    deadline = time.monotonic() + 20
    while True:
        try:
            return rpc.connect("audit", timeout=20)
        except rpc.UnavailableError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def main() -> int:
    me = f"[payroll {os.getpid()} python]"
    repo = cs.repository("staff")
    with cs.synchronized(repo):
        while repo.get() is None:
            if not cs.wait(repo, timeout=10):
                print(f"{me} no staff list within 10 s")
                return 1
    staff = repo.get()
    for e in staff:
        assert isinstance(e, Employee)  # the C++ objects, seen as this Python class
        e.raise_salary(10)
    staff[0].state = "NY"
    print(f"{me} raised {len(staff)} salaries by 10% through Employee.raise_salary, moved {staff[0].name} to NY "
          f"(now {cs.shared_type(staff[0])})")
    report = audit().report(staff)  # the Java process reads the same list
    print(f"{me} the Java audit service says: {report}")
    cs.channel("payroll-done").send(f"raises applied; audit: {report}")
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        cs.detach()
    raise SystemExit(rc)
