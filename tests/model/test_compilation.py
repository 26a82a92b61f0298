"""Compilation is one set of patterns, in the model: verify's scan (records) and the findings
(columns) mark the same names."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kinetoscope.model import compilation

COMPILING = [
    "_compile.compile_inner (dynamo_timed)",
    "entire_frame_compile",
    "inductor_compile",
    "torch/_dynamo/convert_frame.py(1042): _compile",
    "torch/_inductor/compile_fx.py(810): compile_fx_inner",
    "autotune_select_algorithm",
]
NOT_COMPILING = ["aten::mm", "Torch-Compiled Region: 0/1", "CompiledFunction", "entire_frame_compile_data: x",
                 "triton_poi_fused_add_0"]  # fmt: skip


@pytest.mark.parametrize("name", COMPILING + NOT_COMPILING)
def test_the_scalar_and_the_column_form_agree(name: str) -> None:
    column = pc.match_substring_regex(pa.array([name]), compilation.PATTERN).to_pylist()[0]
    assert compilation.is_compilation(name) == column == (name in COMPILING)
