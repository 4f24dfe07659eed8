"""Framework adapters of rpc-bench: one module per framework, each defining `Adapter`.

Adding a framework is adding one module here (e.g. colors.py): every module of this package whose
name does not start with "_" and is not "base" is a framework. ORDER fixes the order of rows in
the results; names not in it come after, alphabetically.
"""

from __future__ import annotations

import importlib
import pkgutil

ORDER = ("colors", "colors_nospin", "grpc", "thrift", "protobuf_tcp", "rest")
NOT_FRAMEWORKS = {"base"}


def discover() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(__path__)
             if not m.name.startswith("_") and m.name not in NOT_FRAMEWORKS]
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def load(name: str):
    """A new Adapter of framework `name`."""
    return importlib.import_module(f"{__name__}.{name}").Adapter()
