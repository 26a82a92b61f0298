"""Device time by kind of work: communication from the model's rules and from the user's own patterns."""

from __future__ import annotations

import json
from pathlib import Path

from kinetoscope.analysis import ANALYSES_BY_NAME
from kinetoscope.analysis.settings import categories
from kinetoscope.analysis.settings.user_options import UserOptions, using

from ..builder import Events


def _shares(trace: Events) -> dict[str, int]:
    rows = ANALYSES_BY_NAME["kernel_type_breakdown"](trace.tables()).to_pylist()
    return {r["kernel_type"]: r["time_ns"] for r in rows if r["rank"] == 0}


def test_deepep_kernels_are_communication_by_the_model_and_user_patterns_add_more(tmp_path: Path) -> None:
    # GIVEN a GEMM (100 ns), DeepEP's low-latency dispatch (its collective decided at ingest: 55 ns)
    # and a kernel of the user's own all-to-all library (40 ns)
    trace = Events()
    trace.work("ampere_sgemm_128x64_nn", 0, 100)
    trace.add("void deep_ep::internode_ll::dispatch<false, 3, 7168>(void*)", 100, 55, layer="device",
              kind="kernel", category="kernel", tid=-1, device=0, stream=7, collective="alltoall")  # fmt: skip
    trace.work("my_lib::exchange_tokens<8>", 200, 40)
    assert _shares(trace) == {"COMPUTATION": 140, "COMMUNICATION": 55}
    # WHEN the user's category file puts their kernel in "communication"
    rules = tmp_path / "categories.json"
    rules.write_text(json.dumps({"communication": ["^my_lib::exchange"]}))
    # THEN it counts as communication when the dataset is read with it
    with using(UserOptions(categories.user_rules(rules))):
        assert _shares(trace) == {"COMPUTATION": 100, "COMMUNICATION": 95}
