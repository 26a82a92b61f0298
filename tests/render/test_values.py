"""How summary cells and headers show values by their column's unit."""

from __future__ import annotations

from kinetoscope.render.values import cell, header, middle


def test_a_time_stamp_header_names_the_unit_its_value_is_shown_in() -> None:
    assert header("peak_ts_ns") == "peak ts (epoch ns)"
    assert cell("peak_ts_ns", 1796034717015705000) == "1796034717015705000"
    assert header("wall_ns") == "wall (ms)" and cell("wall_ns", 2_500_000) == "2.500"


def test_the_all_ranks_row_is_named_not_shown_as_rank_minus_one() -> None:
    assert cell("rank", -1) == "all" and cell("rank", 3) == "3"


def test_a_bandwidth_header_says_gb_per_second() -> None:
    assert header("busbw_gb_s") == "busbw (GB/s)" and cell("busbw_gb_s", 12.9938) == "12.99"


def test_a_long_name_is_shortened_in_the_middle_on_one_line() -> None:
    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, at::detail::Array<char*, 3>>"
    )
    shown = middle(name, 40)
    assert len(shown) == 40 and shown.startswith("void at::native::ve…") and shown.endswith("Array<char*, 3>>")
    assert middle("a\nb", 10) == "a b" and middle("short", 10) == "short"


def test_headline_shares_name_their_denominator() -> None:
    # the overview's device idle is of the wall time; temporal_breakdown's idle of the device span:
    # side by side they can read 49.3 % and 0.2 % of one trace, so each says which
    assert header("device_idle_pct") == "device idle (% of wall)"
    assert header("device_busy_pct") == "device busy (% of wall)"
    assert header("compute_pct") == "compute (% of device span)"
    assert header("idle_pct") == "idle (% of span)"
    assert header("pct_of_busy") == "pct of busy"
    assert header("short_pct_of_device_time") == "short pct of device time"
    assert header("overlap_pct") == "overlap (%)"
