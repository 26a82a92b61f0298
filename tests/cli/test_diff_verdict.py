"""`kinetoscope diff`'s verdict, comparability check, waterfall, gate and baselines, end to end on
generated multi-step traces (tests/kineto_gen.py) with a known change injected."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main

from ..json_schema_check import validate
from ..kineto_gen import TrainingSpec, write_dataset

SCHEMA = Path(__file__).parents[2] / "docs" / "diff.schema.json"
SPEC = TrainingSpec(ranks=1, steps=8, layers=4, problems=False, jitter=0.01)
STEP_US = 605.0  # about one generated step at these settings


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("verdict")
    specs = {
        "base": dataclasses.replace(SPEC, seed=1),
        "again": dataclasses.replace(SPEC, seed=2),  # the same program, other jitter: an A/A pair
        "slow_kernel": dataclasses.replace(SPEC, seed=3, slow_kernel_us=0.10 * STEP_US),
        "sync": dataclasses.replace(SPEC, seed=4, sync_us=0.10 * STEP_US),
        "stall": dataclasses.replace(SPEC, seed=5, stall_us=0.10 * STEP_US),
        "one_step": dataclasses.replace(SPEC, seed=6, steps=1),
        "two_ranks": dataclasses.replace(SPEC, seed=7, ranks=2),
        "dropped": dataclasses.replace(SPEC, seed=11, problems=True),  # device events lost on its rank
        "unmarked": dataclasses.replace(SPEC, seed=8, profiler_steps=False),
        "unmarked_slow": dataclasses.replace(SPEC, seed=9, profiler_steps=False, slow_kernel_us=0.10 * STEP_US),
        "unmarked_short": dataclasses.replace(SPEC, seed=10, profiler_steps=False, steps=2),
    }
    return {name: write_dataset(root / name, spec) for name, spec in specs.items()}


def diff(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    code = main(["diff", *map(str, args)])
    return code, capsys.readouterr().out


def report(capsys: pytest.CaptureFixture[str], base: str | Path, new: str | Path, *more: str) -> dict[str, Any]:
    code, out = diff(capsys, base, new, "--json", *more)
    assert code == 0
    found: dict[str, Any] = json.loads(out)
    validate(found, json.loads(SCHEMA.read_text()))
    return found


def test_an_aa_pair_is_neutral_and_a_slower_kernel_a_regression_led_by_device_compute(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two runs of one program with step-to-step jitter
    same = report(capsys, runs["base"], runs["again"])
    # THEN the verdict is neutral and the runs compare
    assert same["verdict"]["verdict"] == "neutral", same["verdict"]
    assert same["comparability"]["comparable"]
    # GIVEN one forward GEMM slower by 10 % of the step (the device work after it shifted)
    slow = report(capsys, runs["base"], runs["slow_kernel"])
    verdict = slow["verdict"]
    # THEN a regression of about 10 %, at 95 % confidence or more
    assert verdict["verdict"] == "regression", verdict
    assert 5 < verdict["change_pct"] < 15
    assert verdict["confidence"] >= 0.95
    # AND the waterfall's first part is device compute, with that GEMM first behind it
    first = slow["waterfall"]["parts"][0]
    assert first["part"] == "device_compute"
    assert first["behind"][0]["name"] == "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32"
    assert first["behind"][0]["new_ns"] > first["behind"][0]["base_ns"]


@pytest.mark.parametrize(("case", "part"), [("sync", "idle_sync"), ("stall", "idle_host_bound")])
def test_the_waterfall_adds_up_and_names_the_injected_cause(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], case: str, part: str
) -> None:
    # GIVEN a host sync per step, or a data-loader stall per step, of 10 % of the step
    found = report(capsys, runs["base"], runs[case])
    fall = found["waterfall"]
    # THEN the parts sum to the change of mean step time (within rounding)
    assert sum(p["delta_ns"] for p in fall["parts"]) == pytest.approx(fall["total_delta_ns"], abs=1.0)
    assert fall["new_mean_ns"] - fall["base_mean_ns"] == pytest.approx(fall["total_delta_ns"])
    # AND the largest part is the injected cause, and the verdict a regression
    assert fall["parts"][0]["part"] == part, [(p["part"], p["delta_ns"]) for p in fall["parts"]]
    assert found["verdict"]["verdict"] == "regression"


def test_one_step_another_world_size_or_dropped_events_are_inconclusive_naming_why(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a one-step trace as NEW
    one = report(capsys, runs["base"], runs["one_step"])["verdict"]
    # THEN inconclusive, saying the step counts cannot show a change
    assert one["verdict"] == "inconclusive"
    assert any("steps cannot show a change" in m for m in one["missing"]), one["missing"]
    # GIVEN a two-rank run against a one-rank run
    two = report(capsys, runs["base"], runs["two_ranks"])
    # THEN the world size breaks the comparison and the verdict says so
    broken = [c["check"] for c in two["comparability"]["checks"] if c["breaks"]]
    assert broken == ["world_size", "ranks"]
    assert two["verdict"]["verdict"] == "inconclusive"
    assert any("world sizes" in m for m in two["verdict"]["missing"])
    # GIVEN NEW with dropped device events (1,234 lost beside the trace's events)
    lost = report(capsys, runs["base"], runs["dropped"])
    broken = [c["check"] for c in lost["comparability"]["checks"] if c["breaks"]]
    # THEN that breaks the comparison, and the verdict names it
    assert broken == ["dropped_events_new"]
    assert any("NEW lost" in m for m in lost["verdict"]["missing"])


def test_gate_and_fail_if_slower_exit_codes_and_the_text_starts_with_the_verdict(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, slow = runs["base"], runs["slow_kernel"]
    assert diff(capsys, base, slow, "--gate", "5%")[0] == 1
    assert diff(capsys, base, slow, "--gate", "30%")[0] == 0
    assert diff(capsys, base, runs["again"], "--gate", "5%")[0] == 0
    assert diff(capsys, base, runs["one_step"], "--gate", "5%")[0] == 3
    assert diff(capsys, base, slow, "--fail-if-slower", "5%")[0] == 1
    # a threshold above the change makes it neutral; the gate keeps its own threshold
    assert report(capsys, base, slow, "--threshold", "50%")["verdict"]["verdict"] == "neutral"
    assert diff(capsys, base, slow, "--threshold", "50%", "--gate", "5%")[0] == 1
    code, text = diff(capsys, base, slow)
    assert code == 0
    assert text.startswith("VERDICT: regression (+")


def test_a_saved_baseline_gives_the_same_answer_without_the_trace(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GIVEN the base saved as a baseline in a folder the user names, then its dataset moved away
    copy = tmp_path / "base"
    import shutil

    shutil.copytree(runs["base"], copy)
    store = tmp_path / "store"
    assert main(["baseline", "save", "main", str(copy), "--dir", str(store)]) == 0
    capsys.readouterr()
    direct = report(capsys, copy, runs["slow_kernel"])
    shutil.rmtree(copy)
    saved = report(capsys, "baseline:main", runs["slow_kernel"], "--baselines", str(store))
    # THEN the verdict, its figures and the waterfall's parts are those of the diff against the trace
    for key in ("verdict", "change_pct", "confidence"):
        assert saved["verdict"][key] == direct["verdict"][key]
    assert [p["part"] for p in saved["waterfall"]["parts"]] == [p["part"] for p in direct["waterfall"]["parts"]]
    assert saved["waterfall"]["total_delta_ns"] == pytest.approx(direct["waterfall"]["total_delta_ns"])
    # AND $KINETOSCOPE_BASELINES finds it too, with the gate
    with pytest.MonkeyPatch.context() as env:
        env.setenv("KINETOSCOPE_BASELINES", str(store))
        assert diff(capsys, "baseline:main", runs["slow_kernel"], "--gate", "5%")[0] == 1


def test_a_baseline_of_another_version_is_refused_or_rebuilt(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    assert main(["baseline", "save", "old", str(runs["base"]), "--dir", str(store)]) == 0
    path = store / "old.json"
    record = json.loads(path.read_text())
    record["digest_version"] = 0
    path.write_text(json.dumps(record))
    capsys.readouterr()
    # GIVEN its source still there: rebuilt, said on stderr, and the diff answers
    code, _ = diff(capsys, "baseline:old", runs["again"], "--baselines", store)
    assert code == 0
    assert json.loads(path.read_text())["digest_version"] != 0
    # GIVEN its source gone: refused with what to do
    record["source"] = str(tmp_path / "gone")
    path.write_text(json.dumps(record))
    assert main(["diff", "baseline:old", str(runs["again"]), "--baselines", str(store)]) == 2
    assert "save it again" in capsys.readouterr().err
    # AND an unknown name lists what is there
    assert main(["diff", "baseline:nope", str(runs["again"]), "--baselines", str(store)]) == 2
    assert "baselines there: old" in capsys.readouterr().err


def test_without_profiler_steps_the_steps_are_the_repeated_outermost_annotation_or_said(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two runs without ProfilerStep rows, NEW with a GEMM slower by 10 % of a step
    found = report(capsys, runs["unmarked"], runs["unmarked_slow"])["verdict"]
    # THEN the steps run from one optimizer step to the next (the outermost annotation met once
    # an iteration), and the change is found: 7 steps a side from 8 iterations
    assert found["step_source"] == {"base": ["Optimizer.step#SGD.step to the next"]} | {
        "new": ["Optimizer.step#SGD.step to the next"]
    }
    assert (found["base_steps"], found["new_steps"]) == (7, 7)
    assert found["verdict"] == "regression", found
    # GIVEN NEW with two iterations only: its steps cannot be found the same way
    short = report(capsys, runs["unmarked"], runs["unmarked_short"])
    checks = {c["check"]: c for c in short["comparability"]["checks"]}
    # THEN the step sources differ, which breaks the comparison, and the verdict says so
    assert checks["step_source"]["breaks"]
    assert short["verdict"]["verdict"] == "inconclusive"
    assert any("steps found differently" in m for m in short["verdict"]["missing"])


def test_the_confidence_asked_is_the_level_the_verdict_used(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a kernel 10 % of the step slower, every new step beyond every base step (p = 2/12870 over 8 and 8)
    default = report(capsys, runs["base"], runs["slow_kernel"])["verdict"]
    strict = report(capsys, runs["base"], runs["slow_kernel"], "--confidence", "99.9%")["verdict"]
    # THEN the default asks 95 %, --confidence 99.9 % is the level the test used, and the change still passes it
    assert default["test"]["level"] == 0.95 and strict["test"]["level"] == 0.999
    assert default["verdict"] == strict["verdict"] == "regression"
    # AND an A/A pair stays neutral; a confidence of 100 % (no change could reach it) is refused
    assert report(capsys, runs["base"], runs["again"], "--confidence", "99")["verdict"]["verdict"] == "neutral"
    with pytest.raises(SystemExit) as refused:
        main(["diff", str(runs["base"]), str(runs["again"]), "--confidence", "100%"])
    assert refused.value.code == 2
    assert "below 100%" in capsys.readouterr().err
