"""What torch.compile has generated and loaded in this process: graphs, kernels, files.

Inductor writes each compiled graph's wrapper module (``<cache>/<xx>/<key>.py``) and its
kernels (C++ ``<key>.main.cpp`` + ``.so`` on CPU; a Triton module ``<key>.py`` plus
binaries under ``<cache>/triton`` on CUDA), and keeps the loaded modules in
``PyCodeCache.modules``. The catalog walks those modules, finds each graph's kernels and
files, hashes the files, and learns each graph's FX cache key: the key torch names the
graph's call with in the framework trace (``## Call CompiledFxGraph <key> ##``), and,
where Inductor tracked it, each kernel's provenance (``capture.provenance``).

Gathering reads and hashes files and scans live objects for the FX keys, so it is done
incrementally and, with ``precache``, at the end of each compilation (during warm-up).
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kinetoscope.capture.provenance import Provenance, of_compiled
from kinetoscope.format.session_files.kernel_index import graph_event_name

_KERNEL_NAME_RE = re.compile(r"^(cpp_fused_|triton_)\w+$")
_HASH_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class ArtifactFile:
    """A file torch.compile wrote, with the size and hash it had when gathered."""

    path: Path
    size_bytes: int
    sha256: str

    @classmethod
    def of(cls, path: Path) -> ArtifactFile:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(_HASH_CHUNK_BYTES):
                digest.update(chunk)
        return cls(path, path.stat().st_size, digest.hexdigest())


@dataclass(frozen=True)
class Kernel:
    name: str
    kind: str  # "cpp" or "triton"
    cache_key: str
    files: tuple[ArtifactFile, ...]


@dataclass
class Graph:
    """One compiled graph: its generated wrapper module and the kernels it calls."""

    module_key: str
    wrapper: ArtifactFile
    kernels: tuple[Kernel, ...]
    fx_key: str | None = None
    fx_key_known: bool = False
    # kernel name (C++, Triton or extern) -> where it came from; empty unless Inductor tracked it
    provenance: dict[str, Provenance] = field(default_factory=dict)

    @property
    def trace_name(self) -> str:
        return graph_event_name(self.fx_key)


@dataclass
class Catalog:
    """Graphs loaded so far, keyed by wrapper module key; ``refresh`` adds the new ones."""

    graphs: dict[str, Graph] = field(default_factory=dict)
    gathered_s: float = 0.0
    _seen: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self) -> int:
        """Gather the modules loaded since the last refresh; return how many graphs were added."""
        start = time.perf_counter()
        with self._lock:
            added = 0
            for module in _loaded_modules():
                key = str(getattr(module, "key", "") or Path(module.__file__ or "").stem)
                if key in self._seen:
                    continue
                self._seen.add(key)
                graph = _graph_of(key, module)
                if graph is not None:
                    self.graphs[key] = graph
                    added += 1
            if any(not g.fx_key_known for g in self.graphs.values()):
                _learn_fx_keys(self.graphs)
            self.gathered_s += time.perf_counter() - start
        return added

    def reset(self) -> None:
        with self._lock:
            self.graphs.clear()
            self._seen.clear()
            self.gathered_s = 0.0


def inductor_cache_dir() -> str:
    """The directory torch.compile writes to in this process (its own rule, without importing it)."""
    import getpass
    import tempfile

    configured = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if configured:
        return os.path.abspath(configured)
    return os.path.join(tempfile.gettempdir(), f"torchinductor_{getpass.getuser()}")


def _loaded_modules() -> list[ModuleType]:
    codecache = sys.modules.get("torch._inductor.codecache")
    cache = getattr(codecache, "PyCodeCache", None)
    return [m for m in list(getattr(cache, "modules", [])) if getattr(m, "__file__", None)]


def _graph_of(key: str, module: ModuleType) -> Graph | None:
    """The graph a generated module is the wrapper of; None for kernel-only modules."""
    if not callable(getattr(module, "call", None)):
        return None
    kernels = []
    for name, value in sorted(vars(module).items()):
        if _KERNEL_NAME_RE.match(name):
            kernel = _kernel_of(name, value)
            if kernel is not None:
                kernels.append(kernel)
    return Graph(module_key=key, wrapper=ArtifactFile.of(Path(str(module.__file__))), kernels=tuple(kernels))


def _kernel_of(name: str, value: Any) -> Kernel | None:
    library = getattr(getattr(value, "__self__", None), "__file__", None)
    if isinstance(library, str) and library.endswith(".so"):
        return _cpp_kernel(name, Path(library))
    source = _triton_source(value)
    if source is not None:
        return _triton_kernel(name, source)
    return None


def _cpp_kernel(name: str, library: Path) -> Kernel:
    source = library.with_suffix(".cpp")
    files = [ArtifactFile.of(p) for p in (source, library) if p.is_file()]
    return Kernel(name=name, kind="cpp", cache_key=library.name.split(".")[0], files=tuple(files))


def _triton_source(value: Any) -> Path | None:
    """The generated Triton module of a kernel object (CachingAutotuner -> JITFunction -> function)."""
    function = getattr(getattr(value, "fn", None), "fn", None)
    code = getattr(function, "__code__", None)
    filename = getattr(code, "co_filename", None)
    return Path(filename) if isinstance(filename, str) and os.path.isfile(filename) else None


def _triton_kernel(name: str, source: Path) -> Kernel:
    files = [ArtifactFile.of(source), *(ArtifactFile.of(p) for p in _triton_binaries(name))]
    return Kernel(name=name, kind="triton", cache_key=source.stem, files=tuple(files))


def _triton_binaries(name: str) -> list[Path]:
    """Triton's compiled forms of kernel ``name`` (.cubin, .ptx, .json, ...) in its cache."""
    root = Path(os.environ.get("TRITON_CACHE_DIR") or os.path.join(inductor_cache_dir(), "triton"))
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob(f"{name}.*") if p.is_file())


def _learn_fx_keys(graphs: dict[str, Graph]) -> None:
    """Find each graph's FX cache key on its live CompiledFxGraph (the key the trace names)."""
    output_code = sys.modules.get("torch._inductor.output_code")
    compiled_type = getattr(output_code, "CompiledFxGraph", None)
    if compiled_type is None:
        return
    for obj in gc.get_objects():
        if type(obj) is compiled_type:
            graph = graphs.get(str(getattr(obj, "cache_key", "")))
            if graph is not None and not graph.fx_key_known:
                fx_key = getattr(obj, "_fx_graph_cache_key", None)
                graph.fx_key, graph.fx_key_known = (str(fx_key) if fx_key else None), True
                graph.provenance = of_compiled(obj)


CATALOG = Catalog()
