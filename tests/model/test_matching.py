"""``model.matching``: which rows of different ranks are one collective instance, decided once."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np

from kinetoscope.model import matching
from kinetoscope.model.matching import Arrival, best_offset, pair

SRC = Path(__file__).resolve().parents[2] / "src" / "kinetoscope"
MS = 1_000_000


def _ends(*ms: float) -> np.ndarray:
    return np.asarray([round(m * MS) for m in ms], dtype=np.int64)


def test_a_rank_whose_window_opens_after_the_first_instance_is_aligned_by_one() -> None:
    # GIVEN the reference rank's all-reduces end at 0.2, 7, 15, 23.5 ms and the other rank's
    # window opened after the first: its three end with the reference's last three
    ref, mine = _ends(0.2, 7, 15, 23.5), _ends(7, 15, 23.5)
    unknown = np.full(4, -1)
    # THEN its first row pairs with the reference's second
    assert best_offset(unknown, ref, unknown[:3], mine) == 1
    # AND a clock 5 ms ahead does not change it: the end differences stay constant only as paired
    assert best_offset(unknown, ref, unknown[:3], mine + 5 * MS) == 1
    # AND the reference missing the first instance is the other way round
    assert best_offset(unknown[:3], mine, unknown, ref) == -1


def test_sizes_decide_before_times() -> None:
    # GIVEN messages of 1, 2, 3, 4 MB on the reference and 2, 3, 4 MB on the other rank, whose
    # ends would pair it without a shift
    ref_sizes, sizes = np.asarray([1, 2, 3, 4]) * MS, np.asarray([2, 3, 4]) * MS
    assert best_offset(ref_sizes, _ends(0, 1, 2, 3), sizes, _ends(0, 1, 2)) == 1


def test_plain_order_where_nothing_tells_the_offsets_apart() -> None:
    # GIVEN a collective recurring every millisecond exactly, on ranks whose clocks are 7 ms apart
    ref = _ends(*range(5))
    unknown = np.full(5, -1)
    # THEN the rows pair in order (no shift fits better)
    assert best_offset(unknown, ref, unknown, ref + 7 * MS) == 0


def test_seq_where_every_row_records_it_and_steps_where_they_line_up() -> None:
    arrivals = [
        Arrival(0, "0", "allreduce", seq=4, end_ns=100), Arrival(1, "0", "allreduce", seq=4, end_ns=120),
        Arrival(0, "0", "allreduce", seq=5, end_ns=900), Arrival(1, "1", "broadcast", end_ns=50, step=3),
        Arrival(0, "1", "broadcast", end_ns=40, step=2), Arrival(0, "1", "broadcast", end_ns=60, step=3),
    ]  # fmt: skip
    found = pair(arrivals)
    assert set(found[("0", "allreduce", -1, 4)]) == {0, 1} and set(found[("0", "allreduce", -1, 5)]) == {0}
    assert {rank: a.end_ns for rank, a in found[("1", "broadcast", 3, 0)].items()} == {0: 60, 1: 50}


def test_the_column_and_record_forms_agree() -> None:
    rng = np.random.default_rng(7)
    gaps = rng.integers(500_000, 3 * MS, size=12).cumsum()
    arrivals = [Arrival(r, "0", "allreduce", end_ns=int(e) + 30 * r) for r in range(3) for e in gaps[(r == 2) :]]
    by_record = {(r, a.end_ns): inst[3] for inst, ranks in pair(arrivals).items() for r, a in ranks.items()}
    columns = matching.numbers(
        np.zeros(len(arrivals), dtype=np.int64),
        np.asarray([a.rank for a in arrivals]),
        np.full(len(arrivals), -1),
        np.full(len(arrivals), -1),
        np.asarray([a.end_ns for a in arrivals]),
        step=np.full(len(arrivals), -1),
    )
    assert [by_record[(a.rank, a.end_ns)] for a in arrivals] == columns.number.tolist()
    assert len({by_record[(2, int(gaps[1]) + 60)], by_record[(0, int(gaps[1]))]}) == 1  # rank 2 aligned by one


# ---------------------------------------------------------------- no pairing rule outside model/

_CANONICAL = {"allreduce", "allgather", "reducescatter", "alltoall", "barrier", "broadcast", "sendrecv", "all_reduce",
              "all_gather", "reduce_scatter", "all_to_all"}  # fmt: skip
_HOW_WORDS = {"step order", "by name", "(by name)", matching.STEP_ORDER}
_NUMBERING = re.compile(r"(ordinal|_position|_nth|_steps_line_up)$")


def _spelled_rules(path: Path) -> list[str]:
    """A pairing rule spelled in ``path``: a list of collectives (which ones end together, a factor
    per collective), a word for how instances are matched, or a function that numbers rows by place."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            named = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if len(named & _CANONICAL) >= 2:
                found.append(f"line {node.lineno}: a list of collectives {sorted(named & _CANONICAL)}")
        elif isinstance(node, ast.Constant) and node.value in _HOW_WORDS:
            found.append(f"line {node.lineno}: {node.value!r}")
        elif isinstance(node, ast.FunctionDef) and _NUMBERING.search(node.name):
            found.append(f"line {node.lineno}: def {node.name}")
    return found


def test_no_pairing_rule_is_spelled_outside_the_model() -> None:
    # GIVEN every module of kinetoscope outside model/ (format/ parses raw strings, it decides nothing)
    outside = [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] not in ("model", "format")]
    # THEN none spells a rule of its own for which collectives pair or how
    spelled = {str(p.relative_to(SRC)): rules for p in outside if (rules := _spelled_rules(p))}
    assert spelled == {}


def test_the_check_finds_a_rule_spelled_elsewhere(tmp_path: Path) -> None:
    # GIVEN the shape of a rule kept outside the model before it moved there
    module = tmp_path / "scan.py"
    module.write_text('ENDS = frozenset({"allreduce", "allgather"})\nKEY = "(by name)"\ndef _ordinal(x): return x\n')
    assert len(_spelled_rules(module)) == 3
