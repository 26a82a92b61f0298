"""Device time by launching op, shape, outermost annotation and category, and the roofline, on the
public 8-rank DLRM traces (V100, ``record_shapes=True``): every nanosecond of device work lands on
exactly one line, and the figures below were checked by hand against the trace."""

from __future__ import annotations

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns
from kinetoscope.analysis.ops import attribution
from kinetoscope.report.opening import open_dataset

from ..ingest.helpers import ingested_scenario

ROLL_UPS = ("gpu_time_by_op", "gpu_time_by_shape", "gpu_time_by_top_op", "gpu_time_by_module", "time_by_category")


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> dict:
    with open_dataset(ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("dlrm"))) as ds:
        tables = ds.load(
            needed_columns(tuple(ANALYSES_BY_NAME[n] for n in (*ROLL_UPS, "op_roofline", "roofline_devices")))
        )
        work = ds.sql(
            "SELECT rank, sum(dur_ns)::BIGINT AS ns, count(*) AS n FROM events "
            "WHERE kind IN ('kernel', 'memcpy', 'memset') GROUP BY rank ORDER BY rank"
        ).to_pylist()
    return {"tables": tables, "work": {r["rank"]: (r["ns"], r["n"]) for r in work}}


def _rows(dlrm: dict, name: str, rank: int | None = 0) -> list[dict]:
    analysis = ANALYSES_BY_NAME[name]
    rows = analysis(dlrm["tables"], analysis.pick((TopOptions(top=100_000),))).to_pylist()
    return [r for r in rows if rank is None or r["rank"] == rank]


@pytest.mark.parametrize("name", ROLL_UPS)
def test_every_device_nanosecond_lands_on_one_line(dlrm: dict, name: str) -> None:
    for rank, (total_ns, count) in dlrm["work"].items():
        rows = _rows(dlrm, name, rank)
        assert (sum(r["gpu_ns"] for r in rows), sum(r["kernels"] for r in rows)) == (total_ns, count)


def test_launching_ops_of_rank_0(dlrm: dict) -> None:
    by_op = {r["op"]: r for r in _rows(dlrm, "gpu_time_by_op")}
    comms = by_op["record_param_comms"]
    assert (comms["calls"], comms["kernels"], comms["gpu_ns"], comms["pct_of_busy"]) == (8, 8, 5_798_000, 87.98)
    mm = by_op["aten::mm"]
    assert (mm["calls"], mm["kernels"], mm["gpu_ns"]) == (13, 15, 104_000)
    top = {r["top_op"]: r["gpu_ns"] for r in _rows(dlrm, "gpu_time_by_top_op")}
    assert top["## forward ##"] == 2_435_000


def test_work_launched_before_the_window_has_its_own_line(dlrm: dict) -> None:
    before = {
        r["rank"]: (r["kernels"], r["gpu_ns"])
        for r in _rows(dlrm, "gpu_time_by_op", None)
        if r["op"] == attribution.BEFORE_WINDOW
    }
    assert before == {1: (64, 203_000), 3: (64, 176_000)}


def test_categories_of_rank_0(dlrm: dict) -> None:
    found = {r["category"]: r["gpu_ns"] for r in _rows(dlrm, "time_by_category")}
    assert (found["communication"], found["GEMM"]) == (5_798_000, 327_000)


def test_roofline_of_a_real_gemm(dlrm: dict) -> None:
    rows = _rows(dlrm, "op_roofline")
    mm = next(r for r in rows if r["op"] == "aten::mm" and r["input_dims"] == "[[16,512],[512,512]]")
    assert (mm["flops"], mm["moved_bytes"], mm["time_ns"]) == (
        2 * 16 * 512 * 512,
        (16 * 512 * 2 + 512 * 512) * 4,
        23_000,
    )
    # 7.53 FLOPs/byte is under the V100's fp32 ridge (15.7 TFLOP/s / 0.9 TB/s = 17.4): memory bound
    assert (mm["peak_class"], mm["bound"], mm["tflops_per_s"], mm["roofline_pct"]) == ("fp32", "memory", 0.3647, 5.38)
    devices = ANALYSES_BY_NAME["roofline_devices"](dlrm["tables"]).to_pylist()
    assert {(d["device_name"], d["device"]) for d in devices} == {("Tesla V100-SXM2-32GB", "V100 SXM2")}
    assert all(r["flops"] is None for r in rows if r["op"] == "record_param_comms")
