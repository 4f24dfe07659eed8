"""colors with spinning off at both ends: the colors adapter (frameworks/colors.py) with a spin
budget of 0, so the Python client blocks on a futex as soon as its call is sent and the Java
server's threads block as soon as their queue is empty. Every call then pays two cross-core
futex wake-ups (~55 µs per round trip on this machine) and burns no CPU while it waits: the
other end of the spin budget from the `colors` row, which spins first (libshared's defaults)."""

from __future__ import annotations

from . import colors


class Adapter(colors.Adapter):
    name = "colors_nospin"
    spin_ns = 0
