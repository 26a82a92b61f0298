"""``model.runs``: traces claiming one rank are one rank only when one process wrote them."""

from __future__ import annotations

from kinetoscope.model import runs


def claim(source: str, pid: int, start_ns: int = 0, rank: int = 0, host: str = "h") -> runs.RankClaim[str]:
    return runs.RankClaim(source, rank, 2, host, pid, start_ns)


def test_two_processes_claiming_rank_zero_are_separate_runs_and_one_process_windows_are_one_rank() -> None:
    claims = [claim("a", 10), claim("b", 20), claim("c", 30, rank=1), claim("c2", 30, rank=1)]
    assert runs.clashes(claims) == {(0, 2): ["a", "b"]}
    assert runs.windows(claims) == {(1, 2): ["c", "c2"]}
    # the same pid on another host is another process
    assert runs.clashes([claim("a", 10), claim("b", 10, host="other")]) == {(0, 2): ["a", "b"]}


def test_each_ranks_processes_are_numbered_in_the_order_they_started() -> None:
    # GIVEN two 2-rank jobs: the later one started 77 million seconds after
    late = 77_000_000 * 10**9
    claims = [claim("j2r0", 20, late), claim("j1r0", 10, 5)]
    claims += [claim("j1r1", 11, 7, rank=1), claim("j2r1", 21, late + 3, rank=1)]
    assert runs.launches(claims) == {"j1r0": 1, "j1r1": 1, "j2r0": 2, "j2r1": 2}
    # AND one job (one process per rank, windows included) is one launch: nothing to split
    assert runs.launches([claim("a", 10), claim("a2", 10, 9), claim("b", 11, rank=1)]) == {}
