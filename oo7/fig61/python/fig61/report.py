"""The table, the cost model and the figure of a Figure 6-1 run (results.json's dict)."""

from __future__ import annotations


def _t(s: float) -> str:
    if s == 0:
        return "0"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.2f} µs"


def markdown(r: dict) -> str:
    out = [f"T1 on OO7 {r['size']} (seed {r['seed']}): {r['visits']:,} visits, visit order {r['visit_order']} "
           f"in every row; {sum(r['accesses'].values()):,} object accesses. Mode {r['mode']}, "
           f"load average {r['load_average'][0]:.1f} at the end, {r['cpus']} CPUs.", ""]
    out += ["| row | time | requests (X) | calls (N) | time per request | time per call | ratio to direct |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        x, n, t = row["requests"], row["calls"], row["time"]
        out.append(f"| {row['label']} | {_t(t)} | {x:,} | {n:,} | {_t(t / x) if x else '-'} | {_t(t / n)} "
                   f"| {row['ratio']:,.1f}x |")
    if r["skipped"]:
        out += ["", "Skipped in this mode: " + ", ".join(r["skipped"]) + "."]
    out += ["", f"Cost model T = X·C + N·S + R_C + R_S (oo7/fig61/python/fig61/costmodel.py): "
            f"C = {_t(r['C']['colors'])} (colors null call), {_t(r['C']['grpc'])} (gRPC null call); "
            f"R_C = {_t(r['R_C'])} (T1 over the private Python copy).", "",
            "| row | T | X·C | N·S | R_C | R_S | S per call |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        m = row["model"]
        out.append(f"| {row['label']} | {_t(m['T'])} | {_t(m['XC'])} | {_t(m['NS']) if m['NS'] >= 0 else '−' + _t(-m['NS'])} "
                   f"| {_t(m['R_C'])} | {_t(m['R_S'])} | {_t(m['S']) if m['S'] >= 0 else '−' + _t(-m['S'])} |")
    return "\n".join(out) + "\n"


def figure(r: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = r["rows"]
    labels = [row["label"].replace(", ", "\n") for row in rows]
    times = [row["time"] for row in rows]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    colors = ["#2a7" if row["transport"] is None else "#37c" if row["transport"] == "colors" else "#c63" for row in rows]
    bars = ax.bar(range(len(rows)), times, color=colors)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("T1 time (s, log scale)")
    ax.set_title(f"OO7 T1 ({r['size']}, {r['visits']:,} visits): Python client, Java server's database")
    for b, row in zip(bars, rows):
        ratio = f"{row['ratio']:,.1f}x" if row["ratio"] < 10 else f"{row['ratio']:,.0f}x"
        ax.annotate(f"{_t(row['time'])}\n{ratio}" if row["key"] != "direct" else _t(row["time"]),
                    (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_ylim(min(times) / 3, max(times) * 4)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
