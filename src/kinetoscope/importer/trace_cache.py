"""Raw traces named where a profile is expected: imported once, into a cache beside them.

``kinetoscope summary worker0.pt.trace.json`` (and ``view``, ``verify``, ``sql``, ``export``,
``findings``) imports the traces into ``<trace folder>/.kinetoscope/traces/<name>-<key>/<name>``,
a profile tree of imported sessions, or into the per-user cache when that folder is not
writable. The key is made of each trace's resolved path, size and modification time, so the
same traces are imported once and a rewritten trace is imported again. The import is staged
and renamed into place when complete: an interrupted one leaves nothing that is later reused.

The sessions are light (``light_session``): ``trace.json`` and ``trace_info.pb``, no packet
files, since every command that takes raw traces reads ``trace.json`` alone. An uncompressed
trace becomes its session's ``trace.json`` by a reflink or a hard link where the file system
allows (else a copy); a compressed one is decompressed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from kinetoscope._errors import CommandError, FormatError
from kinetoscope.format.files import in_tree
from kinetoscope.format.private_dirs import private_dir, user_cache_root
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.importer import trace_import as imp

COMPLETE = "sources.json"  # written last: lists the traces this cache entry was imported from
Say = Callable[[str], None]
BeforeImport = Callable[[list[Path]], object]  # hears the traces about to be imported
_PROBLEM_LINES = 5  # problems printed per trace (all are kept in its session's trace_info.pb)


def profile_for(
    paths: Sequence[Path], say: Say | None = None, before_import: BeforeImport | None = None
) -> Path:
    """``paths[0]`` when it is a profile tree or a dataset (or a folder holding no trace); else
    the cached profile tree of the traces among ``paths`` (files, or folders searched for
    ``*.json``/``*.json.gz``). ``before_import(traces)`` runs just before traces not cached yet
    are imported (not when they are cached)."""
    for path in paths:
        if not path.exists():
            raise CommandError(f"{path}: no such file or directory", exit_code=2)
    if len(paths) == 1 and layout.is_profile(paths[0]):
        return paths[0]
    others = [p for p in paths if p.is_file() and not p.name.endswith(imp.TRACE_SUFFIXES)]
    traces = [] if others else imp.find_trace_files(paths)
    if not others and not traces and len(paths) == 1:
        return paths[0]  # a folder with neither sessions nor traces: the command says what it lacks
    if others or not traces:
        names = ", ".join(str(p) for p in others or paths)
        raise CommandError(
            f"{names}: not a dataset, a profile directory or a torch.profiler trace (*.json, *.json.gz)", exit_code=2
        )
    return _cached(traces, say or (lambda _: None), before_import or (lambda _: None))


def _run_name(traces: list[Path]) -> str:
    """The trace's name without its suffixes; for several traces, their common folder's name."""
    if len(traces) == 1:
        name = traces[0].name
        for suffix in (*imp.TRACE_SUFFIXES, ".pt.trace"):
            name = name.removesuffix(suffix)
        return layout.sanitize_component(name) or "trace"
    parents = {t.resolve().parent for t in traces}
    common = parents.pop().name if len(parents) == 1 else "traces"
    return layout.sanitize_component(common) or "traces"


def _sources(traces: list[Path]) -> list[dict[str, object]]:
    found = []
    for trace in traces:
        stat = trace.stat()
        found.append({"path": str(trace.resolve()), "size_bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns})
    return found


def _key(sources: list[dict[str, object]]) -> str:
    text = json.dumps(sorted(sources, key=lambda s: str(s["path"])), sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def cache_root(trace: Path) -> Path:
    """``<trace folder>/.kinetoscope/traces``, or the user's cache when that folder is not writable."""
    folder = trace.resolve().parent
    inside = in_tree(folder, folder / layout.CACHE_FOLDER / "traces")  # a link out of the folder: refused
    if inside.is_dir() or os.access(folder, os.W_OK):
        return inside
    return private_dir(user_cache_root() / "traces")


def _cached(traces: list[Path], say: Say, before_import: BeforeImport) -> Path:
    sources = _sources(traces)
    name = _run_name(traces)
    entry = cache_root(traces[0]) / f"{name}-{_key(sources)}"
    profile = entry / name
    if _is_complete(entry, sources):
        say(f"using the sessions imported from {len(traces)} trace(s) in {profile}")
        return profile
    before_import(traces)
    say(f"importing {len(traces)} trace(s) into {profile} ...")
    imp.remove_dead_staging(entry.parent)
    staging = entry.with_name(f"{imp.STAGING_PREFIX}{os.getpid()}-{entry.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _import_all(traces, staging / name, say)
        (staging / COMPLETE).write_text(json.dumps(sources, indent=1))
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(staging, entry)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return profile


def _is_complete(entry: Path, sources: list[dict[str, object]]) -> bool:
    try:
        recorded = json.loads((entry / COMPLETE).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(recorded, list) and sorted(map(json.dumps, recorded)) == sorted(map(json.dumps, sources))


def _import_all(traces: list[Path], sessions: Path, say: Say) -> None:
    options = imp.ImportOptions(out_dir=sessions, write_pb=False, link_trace=True)
    results = []
    for trace in traces:
        try:
            results.append(imp.import_trace(trace, options))
        except FormatError as exc:
            raise CommandError(f"{trace}: cannot be imported: {exc}", exit_code=2) from exc
        for line in results[-1].problems.summary_lines()[:_PROBLEM_LINES]:
            say(f"  {trace.name}: {line}")
    for (rank, _), sources in imp.rank_clashes(results).items():
        names = ", ".join(source.name for source in sources)
        say(
            f"  warning: {len(sources)} traces claim rank {rank} from different processes ({names}): separate "
            "runs, read apart (run, run.launch-2, ...); to compare them use kinetoscope diff"
        )
    for (rank, _), sources in imp.rank_windows(results).items():
        names = ", ".join(source.name for source in sources)
        say(
            f"  warning: {len(sources)} traces claim rank {rank} ({names}): one process recorded them, so they "
            "are read as its profiling windows, sessions of one rank"
        )
