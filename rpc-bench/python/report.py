"""results.json -> results.md: the paper's Tables 2 and 3 (throughput and latency per framework
and kind, with ratios against a reference framework), the raw cell times, and section 6.6."""

from __future__ import annotations

import workload

FLOOR = "private"  # pseudo-framework: reading private Python objects (read variant only)


def _num(x, digits=3) -> str:
    if x is None:
        return "flat"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _ratio(r) -> str:
    if r is None:
        return "—"
    return f"{r:.1f}" if r >= 10 else (f"{r:.2f}" if r >= 0.1 else f"{r:.2g}")


def _div(a, b):
    return a / b if a and b else None


def reference(results: dict) -> str:
    return results["reference"]


def tables(results: dict) -> list[str]:
    fits = results["fits"]
    ref = reference(results)
    kinds = [k for k in workload.KINDS if k in results["kinds"]]
    frameworks = [f for f in results["frameworks"] if f in fits]
    lines = []
    for variant, title in (("paper", "paper's variant: the client only receives the reply"),
                           ("read", "read variant: the client also reads every element and field")):
        rows = [f for f in frameworks if variant in fits[f]]
        if variant == "read" and FLOOR in fits:
            rows.append(FLOOR)
        if not rows:
            continue
        reff = fits.get(ref, {}).get(variant, {})
        head = "| framework | " + " | ".join(kinds) + " |"
        sep = "|---|" + "---:|" * len(kinds)
        lines += [f"### Throughput in elements/ms — {title}", "",
                  f"In parentheses: {ref}/framework throughput ratio (>1: {ref} is faster).", "",
                  head, sep]
        for fw in rows:
            f = fits[fw]["read" if fw == FLOOR else variant]
            cells = []
            for k in kinds:
                tp = f.get(k, {}).get("throughput_per_ms")
                cells.append(f"{_num(tp)} ({_ratio(_div(reff.get(k, {}).get('throughput_per_ms'), tp))})")
            label = "private objects (read floor)" if fw == FLOOR else fw
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines += ["", f"### Latency in µs (time per call at size 1) — {title}", "",
                  f"In parentheses: framework/{ref} latency ratio (>1: {ref} is faster).", "",
                  head, sep]
        for fw in rows:
            f = fits[fw]["read" if fw == FLOOR else variant]
            cells = []
            for k in kinds:
                lat = f.get(k, {}).get("latency_us")
                cells.append(f"{_num(lat)} ({_ratio(_div(lat, reff.get(k, {}).get('latency_us')))})")
            label = "private objects (read floor)" if fw == FLOOR else fw
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def raw_tables(results: dict) -> list[str]:
    kinds = [k for k in workload.KINDS if k in results["kinds"]]
    by = {}
    for c in results["cells"]:
        by[(c["framework"], c["variant"], c["kind"], c["n"])] = c["per_call_s"]
    lines = ["## Measured time per call (µs, median of rounds)", ""]
    for fw in list(results["frameworks"]) + [FLOOR]:
        for variant in ("paper", "read"):
            sizes = sorted({n for (f, v, _, n) in by if f == fw and v == variant})
            if not sizes:
                continue
            lines += [f"### {fw}, {variant}", "", "| n | " + " | ".join(kinds) + " |",
                      "|---:|" + "---:|" * len(kinds)]
            for n in sizes:
                vals = [by.get((fw, variant, k, n)) for k in kinds]
                lines.append(f"| {n} | " + " | ".join(
                    "" if v is None else _num(v * 1e6) for v in vals) + " |")
            lines.append("")
    return lines


def colors_floors(results: dict) -> list[str]:
    """The colors rows with other languages at the ends of the call (floors.py)."""
    fl = results.get("colors_floors")
    if not fl:
        return []
    kinds = fl["kinds"]
    lines = ["## colors floors: Java client → Python server, C++ client → C++ server", "",
             "The same methods, derivation rules, checks and timing as the matrix above (each cell the "
             "best pass median, fitted alike over sizes " + ", ".join(map(str, fl["sizes"])) + "), with other "
             "languages at the ends of the call: a Java client (`org.colors.rpc.RpcClient` interface proxy, "
             "colors agent; trees read as the `@Shared(name = \"bench.Node\")` class) calling a Python "
             "`colors_shm.rpc` server, and a C++ client calling a C++ server (`colors_floor`). The first row "
             "is the matrix's colors row (Python client → Java server) where it was measured.", ""]
    for row, why in fl.get("skipped", {}).items():
        lines.append(f"- {fl['labels'].get(row, row)}: not measured: {why}")
    if fl.get("skipped"):
        lines.append("")
    rows = []
    main = results["fits"].get("colors")
    if main:
        rows.append(("colors, Python client → Java server", main))
    for row, d in fl["rows"].items():
        rows.append((d["label"], d["fits"]))
    head = "| row | " + " | ".join(kinds) + " |"
    sep = "|---|" + "---:|" * len(kinds)
    for variant, title in (("paper", "paper's variant"), ("read", "read variant")):
        vrows = list(rows)
        if variant == "read" and FLOOR in results["fits"]:
            vrows.append(("private Python objects (read floor)", results["fits"][FLOOR]))
        for what, key, unit in (("Throughput", "throughput_per_ms", "elements/ms"),
                                ("Latency", "latency_us", "µs at size 1")):
            lines += [f"### {what} in {unit} — {title}", "", head, sep]
            for label, fits in vrows:
                f = fits.get(variant, {})
                lines.append(f"| {label} | " + " | ".join(
                    _num(f[k].get(key)) if k in f else "" for k in kinds) + " |")
            lines.append("")
    lines += ["### Measured time per call (µs, best pass median)", ""]
    for row, d in fl["rows"].items():
        by = {(c["variant"], c["kind"], c["n"]): c["per_call_s"] for c in d["cells"]}
        for variant in ("paper", "read"):
            lines += [f"{d['label']}, {variant}:", "", "| n | " + " | ".join(kinds) + " |",
                      "|---:|" + "---:|" * len(kinds)]
            for n in fl["sizes"]:
                vals = [by.get((variant, k, n)) for k in kinds]
                lines.append(f"| {n} | " + " | ".join("" if v is None else _num(v * 1e6) for v in vals) + " |")
            lines.append("")
    return lines


def sockets_vs_shm(results: dict) -> list[str]:
    s = results.get("sockets_vs_shm")
    if not s:
        return []
    lines = ["## Section 6.6: the same protobuf bytes over a colors channel vs a Unix socket", ""]
    if s.get("skipped"):
        return lines + [f"Skipped: {s['skipped']}", ""]
    lines += ["Round trip (Python → Python echo) of the serialized list; time per round trip in µs:",
              "median of per-call times, and in parentheses the 10th percentile. Colors channels spin",
              "for a while before blocking on a futex: \"spin\" is libshared's default budget",
              "(COLORS_SPIN_NS, 50 µs), \"no spin\" is COLORS_SPIN_NS=0.",
              "", "| payload | n | bytes | colors, spin | colors, no spin | Unix socket | spin/socket | no spin/socket |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in s["rows"]:
        lines.append(f"| {r['kind']} | {r['n']} | {r['bytes']:,} "
                     f"| {_num(r['colors_us'])} ({_num(r['colors_p10_us'])}) "
                     f"| {_num(r['colors_nospin_us'])} ({_num(r['colors_nospin_p10_us'])}) "
                     f"| {_num(r['unix_us'])} ({_num(r['unix_p10_us'])}) "
                     f"| {_ratio(_div(r['colors_us'], r['unix_us']))} "
                     f"| {_ratio(_div(r['colors_nospin_us'], r['unix_us']))} |")
    lines.append("")
    labels = {"colors": "colors, spin", "colors_nospin": "colors, no spin", "unix": "Unix socket"}
    for kind, f in s.get("fits", {}).items():
        lines.append(f"- {kind}: " + "; ".join(
            f"{labels[t]} latency {_num(v['latency_us'])} µs, {_num(v['mb_per_s'])} MB/s"
            for t, v in f.items()))
    return lines + [""]


def markdown(results: dict) -> str:
    meta = results["meta"]
    lines = [f"# rpc-bench results ({meta['mode']} run, {meta['date']})", "",
             f"Machine: {meta['machine']}; 1-minute load average at start/end "
             f"{meta.get('loadavg_start_end')}; run took {meta.get('wall_s')} s. Python client → Java server; reference framework for "
             f"ratios: **{reference(results)}**.", "",
             "time = latency + size/throughput fitted by least squares over sizes "
             f"{', '.join(map(str, results['sizes']))}; latency is the measured time at size 1; "
             "\"flat\": the time did not grow measurably with the size (fitted slope ≤ 0). "
             f"Cell value: {meta.get('cell_value')} ({meta.get('passes')} passes).", ""]
    if results.get("unavailable"):
        for fw, why in results["unavailable"].items():
            lines.append(f"- {fw} not measured: {why}")
        lines.append("")
    lines += tables(results)
    lines += colors_floors(results)
    lines += sockets_vs_shm(results)
    lines += raw_tables(results)
    lines += ["## Versions", ""] + [f"- {k}: {v}" for k, v in meta["versions"].items()] + [""]
    return "\n".join(lines)
