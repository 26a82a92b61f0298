"""Which Inductor graph nodes and which model source lines each compiled kernel came from.

With ``torch._inductor.config.trace.provenance_tracking_level`` at 1 (``INDUCTOR_PROVENANCE=1``),
Inductor keeps, on each ``CompiledFxGraph``, two JSON strings:

- ``inductor_provenance_mapping_str``: ``cppCodeToPost`` maps ``"<kernel>:<handle>"`` (C++,
  Triton and extern kernels alike) to the post-grad graph nodes fused into it, and
  ``postToPre`` maps those to the pre-grad (model-level) nodes;
- ``inductor_provenance_stack_traces_str``: ``"<kernel>:<handle>"`` to the formatted Python
  stack traces (``File "...", line N, in fn``) of the model code that made its nodes.

It costs compile time only (bookkeeping while Inductor lowers the graph) and is part of the
FX graph cache key, so turning it on recompiles once. ``enable()`` turns it on for graphs
compiled from then on, unless the job chose a level itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any

LEVEL_ENV = "INDUCTOR_PROVENANCE"
_FRAME_RE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>[^\n]+)\n(?P<code>[^\n]*)')


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class Provenance:
    """One kernel's origin: post-grad and pre-grad graph nodes, and the model source lines that made
    them (each node's stack, outermost frame first, as torch records them)."""

    post_grad_nodes: tuple[str, ...]
    pre_grad_nodes: tuple[str, ...]
    source: tuple[SourceLine, ...]

    def as_json(self) -> dict[str, Any]:
        return {
            "post_grad_nodes": list(self.post_grad_nodes),
            "pre_grad_nodes": list(self.pre_grad_nodes),
            "source": [vars(s) for s in self.source],
        }


def enable(environ: Any = os.environ) -> None:
    """Have Inductor track provenance from now on (a job's own ``INDUCTOR_PROVENANCE`` or
    ``TORCH_COMPILE_DEBUG`` wins); no torch import when torch._inductor is not loaded yet."""
    if LEVEL_ENV in environ or "TORCH_COMPILE_DEBUG" in environ:
        return
    environ[LEVEL_ENV] = "1"
    config = sys.modules.get("torch._inductor.config")
    if config is not None and getattr(config.trace, "provenance_tracking_level", None) == 0:
        config.trace.provenance_tracking_level = 1


def of_compiled(compiled: Any) -> dict[str, Provenance]:
    """Kernel name -> provenance, from a ``CompiledFxGraph``; empty when tracking was off."""
    mapping = _json(getattr(compiled, "inductor_provenance_mapping_str", None))
    stacks = _json(getattr(compiled, "inductor_provenance_stack_traces_str", None))
    to_post = mapping.get("cppCodeToPost") or {}
    post_to_pre = mapping.get("postToPre") or {}
    result: dict[str, Provenance] = {}
    for key in dict.fromkeys([*to_post, *stacks]):
        name = key.rsplit(":", 1)[0]
        post = tuple(str(n) for n in to_post.get(key, []))
        pre = tuple(dict.fromkeys(str(p) for n in post for p in post_to_pre.get(n, [])))
        lines = tuple(line for trace in stacks.get(key, []) for line in parse_stack(str(trace)))
        result[name] = _merge(result.get(name), Provenance(post, pre, lines))
    return result


def parse_stack(trace: str) -> list[SourceLine]:
    """The frames of a formatted Python stack trace, outermost first as Python prints them."""
    return [
        SourceLine(m["file"], int(m["line"]), m["function"].strip(), m["code"].strip())
        for m in _FRAME_RE.finditer(trace)
    ]


def _merge(old: Provenance | None, new: Provenance) -> Provenance:
    if old is None:
        return new
    return Provenance(
        tuple(dict.fromkeys(old.post_grad_nodes + new.post_grad_nodes)),
        tuple(dict.fromkeys(old.pre_grad_nodes + new.pre_grad_nodes)),
        tuple(dict.fromkeys(old.source + new.source)),
    )


def _json(text: object) -> dict[str, Any]:
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
