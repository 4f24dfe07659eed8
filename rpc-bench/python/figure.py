"""The paper's Figure 3: time per call vs list size, one line per element kind, one panel per
framework (paper's variant on top, read variant below when measured)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import workload  # noqa: E402


def pick_frameworks(results: dict, wanted: list[str] | None) -> list[str]:
    """The frameworks to draw: `wanted` where measured, else colors vs grpc, else grpc vs the
    peer with the highest depth-4-tree throughput (paper's variant)."""
    measured = [f for f in results["frameworks"] if f in results["fits"]]
    if wanted:
        chosen = [f for f in wanted if f in measured]
        if chosen:
            return chosen
    if "colors" in measured and "grpc" in measured:
        return ["colors", "grpc"]
    if not measured:
        return []
    first = "grpc" if "grpc" in measured else measured[0]
    others = [f for f in measured if f != first]

    def tp(f):
        kinds = results["fits"][f].get("paper", {})
        for k in ("tree4", "tree3", "tree2", "tree1", "int"):
            if kinds.get(k, {}).get("throughput_per_ms"):
                return kinds[k]["throughput_per_ms"]
        return 0.0

    return [first] + ([max(others, key=tp)] if others else [])


def draw(results: dict, frameworks: list[str], path: str) -> None:
    variants = [v for v in ("paper", "read")
                if any(c["variant"] == v and c["framework"] in frameworks for c in results["cells"])]
    fig, axes = plt.subplots(len(variants), len(frameworks), squeeze=False,
                             figsize=(5.5 * len(frameworks), 4.2 * len(variants)))
    for row, variant in enumerate(variants):
        for col, fw in enumerate(frameworks):
            ax = axes[row][col]
            for kind in workload.KINDS:
                pts = sorted((c["n"], c["per_call_s"]) for c in results["cells"]
                             if c["framework"] == fw and c["variant"] == variant and c["kind"] == kind)
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] * 1e3 for p in pts], marker="o",
                            markersize=3, label=kind.replace("tree", "nodes:"))
            ax.set_title(f"{fw} ({variant} variant)")
            ax.set_xlabel("list size (elements)")
            ax.set_ylabel("time per call (ms)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
    meta = results["meta"]
    fig.suptitle(f"Figure 3: time vs list size, Python client → Java server ({meta['date']})",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
