"""Session directories made from torch.profiler traces recorded elsewhere (``kinetoscope import``).

Each trace file (``.json`` or ``.json.gz``, one per rank) becomes a session directory with
the files a captured session has: ``trace.json`` (the trace, decompressed, byte for byte),
``ntrace.pb``, ``device_<N>.pb`` and a COMPLETE ``trace_info.pb`` whose identity comes from
the trace's ``distributedInfo``. A trace without it is imported as a single process with its
rank marked unknown. The session is assembled in a staging directory and renamed into place
when complete, so an interrupted import leaves no half-made session.

One pass per file: the source is read once (copied, gunzipped and hashed together), and the
copy once by the conversion, besides a block at its head and one at its tail that give the
metadata and the facts the conversion starts from (``trace_facts``). A light session's facts
are found in the blocks of the copy as they are written (``trace_facts.FactScan``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope._errors import FormatError
from kinetoscope._processes import process_alive
from kinetoscope._version import __version__
from kinetoscope.format.files import discard
from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.kineto.trace_source import is_gzip
from kinetoscope.format.perfetto_packets.perfetto import CLOCK_REALTIME, FileHeader
from kinetoscope.format.problems import OUT_OF_RANGE, TOO_LARGE, ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer import light_session as light
from kinetoscope.importer import trace_facts as tf
from kinetoscope.importer.trace_facts import TraceFacts
from kinetoscope.model import execution as ke
from kinetoscope.model import runs
from kinetoscope.model.scalars import BASE_NS_LIMIT, INT32_LIMIT, as_int, in_range

if TYPE_CHECKING:  # the conversion (packet files, the wire encoder's tables) is imported where it runs
    from kinetoscope.convert import conversion

IMPORT_INSTANCE = "imported"
TRACE_SUFFIXES = (".json.gz", ".json")  # the files import reads as traces
STAGING_PREFIX = ".import-"  # + pid + "-" + trace name + ".tmp": where a session is assembled
# Events per converted batch: small enough that a batch is converted while its records are still in cache.
IMPORT_BATCH_SIZE = 8192


@dataclass(frozen=True)
class ImportOptions:
    """Where sessions go; ``force`` replaces a session already imported from the same trace.

    ``write_pb``: convert the events into ``ntrace.pb`` and ``device_<N>.pb`` (False: a light
    session of ``trace.json`` and ``trace_info.pb``, which every reading command reads as well;
    ``write_pb_files`` adds the files later). ``link_trace``: a light session's ``trace.json``
    is a reflink or a hard link of an uncompressed source where the file system allows (the raw
    trace cache, whose entries are keyed by the source's size and modification time).
    """

    out_dir: Path
    force: bool = False
    batch_size: int = IMPORT_BATCH_SIZE
    write_pb: bool = True
    link_trace: bool = False


@dataclass(frozen=True)
class Identity:
    """Who recorded a trace, as far as the trace says; ``world_size`` is 0 when the trace does not say."""

    rank: int
    world_size: int
    rank_known: bool
    backend: str
    pid: int
    hostname: str


@dataclass
class ImportResult:
    """The outcome of importing one trace file."""

    source: Path
    session: Path | None = None
    identity: Identity | None = None
    stats: conversion.ConversionStats | None = None  # None for a light session (no events converted)
    problems: ProblemLog = field(default_factory=ProblemLog)


def find_trace_files(paths: Iterable[Path]) -> list[Path]:
    """The trace files among ``paths``; directories are searched for ``*.json`` and ``*.json.gz``
    (outside kinetoscope's own ``.kinetoscope`` folders)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = (p for p in path.rglob("*") if not layout.in_cache_folder(path, p))
            found.extend(sorted(p for p in inside if p.is_file() and _looks_like_trace(p)))
        else:
            found.append(path)
    return found


def _looks_like_trace(path: Path) -> bool:
    """A ``.json``/``.json.gz`` file, other than the ``trace.json`` of a kinetoscope session."""
    in_session = path.name == layout.TRACE_JSON and (path.parent / layout.TRACE_INFO).exists()
    return path.name.endswith(TRACE_SUFFIXES) and not in_session


def import_trace(path: Path, options: ImportOptions) -> ImportResult:
    """Import one trace into a new session directory under ``options.out_dir``.

    Raises ``FormatError`` when the file cannot be read at all; damaged events are skipped,
    counted and recorded in the result's problems and in ``trace_info.pb``.
    """
    result = ImportResult(source=path)
    if not path.is_file():
        raise FormatError(f"{path}: no such file")
    options.out_dir.mkdir(parents=True, exist_ok=True)
    remove_dead_staging(options.out_dir)
    staging = options.out_dir / f"{STAGING_PREFIX}{os.getpid()}-{layout.sanitize_component(path.name)}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        _build_session(path, staging, options, result)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result


def _claims(results: Iterable[ImportResult]) -> list[runs.RankClaim[Path]]:
    return [
        runs.RankClaim(r.source, r.identity.rank, r.identity.world_size, r.identity.hostname, r.identity.pid)
        for r in results
        if r.identity is not None and r.identity.rank_known
    ]


def rank_clashes(results: Iterable[ImportResult]) -> dict[tuple[int, int], list[Path]]:
    """(rank, world size) -> the traces that claim it from more than one process: separate runs (``model.runs``)."""
    return runs.clashes(_claims(results))


def rank_windows(results: Iterable[ImportResult]) -> dict[tuple[int, int], list[Path]]:
    """(rank, world size) -> the traces one process wrote for it (several windows of one rank)."""
    return runs.windows(_claims(results))


def remove_dead_staging(out_dir: Path) -> list[Path]:
    """Removes the staging folders of imports whose process is gone (killed mid-import): an
    import that dies leaves nothing behind once the next import runs in the same folder."""
    removed = []
    for folder in out_dir.glob(f"{STAGING_PREFIX}*.tmp"):
        pid = as_int(folder.name[len(STAGING_PREFIX) :].split("-", 1)[0])
        if folder.is_dir() and not folder.is_symlink() and pid is not None and not process_alive(pid):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@dataclass(frozen=True)
class _Plan:
    """Everything known about a trace before its events are converted."""

    source: Path
    metadata: dict[str, Any]
    identity: Identity
    base_ns: int
    start_ns: int
    window_ns: tuple[int, int] | None
    final: Path
    source_sha256: str
    replaces: bool = False  # ``final`` holds an earlier import of this same trace

    @property
    def session_id(self) -> str:
        return f"{self.final.parent.name}/{self.final.name}"


def _build_session(path: Path, staging: Path, options: ImportOptions, result: ImportResult) -> None:
    if not options.write_pb:
        _build_light_session(path, staging, options, result)
        return
    from kinetoscope.convert import conversion  # not imported by a light import

    trace = staging / layout.TRACE_JSON
    copied = copy_decompressed(path, trace, result.problems)
    ends = kineto_json.read_ends(trace, tf.FACTS_RE)
    kineto_json.check_ends(ends, str(path))
    foreseen = tf.foreseen(ends)
    plan = _plan(path, ends.metadata, foreseen, options, copied.source_sha256, result.problems)
    converted = _convert(trace, staging, plan, options, ends)
    if converted.facts != foreseen:
        # An event between the head and tail blocks changes the facts: convert again with them.
        for name in converted.stats.files:
            discard(staging / name)
        plan = _plan(path, ends.metadata, converted.facts, options, copied.source_sha256)
        converted = _convert(trace, staging, plan, options, ends)
    result.problems.merge(converted.problems)
    result.stats = converted.stats
    info = _trace_info(plan)
    conversion.record_conversion(info, result.stats, result.problems)
    seal(staging, info, result.stats, {layout.TRACE_JSON: copied.copy_sha256})
    _move_into_place(staging, plan.final, options.force or plan.replaces)
    result.session, result.identity = plan.final, plan.identity


def _build_light_session(path: Path, staging: Path, options: ImportOptions, result: ImportResult) -> None:
    """``trace.json`` and a complete ``trace_info.pb`` whose modes say the packet files were not written."""
    trace = staging / layout.TRACE_JSON
    linked = options.link_trace and not is_gzip(path) and light.link_or_clone(path, trace)
    scan = tf.FactScan()  # fed the copy's blocks as they are written: the copy is not read again
    if not linked:
        copied = copy_decompressed(path, trace, result.problems, scan)
    ends = kineto_json.read_ends(trace, tf.FACTS_RE)
    kineto_json.check_ends(ends, str(path))
    if linked:  # the link is the source: one hash for both, made as the scan reads it
        hasher = hashlib.sha256()
        facts = tf.scan_selected(trace, ends, hasher)
        copied = CopiedTrace(hasher.hexdigest(), hasher.hexdigest())
    else:
        facts = scan.completed(ends)
    plan = _plan(path, ends.metadata, facts, options, copied.source_sha256, result.problems)
    info = _trace_info(plan)
    ti.record_skipped(info, result.problems)  # what copying met (a cut or damaged gzip stream)
    light.seal_light(staging, info, {layout.TRACE_JSON: copied.copy_sha256})
    _move_into_place(staging, plan.final, options.force or plan.replaces)
    result.session, result.identity = plan.final, plan.identity


@dataclass(frozen=True)
class _Converted:
    """One conversion of the copy: its counts, the problems it met, and the facts it noted."""

    stats: conversion.ConversionStats
    problems: ProblemLog
    facts: TraceFacts


def _convert(
    trace: Path, staging: Path, plan: _Plan, options: ImportOptions, ends: kineto_json.TraceEnds
) -> _Converted:
    """Convert the copy's events with what ``plan`` knows, noting the facts as they are read."""
    from kinetoscope.convert import conversion
    from kinetoscope.convert import session_traces as st
    from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles

    label = str(plan.source)
    notes, problems = tf.FactNotes(), ProblemLog()
    files = SessionPacketFiles(staging, _header(plan), {CLOCK_REALTIME: plan.start_ns})
    convert_options = conversion.ConvertOptions(
        base_ns=plan.base_ns, session_id=plan.session_id, window_ns=plan.window_ns
    )
    stats = st.convert(
        lambda log: notes.noting(kineto_json.iter_trace_records(trace, log, options.batch_size, label=label)),
        files,
        convert_options,
        problems,
        label,
    )
    return _Converted(stats, problems, notes.completed(ends))


def _plan(  # noqa: PLR0917 - one call shape for the three callers
    path: Path,
    metadata: dict[str, Any],
    facts: TraceFacts,
    options: ImportOptions,
    source_sha256: str,
    problems: ProblemLog | None = None,
) -> _Plan:
    """What is known before conversion; header values out of range are problems in ``problems``."""
    labelled = _Labelled(str(path), problems) if problems is not None else None
    identity = identity_of(metadata, facts, labelled)
    base_ns = _base_ns(metadata, labelled)
    start_ns = _start_ns(facts, base_ns, path)
    final, replaces = _session_path(options, identity, start_ns, source_sha256)
    window_ns = _window_ns(facts, base_ns)
    return _Plan(path, metadata, identity, base_ns, start_ns, window_ns, final, source_sha256, replaces)


@dataclass(frozen=True)
class CopiedTrace:
    """Hashes made while copying a trace: of the source as stored and of the (decompressed) copy."""

    source_sha256: str
    copy_sha256: str


def copy_decompressed(source: Path, target: Path, problems: ProblemLog, scan: tf.FactScan | None = None) -> CopiedTrace:
    """Copy a trace, gunzipping it when compressed; a cut or damaged stream keeps what was readable.

    The source is hashed as it is read (compressed bytes and all, what follows damage too) and
    the copy as it is written, so neither file is read again for the manifest; ``scan`` is fed
    the copy's blocks (``trace_facts.SCAN_BLOCK_BYTES`` each), and its end.
    """
    stored = hashlib.sha256()
    reader = kineto_json.open_source(source, problems, hasher=stored)
    copied = hashlib.sha256()
    try:
        with open(target, "wb") as out:
            while chunk := reader.read(tf.SCAN_BLOCK_BYTES):
                out.write(chunk)
                copied.update(chunk)
                if scan is not None:
                    scan.feed(chunk)
        if scan is not None:
            scan.feed(b"")
        reader.hash_rest()
    finally:
        reader.close()
    refuse_too_large(problems)
    return CopiedTrace(stored.hexdigest(), copied.hexdigest())


def refuse_too_large(problems: ProblemLog) -> None:
    """Raise ``FormatError`` when a reader stopped at a bound (a gzip trace that expands too far):
    a session of the first part of such a trace would pass for the whole."""
    for problem in problems.records:
        if problem.kind == TOO_LARGE:
            raise FormatError(f"{problem.file}: {problem.message}")


@dataclass(frozen=True)
class _Labelled:
    """A problem log and the name of the trace its header problems are about."""

    file: str
    problems: ProblemLog


def identity_of(metadata: dict[str, Any], facts: TraceFacts, problems: _Labelled | None = None) -> Identity:
    """Rank, world size and backend from ``distributedInfo``; rank unknown when it is absent, or
    out of range (a problem in ``problems``, when given)."""
    dist = metadata.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    rank = _in_range(dist, "rank", INT32_LIMIT, problems)
    world_size = _in_range(dist, "world_size", INT32_LIMIT, problems)
    host = metadata.get("host_name") or metadata.get("hostname") or ""
    return Identity(
        rank=rank if rank is not None else 0,
        world_size=world_size if world_size is not None and world_size > 0 else 0,
        rank_known=rank is not None,
        backend=str(dist.get("backend") or ""),
        pid=facts.pid if facts.pid is not None else 0,
        hostname=str(host),
    )


def _in_range(values: dict[str, Any], key: str, limit: int, problems: _Labelled | None, where: str = "") -> int | None:
    """``values[key]`` as an int in ``[0, limit)``; None when absent or not, the latter a problem."""
    number = as_int(values.get(key))
    kept = in_range(number, limit)
    if number is not None and kept is None and problems is not None:
        name = f"{where or 'distributedInfo.'}{key}"
        message = f"{name} {number} is out of range (0 to {limit - 1}); read as unknown"
        problems.problems.add(problems.file, "header", OUT_OF_RANGE, message)
    return kept


def _base_ns(metadata: dict[str, Any], problems: _Labelled | None = None) -> int:
    base = _in_range(metadata, "baseTimeNanoseconds", BASE_NS_LIMIT, problems, where="top level ")
    return base if base is not None and base > 0 else 0


def _start_ns(facts: TraceFacts, base_ns: int, path: Path) -> int:
    """When the profile started: its window, else its first events, else the file's modification time."""
    if facts.window_us is not None:
        return ke.to_ns(facts.window_us[0], base_ns)
    if facts.first_ts_us is not None:
        return ke.to_ns(facts.first_ts_us, base_ns)
    return path.stat().st_mtime_ns


def _window_ns(facts: TraceFacts, base_ns: int) -> tuple[int, int] | None:
    if facts.window_us is None:
        return None
    return ke.to_ns(facts.window_us[0], base_ns), ke.to_ns(facts.window_us[1], base_ns)


def _instance(identity: Identity) -> str:
    return identity.hostname or IMPORT_INSTANCE


def _session_path(options: ImportOptions, identity: Identity, start_ns: int, source_sha256: str) -> tuple[Path, bool]:
    """The session's final path, and whether it holds an earlier import of the same trace (same
    SHA-256), which this one replaces: importing a trace again never adds a second copy. A later
    cycle number when another trace already took the first."""
    cycle = 0
    while True:
        path = layout.session_path(options.out_dir, _instance(identity), identity.pid, start_ns, cycle)
        if not path.exists() or options.force:
            return path, False
        if _imported_from(path) == source_sha256:
            return path, True
        cycle += 1


def _imported_from(session: Path) -> str | None:
    """The SHA-256 of the trace ``session`` was imported from (None: not an import, or unreadable)."""
    try:
        info = ti.read_trace_info(session)
    except FormatError:
        return None
    return info.import_source.sha256 or None if info.HasField("import_source") else None


def _identity(plan: _Plan) -> ti.Identity:
    """The session identity recorded in trace_info.pb and in every packet file's header."""
    identity = plan.identity
    ident = ti.Identity(session_id=plan.session_id, instance_id=_instance(identity))
    ident.instance_source = "trace" if identity.hostname else "import"
    ident.hostname, ident.pid = identity.hostname, identity.pid
    ident.rank, ident.local_rank, ident.world_size = identity.rank, identity.rank, identity.world_size
    ident.rank_known, ident.backend = identity.rank_known, identity.backend
    return ident


def _header(plan: _Plan) -> FileHeader:
    return packet_header(_identity(plan))


def packet_header(identity: ti.Identity) -> FileHeader:
    """The header of an imported session's packet files."""
    return ti.file_header(identity, "", extra={"imported": "1"})


def _trace_info(plan: _Plan) -> Any:
    metadata, path = plan.metadata, plan.source
    info = ti.new_trace_info()
    info.identity.CopyFrom(_identity(plan))
    info.versions.kinetoscope = __version__
    info.config.modes.extend([ti.Mode.MODE_DEVICE, ti.Mode.MODE_RUNTIME])
    info.config.profile_output_dir = str(plan.final.parent.parent)
    info.profiler_base_time_ns = plan.base_ns
    info.start_clocks.realtime_ns = plan.start_ns
    if plan.window_ns is not None:  # the profiler's span: when it stopped (verify compares device work with it)
        info.stop_clocks.realtime_ns = plan.window_ns[1]
    source = info.import_source
    source.path, source.size_bytes, source.sha256 = str(path), path.stat().st_size, plan.source_sha256
    source.distributed_info = isinstance(metadata.get("distributedInfo"), dict)
    source.schema_version = str(metadata.get("schemaVersion", ""))
    profile_memory = metadata.get("profile_memory")
    info.profiler_options.profile_memory = bool(profile_memory)
    info.profiler_options.record_shapes = bool(metadata.get("record_shapes"))
    return info


def seal(staging: Path, info: Any, stats: conversion.ConversionStats, known_sha256: dict[str, str]) -> None:
    """Complete ``info`` (the modes' files, the manifest, COMPLETE) for the files ``stats`` wrote; write it."""
    device_files = sorted(name for name in stats.files if layout.parse_device_trace_name(name) is not None)
    reason = "" if device_files else "the trace has no device executions"
    info.modes.add(mode=ti.Mode.MODE_DEVICE, files=device_files, reason=reason)
    info.modes.add(mode=ti.Mode.MODE_RUNTIME, files=[layout.SYSTEM_TRACE])
    info.files.extend(ti.build_manifest(staging, known_sha256))
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    ti.write_trace_info(staging, info)


def _move_into_place(staging: Path, final: Path, force: bool) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists() and force:
        shutil.rmtree(final)
    os.replace(staging, final)
