"""The user class of the transaction tests and the child processes they start (importable by
name, as a class of another program would be)."""

from __future__ import annotations

from typing import Optional


class Account:
    """A bank account with one field of each kind the transaction tests read and write."""

    balance: int
    name: str
    ratio: float
    flag: bool
    data: object  # any shared value
    friend: Optional[Account]
