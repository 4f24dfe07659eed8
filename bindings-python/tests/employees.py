"""Classes shared by the user-class tests and the child processes they start (importable by name,
as a class of another program would be)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class Employee:
    """The paper's example (section 3.1.2)."""

    name: str
    salary: float
    manager: Optional[Employee] = None

    def raise_salary(self, percent: float) -> float:
        self.salary = self.salary * (1 + percent / 100)
        return self.salary


class Point:
    """A plain annotated class with a class default and a method."""

    x: int
    y: int
    label: str = "origin"

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)


class Node:
    """A __slots__ class without annotations: fields of any type."""

    __slots__ = ("value", "left", "right", "parent")

    def __init__(self, value=None, left=None, right=None):
        self.value = value
        self.left = left
        self.right = right
        self.parent = None
