"""The report of ``kinetoscope diff`` (``analysis.compare``) as plain text or as Markdown (a pull
request comment). Times are shown in ms per step; ``sig`` says whether a per-step change is real
(``model.significance``'s rank test: ``no``: within the step-to-step variation; ``?``: too few
steps to tell)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import IO, Any

from kinetoscope.render.values import cell, header, shorten

Row = dict[str, Any]
Column = tuple[str, Callable[[Row], str]]
_DISTRIBUTION = ("count", "median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns", "stdev_ns", "iqr_ns")


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.3f}"


def signed_ms(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:+,.3f}"


def signed_pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+,.2f}%"


def sig(value: bool | None) -> str:
    return "?" if value is None else ("yes" if value else "no")


class Writer:
    """Headings, paragraphs and tables, as text or as Markdown."""

    def __init__(self, out: IO[str], markdown: bool) -> None:
        self.out, self.markdown = out, markdown

    def heading(self, text: str, level: int = 2) -> None:
        self.out.write(f"{'#' * level} {text}\n\n" if self.markdown else f"{text}\n{'=' * len(text)}\n")

    def para(self, text: str) -> None:
        self.out.write(f"{text}\n\n" if self.markdown else f"{text}\n")

    def table(self, columns: Sequence[Column], rows: Sequence[Row]) -> None:
        if not rows:
            self.para("(none)")
            return
        heads = [head for head, _ in columns]
        cells = [[fn(row) for _, fn in columns] for row in rows]
        if self.markdown:
            self.out.write("| " + " | ".join(heads) + " |\n|" + "---|" * len(heads) + "\n")
            for line in cells:
                self.out.write("| " + " | ".join(c.replace("|", "\\|") for c in line) + " |\n")
            self.out.write("\n")
            return
        widths = [max([len(h), *(len(line[i]) for line in cells)]) for i, h in enumerate(heads)]
        for line in [heads, *cells]:
            self.out.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n")
        self.out.write("\n")


def verdict_line(verdict: Row) -> str:
    """``VERDICT: regression, +12.30% step time at 99.8% confidence (threshold 2%): why``."""
    name = verdict["verdict"]
    change = verdict.get("change_pct")
    confidence = verdict.get("confidence")
    figures = [] if change is None else [f"{change:+.2f}% step time"]
    if confidence is not None and name in ("regression", "improvement"):
        figures.append(f"{100 * confidence:.2f}% confidence")
    elif confidence is not None and name == "neutral":
        figures.append(f"confidence of a change {100 * confidence:.1f}%")
    figures.append(f"threshold {verdict['threshold_pct']:g}%")
    return f"VERDICT: {name} ({', '.join(figures)}): {verdict.get('reason', '')}"


def render(report: Row, out: IO[str], *, markdown: bool = False) -> None:
    w = Writer(out, markdown)
    if "verdict" in report:
        line = verdict_line(report["verdict"])
        w.para(f"**{line}**" if markdown else line)
    w.heading("kinetoscope diff", 1 if markdown else 2)
    for label in ("base", "new"):
        side = report[label]
        w.para(f"{label.upper()}: {side['label']} (ranks {_ranks(side['ranks'])}, {side['steps']} steps)")
    for label in ("base", "new"):
        if report[f"ranks_only_in_{label}"]:
            w.para(
                f"ranks only in {label.upper()}: {_ranks(report[f'ranks_only_in_{label}'])} (no per-rank comparison)"
            )
    if "comparability" in report:
        _comparability(w, report["comparability"])
    if "waterfall" in report:
        _waterfall(w, report["waterfall"])
    for scope in report["scopes"]:
        _scope(w, scope)


def _comparability(w: Writer, checked: Row) -> None:
    w.heading("Comparability", 2)
    differs = [c for c in checked["checks"] if c["differs"]]
    if not differs:
        w.para(
            "Comparable: same devices, world size, steps, compile and graph state and top ops' shapes; "
            "no dropped events."
        )
        return
    head = "Comparable, with differences:" if checked["comparable"] else "NOT comparable:"
    w.para(head)
    w.table(
        [
            ("check", lambda r: r["check"]),
            ("BASE", lambda r: shorten(str(r["base"]), 40)),
            ("NEW", lambda r: shorten(str(r["new"]), 40)),
            ("breaks", lambda r: "yes" if r["breaks"] else "no"),
            ("why", lambda r: r["why"]),
        ],
        differs,
    )


def _waterfall(w: Writer, fall: Row) -> None:
    w.heading("Waterfall (mean step time)", 2)
    if fall["total_delta_ns"] is None:
        w.para("No steps on one side: no waterfall.")
        return
    w.para(
        f"Mean step {ms(fall['base_mean_ns'])} → {ms(fall['new_mean_ns'])} ms "
        f"({signed_ms(fall['total_delta_ns'])} ms), split into parts that add up to it:"
    )
    rows: list[Row] = []
    for part in fall["parts"]:
        rows.append({"name": part["part"], **part})
        rows += [{**b, "name": f"  {b['what']}: {shorten(b['name'], 60)}", "share_pct": None} for b in part["behind"]]
    rows.append(
        {
            "name": "total",
            "base_ns": fall["base_mean_ns"],
            "new_ns": fall["new_mean_ns"],
            "delta_ns": fall["total_delta_ns"],
            "share_pct": 100.0 if fall["total_delta_ns"] else None,
        }
    )
    w.table(
        [
            ("part / behind it", lambda r: r["name"]),
            ("ms/step B", lambda r: ms(r["base_ns"])),
            ("ms/step N", lambda r: ms(r["new_ns"])),
            ("delta ms/step", lambda r: signed_ms(r["delta_ns"])),
            ("share", lambda r: "" if r.get("share_pct") is None else f"{r['share_pct']:+.1f}%"),
        ],
        rows,
    )


def _ranks(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks)) or "none"


def _scope(w: Writer, scope: Row) -> None:
    title = "whole run" if scope["rank"] == "all" else f"rank {scope['rank']}"
    w.heading(f"Step time ({title})", 2)
    write_steps(w, scope["step_time"])
    if "figures" not in scope:  # a side known by its digest (a baseline): no per-op tables
        return
    w.heading(f"Run figures ({title})", 3)
    w.table(_FIGURE_COLUMNS, scope["figures"])
    totals = scope["rows_total"]
    w.heading(f"Framework ops by name ({title}; {len(scope['ops'])} of {totals['ops']})", 3)
    w.table(_OP_COLUMNS, scope["ops"])
    w.heading(f"Framework ops by shape ({title}; {len(scope['op_shapes'])} of {totals['op_shapes']})", 3)
    w.table(_SHAPE_COLUMNS, scope["op_shapes"])
    w.heading(f"Kernels within their launching op ({title}; {len(scope['kernels'])} of {totals['kernels']})", 3)
    w.table(_KERNEL_COLUMNS, scope["kernels"])
    for key, title, columns in _MORE_TABLES:
        if key in scope:
            w.heading(f"{title} ({title_of(scope)}; {len(scope[key])} of {totals.get(key, len(scope[key]))})", 3)
            w.table(columns, scope[key])
    if scope.get("memory"):
        _memory(w, scope["memory"], title_of(scope))
    _unmatched(w, scope["unmatched"])


def title_of(scope: Row) -> str:
    return "whole run" if scope["rank"] == "all" else f"rank {scope['rank']}"


def _memory(w: Writer, memory: Row, title: str) -> None:
    w.heading(f"Memory snapshots ({title})", 3)
    base, new = memory["base"], memory["new"]
    w.para(
        f"Allocation peak {_mib(base['peak_bytes'])} → {_mib(new['peak_bytes'])} MiB "
        f"({_signed_mib(memory['delta_peak_bytes'])} MiB; {base['allocations']:,} → {new['allocations']:,} blocks)."
    )
    for key, what in (
        ("stacks_grew", "Stacks that grew (bytes live at the peak)"),
        ("stacks_shrank", "Stacks that shrank"),
    ):
        w.heading(what, 4)
        w.table(_STACK_COLUMNS, memory[key])


def _mib(value: float) -> str:
    return f"{value / 2**20:,.1f}"


def _signed_mib(value: float) -> str:
    return f"{value / 2**20:+,.1f}"


_STACK_COLUMNS: list[Column] = [
    ("stack (innermost frames)", lambda r: shorten(r["stack"], 90)),
    ("MiB B", lambda r: _mib(r["base_bytes_at_peak"])),
    ("MiB N", lambda r: _mib(r["new_bytes_at_peak"])),
    ("delta MiB", lambda r: _signed_mib(r["delta_bytes"])),
]


def write_steps(w: Writer, step: Row) -> None:
    rows = [{"stat": s, "base": step["base"].get(s), "new": step["new"].get(s)} for s in _DISTRIBUTION]
    show: Callable[[str, Any], str] = lambda stat, v: str(v) if stat == "count" else ms(v)  # noqa: E731
    w.table(
        [
            ("step time (ms)", lambda r: r["stat"].removesuffix("_ns")),
            ("BASE", lambda r: show(r["stat"], r["base"])),
            ("NEW", lambda r: show(r["stat"], r["new"])),
        ],
        rows,
    )
    if step["delta_median_ns"] is None:
        w.para("No ProfilerStep on one side: step times not compared.")
        return
    w.para(
        f"Median step time {signed_ms(step['delta_median_ns'])} ms ({signed_pct(step['delta_pct'])}): "
        f"{_verdict(step.get('test') or {})}."
    )


def _verdict(test: Row) -> str:
    """One sentence from ``model.significance``'s answer: the verdict, its confidence and why."""
    confidence = test.get("confidence")
    sure = "" if confidence is None else f", {100 * confidence:.1f}% confidence"
    larger = test.get("prob_new_larger")
    order = ""
    if larger in (0.0, 1.0):
        order = f"; every NEW step {'slower' if larger else 'faster'} than every BASE step"
    verdict = {
        "changed": "significant",
        "unchanged": "not significant",
        "inconclusive": "inconclusive",
    }.get(str(test.get("verdict")), "inconclusive")
    return f"{verdict}{sure}{order} ({test.get('reason', '')})"


def _figure_delta(row: Row) -> str:
    delta = row["delta"]
    if delta is None:
        return "-"
    text = cell(row["figure"], delta)
    return f"+{text}" if delta > 0 else text


_FIGURE_COLUMNS: list[Column] = [
    ("figure", lambda r: header(r["figure"])),
    ("BASE", lambda r: cell(r["figure"], r["base"])),
    ("NEW", lambda r: cell(r["figure"], r["new"])),
    ("delta", _figure_delta),
    ("delta %", lambda r: signed_pct(r["delta_pct"])),
]
_DELTA_COLUMNS: list[Column] = [
    ("delta ms/step", lambda r: signed_ms(r["delta_per_step_ns"])),
    ("delta %", lambda r: signed_pct(r["delta_pct"])),
    ("sig", lambda r: sig(r["significant"])),
]
_OP_NUMBERS: list[Column] = [
    ("calls/step B", lambda r: f"{r['base_calls_per_step']:g}"),
    ("calls/step N", lambda r: f"{r['new_calls_per_step']:g}"),
    ("total ms/step B", lambda r: ms(r["base_total_per_step_ns"])),
    ("total ms/step N", lambda r: ms(r["new_total_per_step_ns"])),
    ("self ms/step B", lambda r: ms(r["base_self_per_step_ns"])),
    ("self ms/step N", lambda r: ms(r["new_self_per_step_ns"])),
    *_DELTA_COLUMNS,
]
_OP_COLUMNS: list[Column] = [("match", lambda r: r["match"]), ("op", lambda r: shorten(r["name"], 60)), *_OP_NUMBERS]


def _shape(row: Row) -> str:
    old, new = shorten(row["shape"], 50), shorten(row["new_shape"], 50)
    return old if old == new else f"{old or '-'} → {new or '-'}"


_SHAPE_COLUMNS: list[Column] = [
    ("match", lambda r: r["match"]),
    ("op", lambda r: shorten(r["name"], 40)),
    ("shape (dims dtypes)", _shape),
    *_OP_NUMBERS,
]


def _kernel_name(row: Row) -> str:
    old = shorten(row["name"], 50)
    return old if row["new_name"] == row["name"] else f"{old} → {shorten(row['new_name'], 50)}"


_KERNEL_COLUMNS: list[Column] = [
    ("match", lambda r: r["match"]),
    ("op", lambda r: shorten(r["op"] or "(no op)", 30)),
    ("kernel", _kernel_name),
    ("kind", lambda r: r["kind"]),
    ("calls/step B", lambda r: f"{r['base_calls_per_step']:g}"),
    ("calls/step N", lambda r: f"{r['new_calls_per_step']:g}"),
    ("ms/step B", lambda r: ms(r["base_time_per_step_ns"])),
    ("ms/step N", lambda r: ms(r["new_time_per_step_ns"])),
    *_DELTA_COLUMNS,
]


def _tree_place(row: Row, most: int = 80) -> str:
    """``parent / name`` (``name → new_name`` when replaced), its head cut when long: the op and its
    nearest ancestors are what tell places apart."""
    name = row["name"] if row["new_name"] == row["name"] else f"{row['name']} → {row['new_name']}"
    text = f"{row['parent']} / {name}" if row["parent"] else name
    return text if len(text) <= most else "…" + text[-(most - 1) :]


_GPU_COLUMNS: list[Column] = [
    ("gpu ms/step B", lambda r: ms(r["base_gpu_per_step_ns"])),
    ("gpu ms/step N", lambda r: ms(r["new_gpu_per_step_ns"])),
    ("delta gpu ms/step", lambda r: signed_ms(r["delta_gpu_per_step_ns"])),
]
_SELF_COLUMNS: list[Column] = [
    ("self ms/step B", lambda r: ms(r["base_self_per_step_ns"])),
    ("self ms/step N", lambda r: ms(r["new_self_per_step_ns"])),
    ("delta self ms/step", lambda r: signed_ms(r["delta_per_step_ns"])),
    ("sig", lambda r: sig(r["significant"])),
]
_MORE_TABLES: list[tuple[str, str, list[Column]]] = [
    (
        "op_tree",
        "Framework ops by place in the op tree",
        [("match", lambda r: r["match"]), ("parent / op", _tree_place), *_OP_NUMBERS],
    ),
    ("modules", "Modules", [("module", lambda r: shorten(r["module"], 60)), *_SELF_COLUMNS, *_GPU_COLUMNS]),
    ("categories", "Op categories", [("category", lambda r: r["category"]), *_SELF_COLUMNS, *_GPU_COLUMNS]),
]


def _unmatched(w: Writer, found: Row, most: int = 5) -> None:
    lines = []
    for key, what in (
        ("ops_gone", "ops gone"),
        ("ops_new", "ops new"),
        ("kernels_gone", "kernels gone"),
        ("kernels_new", "kernels new"),
        ("op_tree_gone", "places in the op tree gone"),
        ("op_tree_new", "places in the op tree new"),
    ):
        names = found.get(key, [])
        if names:
            more = f", ... ({len(names)} in all)" if len(names) > most else ""
            lines.append(f"{what}: " + ", ".join(shorten(n, 70) for n in names[:most]) + more)
    w.heading("Not matched", 3)
    w.para("; ".join(lines) if lines else "Everything matched.")
