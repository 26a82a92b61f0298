"""Checks of one session directory: metadata, files, modes, the trace itself, drops, snapshots,
compiled kernels, synchronisation before export, and warm-up."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format.files import inside, regular_file_inside, sha256_of
from kinetoscope.format.perfetto_packets.packets import ReadStats, iter_packets
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.format.session_files.snapshot import load_snapshot
from kinetoscope.sessions.file_status import OUTSIDE, OUTSIDE_MESSAGE, file_status
from kinetoscope.sessions.sources import SessionSource
from kinetoscope.verify.trace_scan import TraceScan, covered_ns, launched_before, scan_trace, unplaced_device_work

ERROR, PROBLEM, NOTE = "error", "problem", "note"
# Device work may end this long after the profiler's stop before it counts as unsynchronised.
SYNC_TOLERANCE_NS = 1_000_000
COMPILE_DOMINATES = 0.5
_MODE_FILES: dict[int, str] = {
    ti.Mode.MODE_RUNTIME: layout.SYSTEM_TRACE,
    ti.Mode.MODE_CPU_UTIL: layout.CPU_UTIL,
    ti.Mode.MODE_HOST_MEMORY: layout.HOST_MEMORY,
}


@dataclass(frozen=True)
class Finding:
    """One result of a check: ``severity`` is error (session unusable), problem or note."""

    severity: str
    check: str
    session: str
    file: str
    message: str
    remedy: str = ""


@dataclass
class SessionCheck:
    source: SessionSource
    findings: list[Finding] = field(default_factory=list)
    scan: TraceScan | None = None
    _scans: dict[Path, TraceScan] = field(default_factory=dict)

    def add(self, severity: str, check: str, file: str, message: str, remedy: str = "") -> None:
        self.findings.append(Finding(severity, check, self.source.session_id, file, message, remedy))

    def scan_of(self, trace: Path) -> TraceScan:
        """The one pass over ``trace`` (a regular file inside the session): its facts and its hash."""
        key = trace.resolve()
        found = self._scans.get(key)
        if found is None:
            info = self.source.info
            found = self._scans[key] = scan_trace(trace, info.profiler_base_time_ns if info is not None else 0)
        return found

    @property
    def memory_only(self) -> bool:
        """A memory snapshot and no trace, by design (a flight-recorder dump)."""
        return self.scan is None and ti.memory_only(self.source.info)

    @property
    def usable(self) -> bool:
        return (self.scan is not None and self.scan.events > 0) or self.memory_only


def check_session(source: SessionSource) -> SessionCheck:
    check = SessionCheck(source)
    _metadata(check)
    if source.rank_note:
        remedy = "capture with torch.distributed initialised, or import traces that carry distributedInfo"
        check.add(NOTE, "rank", layout.TRACE_INFO, source.rank_note, remedy)
    _manifest(check)
    _packet_files(check)
    _modes(check)
    _trace(check)
    if source.info is not None:
        _drops(check, source.info)
        _timing(check, source.info)
        _kernels(check, source.info)
        _launched_before(check)
        _device_activity(check)
        _capture_warnings(check, source.info)
    _snapshots(check)
    _leftovers(check)
    return check


_NO_METADATA_REMEDY = (
    "the exporter did not finish (or the file was removed); re-capture, or `kinetoscope import` the trace"
)
_METADATA_REMEDY = "the file is damaged: copy the session again from where it was written, or re-capture"


def _metadata(check: SessionCheck) -> None:
    info = check.source.info
    if info is None:
        check.add(
            PROBLEM,
            "metadata",
            layout.TRACE_INFO,
            check.source.info_problem,
            _METADATA_REMEDY if (check.source.path / layout.TRACE_INFO).exists() else _NO_METADATA_REMEDY,
        )
        return
    if info.state != ti.SessionState.SESSION_STATE_COMPLETE:
        reason = info.error or "the process stopped before export finished (killed, or still running)"
        check.add(
            PROBLEM,
            "incomplete",
            layout.TRACE_INFO,
            f"session state {ti.state_name(info.state)}: {reason}",
            "files were read up to their last complete packet; re-capture for a complete session",
        )


_TEMP_SUFFIXES = (".tmp",)
_OUTSIDE_REMEDY = "the manifest was edited after capture: do not trust this session's metadata"


def _report_outside(check: SessionCheck, name: str) -> None:
    if not any(f.check == "outside_session" and f.file == name for f in check.findings):
        check.add(PROBLEM, "outside_session", name, OUTSIDE_MESSAGE, _OUTSIDE_REMEDY)


def _readable(check: SessionCheck, path: Path) -> bool:
    """Whether verify may read `path`: a regular file inside the session, not a link out of it,
    a device or a FIFO (those are reported instead)."""
    if regular_file_inside(check.source.path, path.name) is not None:
        return True
    _report_outside(check, path.name)
    return False


def _manifest(check: SessionCheck) -> None:
    info, session = check.source.info, check.source.path
    for entry in info.files if info is not None else []:
        status, size = file_status(session, entry.name, entry.size_bytes)
        regular = regular_file_inside(session, entry.name)
        if status == OUTSIDE or (status == "ok" and regular is None):
            _report_outside(check, entry.name)
        elif status in ("missing", "partial"):
            state = "only its .partial form exists" if status == "partial" else "missing"
            check.add(
                PROBLEM,
                "missing_file",
                entry.name,
                f"listed in the manifest but {state}",
                "copy the whole session directory; files were lost after capture",
            )
        elif status != "ok":
            check.add(
                PROBLEM,
                "truncated",
                entry.name,
                f"{size} bytes on disk, {entry.size_bytes} in the manifest",
                "the file changed or was cut short after capture; copy it again",
            )
        elif entry.sha256 and regular is not None and _sha256(check, entry.name, regular) != entry.sha256:
            check.add(
                PROBLEM,
                "corrupt",
                entry.name,
                "SHA-256 differs from the manifest",
                "the file changed after capture; copy it again",
            )
    for path in sorted(session.iterdir()):
        if path.is_file() and path.stat().st_size == 0:
            check.add(PROBLEM, "empty_file", path.name, "zero bytes", "nothing was written; see the mode outcomes")
        elif path.name.endswith(layout.PARTIAL_SUFFIX):
            check.add(
                PROBLEM,
                "partial_file",
                path.name,
                "left unfinished by the writing process",
                "the process was killed or is still running; its data is read up to the last flush",
            )


def _sha256(check: SessionCheck, name: str, path: Path) -> str:
    """A manifest file's hash; trace.json's comes from the scan, which reads it anyway."""
    return check.scan_of(path).sha256 if name == layout.TRACE_JSON else sha256_of(path)


def _packet_files(check: SessionCheck) -> None:
    for path in sorted(check.source.path.glob("*.pb*")):
        if path.name == layout.TRACE_INFO or path.is_dir() or not _readable(check, path) or path.stat().st_size == 0:
            continue
        stats = ReadStats()
        try:
            for _ in iter_packets(path, stats):
                pass
        except OSError as exc:
            check.add(PROBLEM, "unreadable", path.name, f"cannot read: {exc}")
            continue
        if stats.truncated:
            check.add(
                PROBLEM,
                "truncated",
                path.name,
                f"byte {stats.truncated_at}: {stats.damage} ({stats.packets} whole packets kept)",
                "the file is damaged (or the writer stopped mid-packet); re-capture",
            )


def _modes(check: SessionCheck) -> None:
    info, session = check.source.info, check.source.path
    if info is None:
        return
    outcomes = {o.mode: o for o in info.modes}
    for mode in info.config.modes:
        outcome = outcomes.get(mode)
        expected = list(outcome.files) if outcome is not None and outcome.files else _default_files(mode)
        missing = [name for name in expected if regular_file_inside(session, name) is None]
        name = ti.mode_name(mode)
        if outcome is not None and outcome.reason and not outcome.files:
            if ti.reports_a_loss(outcome.reason):  # a light import's packet files: nothing is missing
                check.add(NOTE, "mode_outcome", "", f"{name} on but produced no file: {outcome.reason}")
        elif missing:
            check.add(
                PROBLEM,
                "missing_file",
                ", ".join(missing),
                f"{name} mode is on but its file is missing",
                "the session is incomplete; copy the whole directory or re-capture",
            )


def _default_files(mode: int) -> list[str]:
    name = _MODE_FILES.get(mode)
    return [name] if name else []


def _trace(check: SessionCheck) -> None:
    session = check.source.path
    trace = session / layout.TRACE_JSON
    if not trace.exists() and ti.memory_only(check.source.info):
        _memory_only(check)
        return
    if not trace.exists():
        elsewhere = _stray_traces(session)
        hint = (
            f"found {', '.join(str(p) for p in elsewhere)}: move it into {session} as trace.json"
            if elsewhere
            else ("pass Profiler(config).export_trace as on_trace_ready (it writes trace.json beside the system files)")
        )
        check.add(
            ERROR, "no_trace", layout.TRACE_JSON, "trace.json is missing: the session has no framework trace", hint
        )
        return
    if not _readable(check, trace):
        return
    check.scan = check.scan_of(trace)
    for kind, count in sorted(check.scan.problems.counts().items()):
        first = next((str(p) for p in check.scan.problems.records if p.kind == kind), "")
        check.add(
            PROBLEM,
            kind,
            layout.TRACE_JSON,
            f"{count} problem(s) of kind {kind}; first: {first}",
            "what could be read is kept; re-export or re-copy the trace for the rest",
        )
    if check.scan.events == 0:
        check.add(
            ERROR,
            "empty_trace",
            layout.TRACE_JSON,
            "trace.json holds no events",
            "profiling ran on nothing: check that the profiled code ran inside the profile() block",
        )


def _memory_only(check: SessionCheck) -> None:
    assert check.source.info is not None
    triggers = "; ".join(ti.snapshot_triggers(check.source.info)) or "export_snapshot"
    check.add(
        NOTE,
        "memory_only",
        layout.TRACE_JSON,
        f"no trace.json, by design: this session holds only a memory snapshot (written on: {triggers}); "
        "it holds no events",
        "`kinetoscope ingest` reads the snapshot into the allocations table; for a timeline, profile steps too "
        "(kinetoscope run --steps)",
    )


def _stray_traces(session: Path) -> list[Path]:
    candidates = [
        *session.glob("*.json"),
        *session.glob("*.json.gz"),
        *session.parent.glob("*.json"),
        *session.parent.glob("*.json.gz"),
    ]
    return sorted(p for p in candidates if p.name != layout.TRACE_JSON)[:3]


def _drops(check: SessionCheck, info: Any) -> None:
    for drop in info.drops:
        if drop.total > drop.kept:
            check.add(
                PROBLEM,
                "dropped_events",
                layout.device_trace_name(drop.device),
                f"device {drop.device}: {drop.total - drop.kept} events dropped (kept {drop.kept} of {drop.total})",
                "raise max_events_per_device, profile a shorter window, or limit capture_enabled_for_devices",
            )
    devices_with_files = {layout.parse_device_trace_name(p.name) for p in check.source.path.glob("device_*.pb")}
    device_mode = ti.Mode.MODE_DEVICE in info.config.modes
    # A device mode that says why it wrote no file (a light import) is reported once, by _modes.
    said = any(o.mode == ti.Mode.MODE_DEVICE and o.reason and not o.files for o in info.modes)
    if check.scan is not None and device_mode and not said:
        for device in sorted(check.scan.devices - devices_with_files):
            check.add(
                NOTE,
                "device_not_captured",
                layout.device_trace_name(device),
                f"device {device} ran work but has no device trace file",
                "capture_enabled_for_devices excludes it, or the capture predates device traces",
            )


def _timing(check: SessionCheck, info: Any) -> None:
    scan = check.scan
    if scan is None or scan.first_ns is None:
        return
    stop_ns = info.stop_clocks.realtime_ns or scan.last_host_end_ns or 0
    if scan.device_end_ns is not None and scan.device_end_ns > stop_ns + SYNC_TOLERANCE_NS:
        late_ms = (scan.device_end_ns - stop_ns) / 1e6
        check.add(
            PROBLEM,
            "no_synchronize",
            layout.TRACE_JSON,
            f"device work ends {late_ms:.1f} ms after the profiler stopped",
            "call kinetoscope.synchronize() (torch.accelerator.synchronize()) before the profile() block ends",
        )
    window = max((scan.last_host_end_ns or scan.first_ns) - scan.first_ns, 1)
    compiling = covered_ns(scan.compile_intervals)
    if compiling > COMPILE_DOMINATES * window:
        check.add(
            PROBLEM,
            "no_warmup",
            layout.TRACE_JSON,
            f"compilation takes {100 * compiling / window:.0f}% of the profiled window",
            "run a few warm-up iterations before profiling (or use a schedule with warmup steps)",
        )


def _launched_before(check: SessionCheck) -> None:
    """Device work the trace holds whose launch came before the window: counted, and named."""
    if check.scan is None:
        return
    count, device_ns = launched_before(check.scan)
    if count:
        check.add(
            NOTE,
            "launched_before_window",
            layout.TRACE_JSON,
            f"{count} device execution(s) ({device_ns / 1e6:.3f} ms of device time) have no launching call in the "
            "trace: they were launched before the profiler started",
            "summary counts them; `kinetoscope summary --window-launched-only` leaves them out, as HTA and "
            "TraceLens do",
        )


def _device_activity(check: SessionCheck) -> None:
    """Kernel launches with no device work at all: the device's activity was not recorded, so every
    device figure (busy, idle, launch delays, device findings) is unknown, not zero. Device work of
    a backend whose events carry no category kinetoscope places (an NPU's tasks in torch_npu's
    ``trace_view.json``) is counted and named."""
    scan = check.scan
    if scan is None:
        return
    unplaced, processes = unplaced_device_work(scan)
    if unplaced:
        check.add(
            PROBLEM,
            "device_work_unplaced",
            layout.TRACE_JSON,
            f"{unplaced} event(s) of the {', '.join(repr(p) for p in processes)} process carry no category "
            "kinetoscope places on a device (an NPU's tasks as torch_npu writes them): they are read as framework "
            "markers, so the device figures (busy, idle, kernels, device findings) leave them out",
            "read the device figures of this trace as unknown; the host's figures stand",
        )
    if not scan.kernel_launch_calls or scan.device_events:
        return
    check.add(
        PROBLEM,
        "no_device_activity",
        layout.TRACE_JSON,
        f"{scan.kernel_launch_calls} kernel launch call(s) but no device activity in the trace: the device's "
        "work was not recorded, so device analyses and findings cannot judge it",
        "profile with the device's activity too (`activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]`)",
    )


def _kernels(check: SessionCheck, info: Any) -> None:
    scan = check.scan
    if scan is None or not scan.kernel_hashes:
        return
    kernels = check.source.path / layout.KERNELS_DIR
    if kernels.is_symlink() and inside(check.source.path, layout.KERNELS_DIR) is None:
        _report_outside(check, layout.KERNELS_DIR)  # a link out of the session: never walked
        return
    if not kernels.is_dir() and info is not None and info.import_source.path:
        check.add(
            NOTE,
            "kernels_not_imported",
            layout.KERNELS_DIR,
            f"{len(scan.kernel_hashes)} compiled kernel(s) ran; an imported trace names them but carries no kernel "
            "files (they stay in the compile cache of the machine that ran them)",
            "to keep them, capture with kinetoscope and artifact_cache_dir set",
        )
        return
    if not kernels.is_dir():
        remedy = (
            "set artifact_cache_dir (or KINETOSCOPE_ARTIFACT_CACHE_DIR) so compiled kernels are copied into the session"
        )
        check.add(
            PROBLEM,
            "kernels_missing",
            layout.KERNELS_DIR,
            f"{len(scan.kernel_hashes)} compiled kernel(s) ran but the session has no kernels/ directory",
            remedy,
        )
        return
    present = "\n".join(p.name for p in kernels.rglob("*"))
    absent = sorted(h for h in scan.kernel_hashes if h not in present)
    if absent:
        check.add(
            PROBLEM,
            "kernels_missing",
            layout.KERNELS_DIR,
            f"{len(absent)} compiled kernel(s) ran but are not in kernels/ (first: {absent[0]})",
            "the kernels were compiled before artifact_cache_dir was set; clear the compile cache and re-capture",
        )


def _capture_warnings(check: SessionCheck, info: Any) -> None:
    """What the capture itself recorded as going wrong (a sampler that died, an export step that failed)."""
    for warning in info.warnings:
        if info.drops and "max_events_per_device=" in warning:
            continue  # a drop warning: the drops check reports it from info.drops, with its numbers
        remedy = "the session is usable; the data that step would have written is missing or partial"
        check.add(PROBLEM, "capture_warning", layout.TRACE_INFO, f"recorded at capture: {warning}", remedy)


def _leftovers(check: SessionCheck) -> None:
    """Temporary files an interrupted write left behind (``trace.json.tmp``, ``trace.json.tmp.tmp``)."""
    for path in sorted(check.source.path.glob("*")):
        if path.name.endswith(_TEMP_SUFFIXES) and path.is_file():
            size = path.stat().st_size
            check.add(
                NOTE,
                "leftover_temp",
                path.name,
                f"a temporary file of an interrupted write ({size:,} bytes); kinetoscope does not read it",
                "delete it once the session's other files check out",
            )


def _snapshot_loads(check: SessionCheck, path: Path) -> None:
    """A snapshot ingest would refuse (unreadable, code in its pickle, not a snapshot's structure)."""
    try:
        load_snapshot(path)
    except FormatError as exc:
        check.add(
            PROBLEM,
            "snapshot_unreadable",
            path.name,
            f"memory snapshot cannot be read: {exc}",
            "ingest leaves it out; re-export it with exporter.export_snapshot() from a trusted run",
        )


def _snapshots(check: SessionCheck) -> None:
    info = check.source.info
    multi_rank = info is not None and info.identity.world_size > 1
    for path in sorted(p for p in check.source.path.glob("*.pickle") if _readable(check, p)):
        _snapshot_loads(check, path)
        if multi_rank and layout.snapshot_rank(path.name) is None:
            check.add(
                PROBLEM,
                "snapshot_rank",
                path.name,
                "memory snapshot name has no rank<N> token in a multi-rank run",
                "name snapshots memory_snapshot_rank<N>.pickle so each is tied to its rank",
            )
