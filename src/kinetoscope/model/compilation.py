"""Which events are compilation (torch.compile: Dynamo, Inductor, autotuning), decided here once.

``PATTERN`` is the one set of name patterns (regular expressions searched in the name, in the
syntax both Python's ``re`` and Arrow's RE2 run) that marks a host event as compilation: the
``dynamo_timed`` record_function ranges (``_compile.compile_inner (dynamo_timed)``), the
whole-frame and Inductor compile labels (``entire_frame_compile``, ``inductor_compile``), the Python
frames of Dynamo's and Inductor's compile entry points (``torch/_dynamo/convert_frame.py``,
``torch/_inductor/compile_fx.py``) and autotuning. ``verify``'s compilation check (a scan over
records, ``is_compilation``) and the ``compile_in_window`` finding (over columns, ``PATTERN``) ask it.

``FRAME_COMPILE`` (``FRAME_COMPILE_INNER`` in torch before 2.2) is one whole-frame compile;
``COMPILED_REGIONS`` are the names a call of compiled code starts with.
"""

from __future__ import annotations

import re

MARKERS = (
    r"\(dynamo_timed\)",
    r"^entire_frame_compile$",
    r"^inductor_compile$",
    r"torch/_dynamo/convert_frame\.py",
    r"torch/_inductor/compile_fx\.py",
    r"autotune",
)
PATTERN = "|".join(MARKERS)
FRAME_COMPILE = "entire_frame_compile"
FRAME_COMPILE_INNER = "_compile.compile_inner (dynamo_timed)"
COMPILED_REGION = "Torch-Compiled Region"  # ``Torch-Compiled Region: 0/1``: a call of frame 0's graph, compile 1
COMPILED_REGIONS = (COMPILED_REGION, "CompiledFunction")
_PATTERN_RE = re.compile(PATTERN)


def is_compilation(name: str) -> bool:
    """Whether a host event of this name is compilation (the scalar form of ``PATTERN``)."""
    return _PATTERN_RE.search(name) is not None
