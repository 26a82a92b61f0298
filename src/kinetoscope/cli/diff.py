"""Compare two runs: what got slower, where, and by how much per step.

The report starts with one verdict: regression, improvement, neutral (within --threshold, 2% of
the step by default, or not significant) or inconclusive (naming what is missing), with its
confidence, a comparability check and a waterfall of the step-time change that adds up.

BASE and NEW are each a profile directory (ingested first, only what changed), a dataset, a
raw torch.profiler trace or a directory of them (imported into a temporary directory first),
or one run of a multi-run dataset as DATASET:RUN; BASE may be baseline:NAME, a saved baseline
(`kinetoscope baseline save`), which compares the verdict and the waterfall. Then step-time distributions, device
busy/idle and temporal breakdown, communication, memory peaks; then framework ops by name, by
input shape and by place in the op tree, kernels within their launching op, modules, op
categories and memory snapshots (bytes live at the peak per allocating stack), with their
deltas per step, most impact on step time first. Ops whose shape changed match by name
(`reshaped`); a kernel, or an op under the same parent, that took another's place is
`replaced`. With two or more steps a side, a delta inside the step-to-step spread is marked
not significant. Multi-rank: the whole run,
then each rank. The --json schema is in docs/compare.md.

Exit status: 0; 1 when --gate is given and the step time grew significantly beyond it, or when
--fail-if-slower is given and NEW's median step time is slower by more than it; 2 for unusable
input; 3 when --gate is given and the verdict is inconclusive.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope._errors import CommandError

if TYPE_CHECKING:
    from kinetoscope.analysis.compare.diff_report import Run


@dataclass(frozen=True)
class DiffOptions:
    base: str
    new: str
    output: str
    top: int
    fail_if_slower_pct: float | None
    threshold_pct: float = 2.0
    gate_pct: float | None = None
    baselines_dir: str | None = None
    confidence_pct: float = 95.0


def parse_pct(text: str) -> float:
    """``5%`` or ``5`` -> 5.0."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r} (e.g. 5%)") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the percentage must not be negative")
    return value


def parse_confidence(text: str) -> float:
    """``99%`` or ``99`` -> 99.0, from 50 up to (not including) 100."""
    value = parse_pct(text)
    if not 50.0 <= value < 100.0:
        raise argparse.ArgumentTypeError("the confidence must be at least 50% and below 100%")
    return value


class DiffCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("base", metavar="BASE", help="profile dir, dataset, trace(s), or DATASET:RUN")
        parser.add_argument("new", metavar="NEW", help="the same kinds as BASE")
        form = parser.add_mutually_exclusive_group()
        form.add_argument("--json", dest="output", action="store_const", const="json", help="JSON (docs/compare.md)")
        form.add_argument("--markdown", dest="output", action="store_const", const="markdown", help="Markdown")
        parser.add_argument("--top", type=int, default=20, help="rows per table (default 20; 0: all)")
        parser.add_argument(
            "--threshold",
            type=parse_pct,
            default=2.0,
            metavar="PCT",
            help="a significant change smaller than PCT of the step is neutral (default 2%%)",
        )
        parser.add_argument(
            "--confidence",
            type=parse_confidence,
            default=95.0,
            metavar="PCT",
            help="the confidence a change of step time must reach to count (default 95%%; noisy steps: "
            "99%% with more steps, docs/compare.md)",
        )
        parser.add_argument(
            "--gate",
            type=parse_pct,
            default=None,
            metavar="PCT",
            help="exit 1 when the step time grew significantly by more than PCT (e.g. 5%%), 3 when inconclusive",
        )
        parser.add_argument("--baselines", metavar="DIR", default=None, help="where baseline:NAME is looked up")
        parser.add_argument(
            "--fail-if-slower",
            type=parse_pct,
            default=None,
            metavar="PCT",
            help="exit 1 when NEW's median step time is slower than BASE's by more than PCT (e.g. 5%%)",
        )

    def run(self, args: argparse.Namespace) -> int:
        options = DiffOptions(
            args.base,
            args.new,
            args.output or "text",
            args.top,
            args.fail_if_slower,
            args.threshold,
            args.gate,
            args.baselines,
            args.confidence,
        )
        return diff(options)


def diff(options: DiffOptions) -> int:
    from kinetoscope.analysis.compare import baselines
    from kinetoscope.analysis.compare.diff_report import compare_digests, compare_runs, slower_pct
    from kinetoscope.render import diff as render_diff

    with tempfile.TemporaryDirectory(prefix="kinetoscope-diff-") as work:
        if options.base.startswith(baselines.PREFIX):
            name = options.base.removeprefix(baselines.PREFIX)
            saved = {**load_baseline(name, options.baselines_dir, Path(work))}
            saved["label"] = f"{options.base} (saved from {saved['label']})"
            new = load_run(options.new, Path(work) / "new")
            report = compare_digests(saved, new.digest, top=options.top, threshold_pct=options.threshold_pct,
                                     level=options.confidence_pct / 100)
        else:
            base = load_run(options.base, Path(work) / "base")
            new = load_run(options.new, Path(work) / "new")
            report = compare_runs(base, new, top=options.top, threshold_pct=options.threshold_pct,
                                  level=options.confidence_pct / 100)
    report["gate_pct"] = options.gate_pct
    slower = slower_pct(report)
    report["fail_if_slower_pct"] = options.fail_if_slower_pct
    report["failed"] = (
        options.fail_if_slower_pct is not None and slower is not None and slower > options.fail_if_slower_pct
    )
    if options.output == "json":
        json.dump(report, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        render_diff.render(report, sys.stdout, markdown=options.output == "markdown")
    gated = gate_status(report["verdict"], options.gate_pct)
    if options.fail_if_slower_pct is None:
        return gated
    if slower is None:
        raise CommandError("--fail-if-slower: no ProfilerStep on one side, so no step time to compare", exit_code=2)
    return 1 if report["failed"] else gated


def gate_status(verdict: dict[str, Any], gate_pct: float | None) -> int:
    """The exit status ``--gate`` asks for: 1 when the step time grew significantly by more than it
    (whatever ``--threshold`` made of the verdict), 3 for inconclusive, else 0."""
    if gate_pct is None:
        return 0
    if verdict["verdict"] == "inconclusive":
        return 3
    change = verdict.get("change_pct") or 0.0
    significant = bool((verdict.get("test") or {}).get("significant"))
    return 1 if significant and change > gate_pct else 0  # the gate is its own threshold


def load_baseline(name: str, where: str | None, work: Path) -> dict[str, Any]:
    """The digest saved as ``name``; one made with other versions is rebuilt from its profile when
    that is still there, else refused with what to do."""
    from kinetoscope.analysis.compare import baselines
    from kinetoscope.cli.environment import baselines_dir

    place = baselines.folder(baselines_dir(where))
    try:
        found = baselines.load(name, place)
    except baselines.BaselineError as exc:
        raise CommandError(str(exc), exit_code=2) from None
    if not isinstance(found, baselines.Stale):
        return found
    if not found.source or not Path(split_spec(found.source)[0]).exists():
        raise CommandError(
            f"baseline {name!r} was made with other versions ({found.why}) and its profile "
            f"{found.source or '(unknown)'} is gone: save it again with `kinetoscope baseline save {name} PROFILE`",
            exit_code=2,
        )
    print(f"kinetoscope diff: baseline {name!r} rebuilt from {found.source} ({found.why})", file=sys.stderr)
    run = load_run(found.source, work / "baseline")
    baselines.save(name, run.digest, place, found.source)
    return run.digest


def split_spec(spec: str) -> tuple[Path, str | None]:
    """``PATH`` or ``DATASET:RUN`` (a path that exists as written wins)."""
    path = Path(spec)
    if path.exists() or ":" not in spec:
        return path, None
    head, run = spec.rsplit(":", 1)
    return Path(head), run or None


def load_run(spec: str, work: Path) -> Run:
    """One side's tables, from whatever ``spec`` names; ``work`` holds what had to be imported."""
    from kinetoscope.analysis import ANALYSES, needed_columns
    from kinetoscope.analysis.compare.diff_report import Run
    from kinetoscope.cli.sources import opened_dataset

    path, run = split_spec(spec)
    if not path.exists():
        raise CommandError(f"{spec}: no such file, directory or DATASET:RUN", exit_code=2)
    columns: dict[str, Any] = dict(needed_columns(ANALYSES))
    if "args" not in columns["events"]:  # op shapes (analyses that read shapes ask for it already)
        columns["events"] = (*columns["events"], "args")
    with opened_dataset(_dataset_source(path, work)) as dataset:
        run = _pick_run(spec, dataset.runs, run)
        tables = dataset.load(columns, run=run)
    if tables["events"].num_rows == 0:
        raise CommandError(f"{spec}: no events", exit_code=2)
    return Run(spec, tables)


def _pick_run(spec: str, runs: list[str], run: str | None) -> str:
    if run is not None and run not in runs:
        raise CommandError(f"{spec}: no run {run!r}; runs: {', '.join(runs) or 'none'}", exit_code=2)
    if run is None and len(runs) != 1:
        raise CommandError(f"{spec}: {len(runs)} runs ({', '.join(runs)}); name one as DATASET:RUN", exit_code=2)
    return run if run is not None else runs[0]


def _dataset_source(path: Path, work: Path) -> Path:
    """A dataset or profile tree as is; raw traces imported under ``work`` first."""
    from kinetoscope.dataset import directory
    from kinetoscope.format.session_files import session_dir as layout
    from kinetoscope.importer import trace_import as imp

    if directory.is_dataset(path) or (path.is_dir() and next(path.rglob(layout.TRACE_INFO), None)):
        return path
    traces = imp.find_trace_files([path])
    if not traces:
        raise CommandError(f"{path}: not a dataset, a profile directory or a torch.profiler trace", exit_code=2)
    sessions = work / "sessions"
    for trace in traces:
        result = imp.import_trace(trace, imp.ImportOptions(out_dir=sessions, write_pb=False, link_trace=True))
        if result.session is None:
            raise CommandError(f"{trace}: could not be imported", exit_code=2)
    return sessions


command = DiffCommand()
