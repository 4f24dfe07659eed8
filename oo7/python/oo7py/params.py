"""The SPEC's parameters per size and its SplitMix64 generator."""

from __future__ import annotations

from dataclasses import dataclass

MASK64 = (1 << 64) - 1


@dataclass(frozen=True)
class Params:
    num_atomic_per_comp: int
    num_conn_per_atomic: int
    document_size: int
    num_comp_per_module: int
    num_assm_per_assm: int
    num_assm_levels: int
    num_comp_per_assm: int
    num_modules: int


SIZES = {
    "small": Params(20, 3, 2000, 500, 3, 7, 3, 1),
    "medium": Params(200, 3, 20000, 500, 3, 7, 3, 1),
}


def params(size: str) -> Params:
    try:
        return SIZES[size]
    except KeyError:
        raise ValueError(f"unknown OO7 size {size!r}: use one of {', '.join(SIZES)}") from None


class SplitMix64:
    """SplitMix64 over unsigned 64-bit wrapping arithmetic (the SPEC's generator)."""

    __slots__ = ("state",)

    def __init__(self, seed: int):
        self.state = seed & MASK64

    def next(self) -> int:
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def rand(self, n: int) -> int:
        return self.next() % n

    def type(self) -> str:
        return "type%03d" % self.rand(10)

    def date(self) -> int:
        return 1000 + self.rand(1000)
