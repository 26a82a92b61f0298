"""Level of detail: every event is drawn either as itself or inside a summary block, at every zoom."""

from __future__ import annotations

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing import index as index_module
from kinetoscope.viewer.indexing.index import ViewerIndex, plan_levels
from kinetoscope.viewer.querying.window import WindowRequest, query_window

from ...kineto_gen import TrainingSpec, write_dataset


def test_plan_levels_has_no_pyramid_for_small_datasets() -> None:
    small = plan_levels(1_000, 10**9, 10**6)
    assert small.pyramid_ns == () and small.bounds_ns[0] == 1024
    big = plan_levels(10_000_000, 9 * 10**9, 10**8)
    assert big.pyramid_ns and all(b in big.bounds_ns for b in big.pyramid_ns)


def test_a_trace_of_150k_events_has_a_pyramid_level_for_a_zoomed_out_screen() -> None:
    """The public V100 trace's figures (151,388 events over 1.74 s, the longest 365 ms): a quarter of its
    events are instants, each sent as a slice of its own when no pyramid merges them (26,571 slices for
    a screen after two zoom steps in), so a screen 1,200 px wide from its full view to 0.24 of it is
    answered from a pyramid level; a window that holds fewer than RAW_BUDGET_EVENTS at the finest level's
    bucket per pixel (2,500 px) is still merged from the events themselves."""
    count, span_ns, width_px = 151_388, 1_738_039_000, 1_200
    levels = plan_levels(count, span_ns, 365_256_000)
    for share in (1.0, 0.7, 0.49, 0.24):
        px_ns = span_ns * share / width_px
        assert any(b <= px_ns for b in levels.pyramid_ns), share
    assert min(levels.pyramid_ns) * count / span_ns * 2_500 >= index_module.RAW_BUDGET_EVENTS


@pytest.fixture(scope="module")
def pyramid_index(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """A small dataset indexed as if it were large, so the pre-aggregated levels are used."""
    out = write_dataset(tmp_path_factory.mktemp("pyramid") / "ds", TrainingSpec(ranks=2, steps=4, layers=40))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index_module, "RAW_BUDGET_EVENTS", 200)
        index = ViewerIndex.open(Dataset(out), rebuild=True)
    assert index.levels.pyramid_ns
    return index


@pytest.mark.parametrize("width_px", [20, 200, 3000])
def test_whole_range_accounts_for_every_event(pyramid_index: ViewerIndex, width_px: int) -> None:
    tracks = tuple(range(40))
    data = query_window(pyramid_index, WindowRequest(start_ns=0, end_ns=pyramid_index.span_ns + 1,
                                                     width_px=width_px, tracks=tracks))
    assert len(data["slices"]["id"]) + int(sum(data["blocks"]["count"])) == pyramid_index.event_count
    assert all(d >= (data["bucket_ns"] or int(data["px_ns"])) for d in data["slices"]["dur"])


def test_zoomed_in_window_returns_each_event_once(pyramid_index: ViewerIndex) -> None:
    start, end = pyramid_index.span_ns // 3, pyramid_index.span_ns // 3 + 200_000
    req = WindowRequest(start_ns=start, end_ns=end, width_px=4000, tracks=tuple(range(40)))
    data = query_window(pyramid_index, req)
    ids = list(data["slices"]["id"])
    assert len(ids) == len(set(ids)) and data["bucket_ns"] == 0
    expected = pyramid_index.cursor().execute(
        "SELECT count(*) FROM ev WHERE ts < ? AND ts + dur > ?", [end, start]).fetchone()
    assert expected is not None
    assert len(ids) + int(sum(data["blocks"]["count"])) == expected[0]
    assert all(data["strings"][n] for n in data["slices"]["name"])


@pytest.mark.parametrize("width_px", [20, 4000])  # the pyramid's blocks, then the events themselves
def test_a_shifted_track_shows_what_its_own_clock_had_at_the_shifted_times(pyramid_index: ViewerIndex,
                                                                           width_px: int) -> None:
    """Clock alignment: a track shifted by +s shows, at [a, b), its events of [a - s, b - s) moved by s."""
    tracks = tuple(range(40))
    shifted = next(t for t in tracks if query_window(pyramid_index, WindowRequest(
        start_ns=0, end_ns=pyramid_index.span_ns + 1, width_px=20, tracks=(t,)))["blocks"]["count"].sum() > 10)
    shift_ns = 3_000_017
    start, end = pyramid_index.span_ns // 4, pyramid_index.span_ns // 2
    together = query_window(pyramid_index, WindowRequest(
        start_ns=start, end_ns=end, width_px=width_px, tracks=tracks,
        shifts_ns=tuple(shift_ns if t == shifted else 0 for t in tracks)))
    alone = query_window(pyramid_index, WindowRequest(
        start_ns=start - shift_ns, end_ns=end - shift_ns, width_px=width_px, tracks=(shifted,)))
    unshifted = query_window(pyramid_index, WindowRequest(
        start_ns=start, end_ns=end, width_px=width_px, tracks=tuple(t for t in tracks if t != shifted)))

    def rows(data: dict, track: int | None, keep: bool, shift: int = 0) -> list[tuple]:
        s, b = data["slices"], data["blocks"]
        sl = [(int(s["id"][i]), int(s["ts"][i]) + shift, int(s["dur"][i])) for i in range(len(s["id"]))
              if (int(s["track"][i]) == track) == keep]
        bl = [(int(b["lane"][i]), int(b["ts"][i]) + shift, int(b["end"][i]) + shift, int(b["count"][i]))
              for i in range(len(b["track"])) if (int(b["track"][i]) == track) == keep]
        return sorted(sl) + sorted(bl)

    moved = rows(together, shifted, True)
    assert moved and moved == rows(alone, shifted, True, shift_ns)
    assert rows(together, shifted, False) == rows(unshifted, shifted, False)


def test_a_shifted_counter_shows_its_samples_of_the_shifted_times(multirank: ViewerIndex) -> None:
    from kinetoscope.viewer.querying.queries import counter_window, meta

    ids = [int(c["id"]) for c in meta(multirank)["counters"]]
    assert len(ids) >= 2
    shift_ns, start, end = 1_234_567, multirank.span_ns // 4, multirank.span_ns // 2
    together = counter_window(multirank, start, end, 500, ids, shifts_ns=[shift_ns] + [0] * (len(ids) - 1))
    alone = counter_window(multirank, start - shift_ns, end - shift_ns, 500, ids[:1])
    rest = counter_window(multirank, start, end, 500, ids[1:])
    moved = together["series"][str(ids[0])]
    assert moved["ts"] and moved["ts"] == [t + shift_ns for t in alone["series"][str(ids[0])]["ts"]]
    assert moved["last"] == alone["series"][str(ids[0])]["last"]
    assert {k: v for k, v in together["series"].items() if k != str(ids[0])} == rest["series"]


def test_consecutive_busy_pixels_of_one_lane_merge_into_one_block_named_after_the_busiest() -> None:
    from kinetoscope.viewer.querying.window import merged_islands

    # (track, lane, px, ts, end, count, busy, name), out of order: lane 0 of track 1 has pixels 3, 4, 5 then 7
    rows = [(1, 0, 5, 50, 58, 2, 8, 12), (1, 0, 3, 30, 39, 1, 9, 10), (1, 0, 4, 40, 49, 4, 20, 11),
            (1, 0, 7, 70, 71, 1, 1, 13), (1, 1, 4, 41, 42, 1, 1, 14), (0, 0, 4, 40, 45, 3, 5, 15)]
    cols = ("track", "lane", "px", "ts", "end", "count", "busy", "name")
    blocks = merged_islands({c: [r[i] for r in rows] for i, c in enumerate(cols)})
    got = sorted(zip(*(blocks[c].tolist() for c in ("track", "lane", "ts", "end", "count", "busy", "name")),
                     strict=True))
    assert got == [(0, 0, 40, 45, 3, 5, 15), (1, 0, 30, 58, 7, 37, 11), (1, 0, 70, 71, 1, 1, 13),
                   (1, 1, 41, 42, 1, 1, 14)]
    assert not blocks["_truncated"]
    empty = merged_islands({c: [] for c in cols})
    assert len(empty["ts"]) == 0 and not empty["_truncated"]
