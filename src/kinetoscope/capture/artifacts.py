"""Compiled kernels in the session: with ``artifact_cache_dir``, copy what ran into ``kernels/``.

- When the ``Profiler`` is built, torch.compile is pointed at ``artifact_cache_dir``
  (``TORCHINDUCTOR_CACHE_DIR``) unless the job chose a cache directory itself.
- With ``precache=True`` the catalog of generated graphs, kernels and file hashes is
  gathered at the end of every compilation, i.e. during warm-up. With ``precache=False``
  it is gathered when the profiler starts, inside the profiled window.
- Inductor's provenance tracking is turned on with it (``capture.provenance``), so each kernel
  in ``kernels/index.json`` names its graph nodes and model source lines.
- On export, the graphs whose call appears in ``trace.json`` (and Triton kernels named
  there) are copied to ``kernels/<cache-key>/`` with ``kernels/index.json``; a run that
  executed no compiled code records that in ``trace_info.pb``.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kinetoscope._errors import SessionError
from kinetoscope.capture import provenance
from kinetoscope.capture.config import ProfileConfig
from kinetoscope.capture.kernel_catalog import CATALOG, ArtifactFile, Graph, inductor_cache_dir
from kinetoscope.format.private_dirs import UnsafeDirectoryError, private_dir
from kinetoscope.format.session_files import kernel_index
from kinetoscope.format.session_files import session_dir as layout

_SCAN_CHUNK_BYTES = 8 << 20
_MAX_NAME_BYTES = 4096
NOT_SET = "artifact_cache_dir is not set (nor KINETOSCOPE_ARTIFACT_CACHE_DIR)"
NONE_RAN = "no compiled kernel ran in the profiled window (eager mode, or torch.compile code did not run)"

_precache_lock = threading.Lock()


class KernelCapture:
    """A Profiler's compiled-kernel capture: set up at construction, exported with each session."""

    def __init__(self, config: ProfileConfig) -> None:
        self.enabled = config.artifact_cache_dir is not None
        self.precache = config.precache
        if config.artifact_cache_dir is not None:
            point_torch_compile_at(config.artifact_cache_dir)
            provenance.enable()
            if self.precache:
                install_precache()

    def on_profiler_start(self) -> None:
        if self.enabled and not self.precache:
            CATALOG.refresh()

    def export(self, session_path: Path, trace_path: Path, info: Any) -> None:
        """Copy the kernels that ran into the session and describe them in ``info.compiled_kernels``."""
        out = info.compiled_kernels
        out.enabled, out.precached = self.enabled, self.enabled and self.precache
        if not self.enabled:
            out.reason = NOT_SET
            return
        out.cache_dir = inductor_cache_dir()
        CATALOG.refresh()
        catalog = list(CATALOG.graphs.values())
        found = names_in_file(trace_path, names_of(catalog))  # the one read of the trace for kernels
        graphs = ran_graphs(catalog, found)
        if not graphs:
            out.reason = NONE_RAN
            return
        index, missing = copy_graphs(graphs, session_path, found)
        index.update(format=kernel_index.INDEX_FORMAT, cache_dir=out.cache_dir, precached=out.precached)
        kernel_index.write_index(session_path / layout.KERNEL_INDEX, index)
        out.index, out.graphs = layout.KERNEL_INDEX, len(graphs)
        out.kernels = sum(len(g.kernels) for g in graphs)
        out.files = len(index["files"])
        if missing:
            out.reason = f"{len(missing)} file(s) had gone from the cache and were not copied: {', '.join(missing[:5])}"


def point_torch_compile_at(directory: Path) -> None:
    """Make torch.compile write its kernels under ``directory``, unless the job chose a place.
    torch loads compiled code from there: it must be a private folder (`format.private_dirs`)."""
    if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
        try:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(private_dir(directory).resolve())
        except UnsafeDirectoryError as exc:
            raise SessionError(f"artifact_cache_dir: {exc}") from exc


def install_precache() -> None:
    """Refresh the catalog at the end of every compilation (registered once; again after
    ``torch._dynamo.reset()``, which drops every compile callback)."""
    with _precache_lock:
        from torch._dynamo.callback import callback_handler

        if _refresh_catalog not in callback_handler.end_callbacks:
            callback_handler.register_end_callback(_refresh_catalog)


def _refresh_catalog(_args: object) -> None:
    CATALOG.refresh()


def names_of(graphs: Iterable[Graph]) -> set[str]:
    """The names the framework trace gives the graphs' calls and their kernels."""
    return {name for g in graphs for name in (g.trace_name, *(k.name for k in g.kernels))}


def ran_graphs(graphs: Iterable[Graph], found: set[str]) -> list[Graph]:
    """The graphs whose call, or one of whose kernels, is among the names ``found`` in the framework trace."""
    return [g for g in graphs if g.trace_name in found or any(k.name in found for k in g.kernels)]


def names_in_file(path: Path, names: set[str]) -> set[str]:
    """Which of ``names`` occur as a JSON string value in ``path``, read in bounded chunks."""
    if not names:
        return set()
    pattern = re.compile(b'"(' + b"|".join(re.escape(n.encode()) for n in sorted(names)) + b')"')
    found: set[str] = set()
    tail = b""
    with open(path, "rb") as handle:
        while chunk := handle.read(_SCAN_CHUNK_BYTES):
            data = tail + chunk
            found.update(m.decode() for m in pattern.findall(data))
            tail = data[-_MAX_NAME_BYTES:]
    return found


def copy_graphs(graphs: list[Graph], session_path: Path, in_trace: set[str]) -> tuple[dict[str, Any], list[str]]:
    """Copy the graphs' files into ``kernels/``; return the index and the sources that were gone.

    ``in_trace``: the names found in the framework trace (``names_in_file`` of ``names_of``)."""
    copier = _Copier(session_path)
    names: dict[str, list[dict[str, Any]]] = {}
    for graph in graphs:
        names.setdefault(graph.trace_name, []).append({
            "kind": "graph", "graph": graph.fx_key, "cache_key": graph.module_key, "in_trace": True,
            "files": copier.copy([graph.wrapper], graph.module_key), "kernels": [k.name for k in graph.kernels],
            **_provenance_of_graph(graph),
        })
        for kernel in graph.kernels:
            names.setdefault(kernel.name, []).append({
                "kind": kernel.kind, "graph": graph.fx_key, "cache_key": kernel.cache_key,
                "files": copier.copy(kernel.files, kernel.cache_key), "in_trace": kernel.name in in_trace,
                **_provenance_of_kernel(graph, kernel.name),
            })
    return {"trace_names": names, "files": copier.files}, copier.missing


def _provenance_of_kernel(graph: Graph, name: str) -> dict[str, Any]:
    found = graph.provenance.get(name)
    return {"provenance": found.as_json()} if found is not None else {}


def _provenance_of_graph(graph: Graph) -> dict[str, Any]:
    """Every kernel the graph calls, its extern (aten) calls too, with where it came from."""
    if not graph.provenance:
        return {}
    return {"provenance": {name: found.as_json() for name, found in sorted(graph.provenance.items())}}


class _Copier:
    """Copies artifact files into a session once each, remembering what it copied and what was gone."""

    def __init__(self, session_path: Path) -> None:
        self.session_path = session_path
        self.files: dict[str, dict[str, Any]] = {}
        self.missing: list[str] = []

    def copy(self, sources: Iterable[ArtifactFile], cache_key: str) -> list[str]:
        copied = []
        for source in sources:
            relative = layout.kernel_file_name(cache_key, _file_name(source.path))
            if relative not in self.files and not self._copy_one(source, self.session_path / relative):
                continue
            self.files[relative] = {"size_bytes": source.size_bytes, "sha256": source.sha256,
                                    "source": str(source.path)}
            copied.append(relative)
        return copied

    def _copy_one(self, source: ArtifactFile, target: Path) -> bool:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source.path, target)
        except FileNotFoundError:
            self.missing.append(str(source.path))
            return False
        return True


def _file_name(path: Path) -> str:
    """Inductor shards files into two-letter folders; Triton keeps one hash folder per compiled
    variant, named ``<kernel>.<ext>`` inside, so that folder stays part of the name."""
    return path.name if len(path.parent.name) <= 2 else f"{path.parent.name}-{path.name}"
