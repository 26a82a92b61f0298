"""``kinetoscope report``: one self-contained HTML file with the viewer's Summary page made
offline: the one-screen answer, the findings, the charts and every analysis, each collapsible.

The page holds its data (the same sections and findings documents the viewer serves) as JSON in a
``<script type="application/json">`` element, with ``<``, ``>`` and ``&`` escaped so that no
string from a trace can end that element, and the front end's ``report.js`` and ``style.css``
inline. A Content-Security-Policy allows that one script (by its hash) and nothing from the
network. With ``redact``, the profile's paths, its host names and the user's name are replaced
in everything the file holds.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import html
import json
import re
import socket
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kinetoscope._version import __version__
from kinetoscope.analysis import ANALYSES
from kinetoscope.analysis.settings.user_options import UserOptions
from kinetoscope.findings.document import document
from kinetoscope.query.dataset import Dataset
from kinetoscope.report import runner
from kinetoscope.report.runner import Made
from kinetoscope.report.settings import ReportOptions, default_threads
from kinetoscope.viewer.indexing import ids
from kinetoscope.viewer.pages.summaries import TOP, section_rows
from kinetoscope.viewer.querying.queries import js_safe_tree

_FACTS = "SELECT count(*) AS events, coalesce(max(ts_ns + dur_ns) - min(ts_ns), 0) AS span_ns FROM events"
_FOLDERS_RE = re.compile(r"(?<![\w.>])/(?:[\w.@+~\ue000-]+/)+")
_PLACEHOLDERS = {"path": "<path>", "host": "<host>", "user": "<user>"}


@dataclass(frozen=True)
class ReportInput:
    """What the report shows: the dataset, the one-screen answer (the ``summary`` command's text),
    a title, and whether to leave out paths, host and user names."""

    dataset: Dataset
    answer: str
    title: str
    redact: bool = False


@dataclass(frozen=True)
class Computed:
    """The analyses' tables and the findings of a dataset, computed once for every sink (``made``:
    as the summary's runner gave them, with the run's facts for the one-screen answer)."""

    results: dict[str, Any]
    found: list[Any]
    t0_ns: int
    facts: dict[str, Any]
    made: Made


def computed(dataset: Dataset, top: int = TOP, user: UserOptions | None = None) -> Computed:
    """Every registered analysis (``top`` rows per rank in the ranked ones) and the findings, made
    by the summary's runner (``user``: the user's category patterns and device; None: the caller's)."""
    t0_ns = int(dataset.sql("SELECT coalesce(min(ts_ns), 0) AS t FROM events").column("t")[0].as_py())
    warnings = dataset.sql("SELECT count(*) AS n FROM warnings WHERE severity <> 'note'").column("n")[0].as_py()
    facts = {**dataset.sql(_FACTS).to_pylist()[0], "ranks": len(dataset.ranks()), "warnings": warnings}
    options = ReportOptions(top=top, threads=default_threads(), workers=1, user=user)
    made = runner.made(dataset, options, t0_ns=t0_ns, facts=True)
    return Computed(made.results, made.found or [], t0_ns, facts, made)


def answer(made: Computed, target: str) -> str:
    """The one-screen answer ``kinetoscope summary`` prints, of what ``made`` holds (``target``: the
    profile as the user named it, for the findings' ``kinetoscope view`` commands)."""
    import io

    from kinetoscope.report.output import Output, write

    out = io.StringIO()
    write(runner.on_screen(made.made), Output(target=target), out)
    return out.getvalue()


def report_data(given: ReportInput, made: Computed | None = None) -> dict[str, Any]:
    """The page's data: facts for the cards, the analyses as the Summary page shows them, the findings."""
    made = made or computed(given.dataset)
    data: dict[str, Any] = js_safe_tree({
        "title": given.title,
        "generated": time.strftime("%Y-%m-%d %H:%M %Z"),
        "version": __version__,
        "answer": given.answer,
        "t0_ns": str(made.t0_ns),
        "facts": made.facts,
        "summary": ids.summary({"analyses": [section_rows(a, made.results[a.name], made.t0_ns) for a in ANALYSES]}),
        "findings": ids.findings(document(made.found)),
    })
    return data


def private_strings(dataset: Dataset, given_paths: list[str]) -> dict[str, str]:
    """What ``redact`` replaces: the paths given and read (sessions, dataset), host names, the user."""
    sessions = dataset.sql("SELECT DISTINCT path, host FROM sessions").to_pylist()
    found = {p: _PLACEHOLDERS["path"] for p in [*given_paths, str(dataset.path), *(s["path"] for s in sessions)] if p}
    found.update({str(Path(p).resolve()): _PLACEHOLDERS["path"] for p in list(found) if p.startswith(("/", "."))})
    hosts = {*(s["host"] for s in sessions), socket.gethostname()}
    found.update({host: _PLACEHOLDERS["host"] for host in hosts if host})
    found.update({name: _PLACEHOLDERS["user"] for name in {getpass.getuser(), Path.home().name} if len(name) > 2})
    return found


def scrubbed(text: str, secrets: dict[str, str]) -> str:
    """``text`` with each secret replaced, longest first (a path before the user name inside it),
    then the folders of any absolute path (a Python frame's file keeps its own name)."""
    marks = {secrets[secret]: f"\ue000{index}\ue000" for index, secret in enumerate(sorted(secrets))}
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, marks[secrets[secret]])
    text = _FOLDERS_RE.sub(_PLACEHOLDERS["path"] + "/", text)
    for placeholder, mark in marks.items():
        text = text.replace(mark, placeholder)
    return text


def redacted(value: Any, secrets: dict[str, str]) -> Any:
    """``value`` (the page's data) with every string scrubbed of ``secrets``."""
    if isinstance(value, str):
        return scrubbed(value, secrets)
    if isinstance(value, dict):
        return {key: redacted(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redacted(item, secrets) for item in value]
    return value


def page(data: dict[str, Any]) -> str:
    """The whole HTML file."""
    static = resources.files("kinetoscope.viewer") / "static"
    script = (static / "report.js").read_text(encoding="utf-8")
    style = (static / "style.css").read_text(encoding="utf-8")
    payload = json.dumps(data, ensure_ascii=False, default=str)
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if "</script" in script.lower():
        raise RuntimeError("report.js holds '</script': it cannot be inlined")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    policy = f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:"
    return (
        "<!doctype html>\n<html lang=\"en\" data-idle=\"false\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<title>{html.escape(str(data['title']))}</title>\n<link rel=\"icon\" href=\"data:,\">\n"
        f"<style>\n{style}\n</style>\n</head>\n<body class=\"report-body\">\n"
        f"<script type=\"application/json\" id=\"report-data\">{payload}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )

