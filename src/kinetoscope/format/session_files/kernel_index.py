"""``kernels/index.json``: which compiled kernels ran in a session, and where their files are.

The index maps every name that identifies compiled code in ``trace.json`` to the files
copied into ``kernels/`` and the compiler's cache key::

    {
      "format": 2,
      "cache_dir": "/tmp/torchinductor_me",      # where torch.compile wrote them
      "precached": true,                          # metadata gathered during warm-up
      "trace_names": {
        "## Call CompiledFxGraph <fx-key> ##": [  # a compiled graph's event (CPU and CUDA)
          {"kind": "graph", "graph": "<fx-key>", "cache_key": "<module key>",
           "files": ["kernels/<module key>/<module key>.py"], "kernels": ["cpp_fused_relu_0"],
           "in_trace": true,
           "provenance": {"cpp_fused_relu_0": {...}, "extern_kernels.addmm": {...}}}],
        "cpp_fused_relu_0": [                      # a kernel of that graph
          {"kind": "cpp", "graph": "<fx-key>", "cache_key": "<kernel key>",
           "files": ["kernels/<kernel key>/<kernel key>.main.cpp", "..."], "in_trace": false,
           "provenance": {                         # where Inductor tracked it (format 2)
             "post_grad_nodes": ["relu"],          # Inductor graph nodes fused into the kernel
             "pre_grad_nodes": ["relu"],           # the model-level (pre-grad) nodes they came from
             "source": [{"file": "model.py", "line": 12, "function": "forward",
                         "code": "return torch.relu(self.fc(x))"}]}}]
      },
      "files": {"kernels/...": {"size_bytes": 123, "sha256": "...", "source": "/tmp/..."}}
    }

A name maps to a list because generated kernel names (``triton_poi_fused_relu_0``) repeat
across graphs. ``in_trace`` says whether the name itself occurs in ``trace.json``: CPU
kernels run inside their graph's event and are not named in the trace; Triton kernels
appear as device kernels under their own name.

``provenance`` (format 2) is present when Inductor tracked it (``capture.provenance``, on with
``artifact_cache_dir``): on a kernel entry, that kernel's; on a graph entry, every kernel the
graph calls, its extern (aten) calls too. ``source`` lists the stack frames torch recorded for the
kernel's nodes (outermost first within each node's stack). Format 1 indexes have no provenance.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format.files import atomic_write_bytes

INDEX_FORMAT = 2  # 2: provenance on graph and kernel entries
GRAPH_EVENT_PREFIX = "## Call CompiledFxGraph "
GRAPH_EVENT_SUFFIX = " ##"


def graph_event_name(fx_key: str | None) -> str:
    """The name torch gives a compiled graph's call in the framework trace."""
    return f"{GRAPH_EVENT_PREFIX}{fx_key}{GRAPH_EVENT_SUFFIX}"


def write_index(path: Path, index: dict[str, Any]) -> None:
    atomic_write_bytes(path, json.dumps(index, indent=1, sort_keys=True).encode())


def read_index(path: Path) -> dict[str, Any]:
    try:
        index = json.loads(path.read_text())
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"{path}: not JSON: {exc}") from exc
    if not isinstance(index, dict) or not isinstance(index.get("trace_names"), dict):
        raise FormatError(f"{path}: not a kernel index (no 'trace_names' object)")
    version = index.get("format", 0)
    if type(version) is not int:
        raise FormatError(f"{path}: 'format' is {version!r}, not a whole number")
    if version > INDEX_FORMAT:
        raise FormatError(f"{path}: kernel index format {index['format']} is newer than this kinetoscope reads")
    result: dict[str, Any] = index
    return result
