"""`kinetoscope diff` on real pairs: CPU captures made here that differ by a known change, and
HTA's trace_diff pair (when ../shared is present). Rankings and matches are asserted, never times."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.cli import main
from kinetoscope.ingest import IngestOptions, ingest

from ..conftest import SHARED

STEPS = 6
WARM_UP_CALLS = 5
HTA_DIFF = SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data" / "trace_diff"


def capture(out: Path, step: Callable[[], None], with_stack: bool = False) -> Path:
    """Profile STEPS steps of ``step`` (after WARM_UP_CALLS calls and a warm-up step) with shapes recorded."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out)
    exporter = Profiler(config)
    for _ in range(WARM_UP_CALLS):  # first calls allocate and touch memory: keep them out of the steps
        step()
    with profile(
        activities=kinetoscope.activities(),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
        record_shapes=True,
        with_stack=with_stack,
        schedule=schedule(wait=0, warmup=1, active=STEPS, repeat=1),  # a schedule makes ProfilerStep#N rows
    ) as prof:
        for _ in range(1 + STEPS):
            step()
            prof.step()
    return out


def training_step(batch: int, extra_matmul: bool) -> Callable[[], None]:
    torch.manual_seed(0)
    # features 384 and hidden 1024, so the batch is the only 256 or 512 in any shape
    model = torch.nn.Sequential(torch.nn.Linear(384, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 384))
    x = torch.randn(batch, 384)
    big = torch.randn(2048, 2048)  # ~8x the step: no load on a shared machine hides it

    def step() -> None:
        model(x).sum().backward()
        if extra_matmul:
            torch.mm(big, big)

    return step


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("diff")
    torch.set_num_threads(1)
    return {
        "base": capture(root / "base", training_step(256, extra_matmul=False)),
        "matmul": capture(root / "matmul", training_step(256, extra_matmul=True)),
        "batch": capture(root / "batch", training_step(512, extra_matmul=False)),
    }


def run_diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["diff", *args])
    return code, capsys.readouterr().out


def diff_json(capsys: pytest.CaptureFixture[str], base: Path | str, new: Path | str) -> dict[str, Any]:
    code, out = run_diff(capsys, str(base), str(new), "--json", "--top", "0")
    assert code == 0
    report: dict[str, Any] = json.loads(out)
    return report


def test_an_inserted_matmul_ranks_first(captures: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN two runs of one training step, NEW with an extra 2048x2048 matmul per step
    report = diff_json(capsys, captures["base"], captures["matmul"])
    scope = report["scopes"][0]
    assert (report["schema"], report["version"], scope["rank"]) == ("kinetoscope.diff", 4, "all")
    assert scope["step_time"]["base"]["count"] == scope["step_time"]["new"]["count"] == STEPS
    # THEN the op ranked first by name is aten::mm, matched (backward has mm too), one more call per step
    top = scope["ops"][0]
    assert (top["name"], top["match"]) == ("aten::mm", "matched")
    assert top["new_calls_per_step"] - top["base_calls_per_step"] == 1
    assert top["delta_per_step_ns"] > 0
    # AND by shape, the first row is the new [2048,2048] x [2048,2048] mm, which has no BASE counterpart
    shaped = scope["op_shapes"][0]
    assert (shaped["name"], shaped["match"]) == ("aten::mm", "new")
    assert shaped["new_shape"] == "[[2048,2048],[2048,2048]] float,float"
    assert shaped["new_calls_per_step"] == 1
    # AND nothing else is new or gone, and NEW's median step is longer
    assert scope["unmatched"]["ops_new"] == scope["unmatched"]["ops_gone"] == []
    assert scope["step_time"]["delta_median_ns"] > 0
    # AND the verdict is a regression at 95 % confidence or more; on a CPU run the waterfall's
    # change is host-only time, led by aten::mm (by name or by shape: the two differ by noise), and its parts add up
    assert report["verdict"]["verdict"] == "regression", report["verdict"]
    assert report["verdict"]["confidence"] >= 0.95
    fall = report["waterfall"]
    assert fall["parts"][0]["part"] == "host_only"
    assert fall["parts"][0]["behind"][0]["name"].startswith("aten::mm")  # the op, or the op at its new shape
    assert sum(p["delta_ns"] for p in fall["parts"]) == pytest.approx(fall["total_delta_ns"], abs=1.0)


def test_a_doubled_batch_ranks_a_matmul_first_reshaped(
    captures: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same step at batch 256 and at batch 512 (the matmuls dominate the step)
    scope = diff_json(capsys, captures["base"], captures["batch"])["scopes"][0]
    # THEN the first op by name is a matmul, and by shape the same op, reshaped from batch 256 to 512
    top = scope["ops"][0]
    assert top["name"] in {"aten::mm", "aten::addmm"}, [r["name"] for r in scope["ops"][:5]]
    assert top["match"] == "matched"
    shaped = scope["op_shapes"][0]
    assert (shaped["name"], shaped["match"]) == (top["name"], "reshaped")
    assert "256" in shaped["shape"]
    assert "512" not in shaped["shape"]
    assert "512" in shaped["new_shape"]
    assert "256" not in shaped["new_shape"]
    # AND the calls per step do not change: only shapes did
    assert all(r["base_calls_per_step"] == r["new_calls_per_step"] for r in scope["ops"])
    assert scope["unmatched"]["ops_new"] == scope["unmatched"]["ops_gone"] == []


def test_fail_if_slower_and_text_and_markdown(captures: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN the run with the extra matmul (its median step several times BASE's)
    base, slower = str(captures["base"]), str(captures["matmul"])
    # THEN --fail-if-slower 5% fails one way round and passes the other
    assert run_diff(capsys, base, slower, "--fail-if-slower", "5%")[0] == 1
    assert run_diff(capsys, slower, base, "--fail-if-slower", "5%")[0] == 0
    # AND the text and Markdown reports name the change
    code, text = run_diff(capsys, base, slower, "--top", "3")
    assert code == 0
    assert "Median step time +" in text
    assert "aten::mm" in text
    code, markdown = run_diff(capsys, base, slower, "--markdown", "--top", "3")
    assert "| matched | aten::mm |" in markdown
    assert "## Step time (whole run)" in markdown
    assert "### Framework ops by place in the op tree (whole run; 3 of " in markdown
    assert "| new | aten::mm |" in markdown  # the extra mm sits at the top of the tree, under no op
    assert "### Modules (whole run;" in markdown and "### Op categories (whole run;" in markdown
    assert "Memory snapshots" not in markdown  # no snapshots on either side


def test_two_runs_of_one_dataset(captures: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # GIVEN both captures ingested into one dataset as runs a and b
    dataset = tmp_path / "ds"
    for run, name in (("a", "base"), ("b", "matmul")):
        assert ingest(IngestOptions(profile_dir=captures[name], out=dataset, run=run)).status == "ok"
    # THEN DATASET:a DATASET:b compares them, and the dataset alone is refused (two runs: which one?)
    scope = diff_json(capsys, f"{dataset}:a", f"{dataset}:b")["scopes"][0]
    assert scope["ops"][0]["name"] == "aten::mm"
    assert main(["diff", str(dataset), f"{dataset}:b"]) == 2
    assert main(["diff", f"{dataset}:nope", f"{dataset}:b"]) == 2
    assert main(["diff", str(tmp_path / "missing"), f"{dataset}:b"]) == 2


@pytest.mark.skipif(not HTA_DIFF.exists(), reason="needs ../shared/datasets/public-traces")
def test_hta_trace_diff_pair(capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN HTA's trace_diff pair, raw traces: control, and test (the same job with torch.compile, other GEMMs)
    report = diff_json(capsys, HTA_DIFF / "control" / "control.json.gz", HTA_DIFF / "test" / "test.json.gz")
    scope = report["scopes"][0]
    step = scope["step_time"]
    # THEN six steps a side; the median step goes from 76.834 to 114.690 ms (+49.27%), beyond the spread
    assert step["base"]["count"] == step["new"]["count"] == 6
    assert (step["base"]["median_ns"], step["new"]["median_ns"]) == (76_833_500, 114_689_500)
    assert step["delta_pct"] == 49.27
    assert step["significant"] is True
    # AND the first op by impact is aten::copy_ (74 -> 872 calls per step); compiled regions are new
    assert [r["name"] for r in scope["ops"][:3]] == ["aten::copy_", "aten::empty_strided", "aten::mm"]
    assert {"CompiledFunction", "CompiledFunctionBackward"} <= set(scope["unmatched"]["ops_new"])
    assert "aten::bmm" in scope["unmatched"]["ops_gone"]
    # AND the 8 GEMM kernels that changed under aten::mm (A100's cutlass and ampere_sgemm, V100's
    # volta_sgemm) are replaced, not gone and new
    replaced = [r for r in scope["kernels"] if r["match"] == "replaced" and r["op"] == "aten::mm"]
    assert len(replaced) == 8
    assert all(r["name"].startswith(("void cutlass::", "ampere_sgemm")) for r in replaced)
    assert all(r["new_name"].startswith("volta_sgemm") for r in replaced)
    assert scope["kernels"][0]["name"] == "Memcpy DtoD (Device -> Device)"
    # AND as HTA's TraceDiff says (device kernels, diff_duration): Memcpy DtoD first, and the embedding
    # backward kernel of 2ul gone while that of 5ul is new; here the two pair up under their op
    kernel = "void split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1"
    two = f"{kernel}<float, float, float, 2ul>"
    swap = [r for r in scope["kernels"] if r["match"] == "replaced" and r["name"].startswith(two)]
    assert [r["new_name"].split("(")[0] for r in swap] == [f"{kernel}<float, float, float, 5ul>"]
    assert swap[0]["op"] == "torch::autograd::CppNode<SplitLookupFunction_rowwise_adagrad_Op>"
    # AND by place in the op tree, the forward's linear addmm is gone and the aten::mul beside it
    # replaced by the compiled region
    tree = {(r["parent"], r["name"], r["new_name"]): r["match"] for r in scope["op_tree"]}
    assert tree[("## forward ## / ## forward:over_arch ## / aten::linear", "aten::addmm", "aten::addmm")] == "gone"
    assert tree[("## forward ## / ## forward:over_arch ##", "aten::mul", "CompiledFunction")] == "replaced"
    # AND --fail-if-slower: 49% fails at 5%, passes at 60%
    base, new = str(HTA_DIFF / "control"), str(HTA_DIFF / "test")
    assert run_diff(capsys, base, new, "--fail-if-slower", "5%")[0] == 1
    assert run_diff(capsys, base, new, "--fail-if-slower", "60%")[0] == 0


def test_multi_rank_per_rank_and_overall(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # GIVEN the 8-rank DLRM traces (one step each) as BASE, and the same traces less rank 7 as NEW
    source = Path(__file__).parents[1] / "data" / "dlrm_8rank"
    fewer = tmp_path / "seven_ranks"
    fewer.mkdir()
    for trace in sorted(source.glob("worker[0-6]_*.json.gz")):
        shutil.copy(trace, fewer / trace.name)
    report = diff_json(capsys, source, fewer)
    # THEN the whole run, then each of the 7 common ranks; rank 7 is said to be in BASE only
    assert [s["rank"] for s in report["scopes"]] == ["all", 0, 1, 2, 3, 4, 5, 6]
    assert (report["ranks_only_in_base"], report["ranks_only_in_new"]) == ([7], [])
    # AND the verdict is inconclusive: the ranks traced differ (the job's world size is 8 on both)
    verdict = report["verdict"]
    assert verdict["verdict"] == "inconclusive"
    assert [m for m in verdict["missing"] if "other ranks traced" in m], verdict["missing"]
    assert (verdict["base_steps"], verdict["new_steps"]) == (1, 1)
    # AND per rank the same trace matches itself: every op and kernel matched, no delta, and with
    # one step a side significance is unknown rather than claimed
    for scope in report["scopes"][1:]:
        rows = scope["ops"] + scope["op_shapes"] + scope["kernels"]
        assert rows
        assert {r["match"] for r in rows} == {"matched"}
        assert {r["delta_per_step_ns"] for r in rows} == {0.0}
        assert {r["significant"] for r in rows} == {None}
        assert scope["step_time"]["delta_median_ns"] == 0.0


def test_our_own_compile_on_off_pair(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # GIVEN one training step captured eager and under torch.compile (CPU, Inductor's C++ kernels)
    torch.set_num_threads(1)
    eager = training_step(256, extra_matmul=False)
    torch.manual_seed(0)
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(384, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 384)))
    x = torch.randn(256, 384)

    def compiled() -> None:
        model(x).sum().backward()

    compiled()  # compiles forward and backward outside the profiled window
    report = diff_json(capsys, capture(tmp_path / "eager", eager), capture(tmp_path / "compiled", compiled))
    scope = report["scopes"][0]
    # THEN six steps a side; the compiled region and its autograd functions are new ops, and the ReLU
    # (forward and backward) that Inductor fused into its C++ kernels is gone
    assert scope["step_time"]["base"]["count"] == scope["step_time"]["new"]["count"] == STEPS
    new_ops, gone_ops = set(scope["unmatched"]["ops_new"]), set(scope["unmatched"]["ops_gone"])
    assert {"CompiledFunction", "CompiledFunctionBackward"} <= new_ops, new_ops
    assert any(name.startswith("Torch-Compiled Region") for name in new_ops), new_ops
    assert "aten::relu" in gone_ops and "aten::threshold_backward" in gone_ops, gone_ops
    # AND the GEMMs stay matched by name (Inductor calls the same aten::addmm/mm externs)
    matched = {r["name"] for r in scope["ops"] if r["match"] == "matched"}
    assert {"aten::addmm", "aten::mm"} <= matched, matched


class Block(torch.nn.Module):
    def __init__(self, heavy: bool) -> None:
        super().__init__()
        self.fc1, self.fc2, self.heavy = torch.nn.Linear(256, 256), torch.nn.Linear(256, 256), heavy
        self.points = torch.randn(2048, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc1(x)
        if self.heavy:  # a slower op inserted in this layer: pairwise distances of 2048 points, ~1 GFLOP,
            y = y + torch.cdist(self.points, self.points).mean()  # ~30x a linear: no load hides it
        return self.fc2(torch.relu(y))


def blocks_step(heavy_in_second: bool) -> Callable[[], None]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(Block(False), Block(heavy_in_second), Block(False))
    x = torch.randn(512, 256)

    def step() -> None:
        with torch.no_grad():
            model(x)

    return step


def test_a_slower_op_inserted_in_one_layer_ranks_first_at_its_place(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GIVEN three blocks captured with_stack (module frames), NEW with torch.cdist in the second one
    torch.set_num_threads(1)
    base = capture(tmp_path / "base", blocks_step(False), with_stack=True)
    new = capture(tmp_path / "new", blocks_step(True), with_stack=True)
    scope = diff_json(capsys, base, new)["scopes"][0]
    # THEN by place in the op tree the first row is the new cdist (or the op it runs as) inside the
    # second block, and the blocks' other ops (the linears' addmm in every block) stay matched
    top = scope["op_tree"][0]
    assert top["match"] == "new", top
    assert "cdist" in (top["parent"] + " " + top["name"]), top
    assert top["parent"].startswith("nn.Module: Block_1"), top
    addmm = [r for r in scope["op_tree"] if r["name"] == "aten::addmm"]
    assert addmm and {r["match"] for r in addmm} == {"matched"}
    assert all(r["parent"].startswith("nn.Module: Linear_") for r in addmm)
    # AND by module, the second block's own frame gains the time (its ops are under it), first by impact
    assert scope["modules"][0]["module"] == "nn.Module: Block_1"
    assert scope["modules"][0]["delta_per_step_ns"] > 0
    assert "cdist" in " ".join(scope["unmatched"]["op_tree_new"])


def test_a_doubled_batch_moves_the_step_time_by_what_the_ops_add_up_to(
    captures: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN the same step at batch 256 and 512, compared with every row kept
    scope = diff_json(capsys, captures["base"], captures["batch"])["scopes"][0]
    # THEN a GEMM is among the two places in the tree that grew most, matched (the load on a shared
    # machine can swap the forward addmm and the backward mm, not put another op above both)
    top = scope["op_tree"][:2]
    assert any(r["name"] in {"aten::mm", "aten::addmm"} and r["match"] == "matched" for r in top), top
    # AND the step-time delta matches what the ops add up to: on each side the ops' self time per step
    # (disjoint pieces of a step; single-threaded CPU) covers most of the mean step, and the two
    # deltas agree within a tenth of a step. Both are read from the same runs, so a load on the
    # machine moves them together (the median step alone may even shrink under such load).
    step = scope["step_time"]
    for side in ("base", "new"):
        covered = sum(r[f"{side}_self_per_step_ns"] for r in scope["ops"]) / step[side]["mean_ns"]
        assert 0.8 <= covered <= 1.0, (side, covered)
    ops_delta = sum(r["delta_per_step_ns"] for r in scope["ops"])
    step_delta = step["new"]["mean_ns"] - step["base"]["mean_ns"]
    assert abs(ops_delta - step_delta) <= 0.1 * max(step["base"]["mean_ns"], step["new"]["mean_ns"])


def test_memory_snapshots_compared_peak_and_stacks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # GIVEN two generated single-rank runs with memory snapshots: 4 linear layers, and 6 (each layer
    # adds a 1 MiB weight allocated before recording began, from build_model, and its activations)
    from ..kineto_gen import TrainingSpec, write_dataset

    base = write_dataset(tmp_path / "four", TrainingSpec(ranks=1, layers=4, problems=False))
    new = write_dataset(tmp_path / "six", TrainingSpec(ranks=1, layers=6, problems=False))
    report = diff_json(capsys, base, new)
    memory = report["scopes"][0]["memory"]
    # THEN both peaks are there and grew, and build_model's bytes at the peak grew by exactly 2 MiB
    assert memory["new"]["peak_bytes"] > memory["base"]["peak_bytes"] > 4 << 20
    assert memory["delta_peak_bytes"] == memory["new"]["peak_bytes"] - memory["base"]["peak_bytes"]
    grew = {r["stack"]: r["delta_bytes"] for r in memory["stacks_grew"]}
    assert grew["build_model (model.py:12)"] == 2 << 20
    assert memory["stacks_shrank"] == []
    # AND the text report has the section; a run without snapshots (our CPU captures) has none
    code, text = run_diff(capsys, str(base), str(new))
    assert code == 0 and "Memory snapshots (whole run)" in text and "build_model (model.py:12)" in text


MEMORY_PICKLE = SHARED / "datasets" / "public-traces" / "memory-snapshots" / "memory.pickle"


@pytest.mark.skipif(not MEMORY_PICKLE.exists(), reason="needs ../shared/datasets/public-traces")
def test_a_real_snapshot_with_one_block_more_grows_that_stack_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # GIVEN a generated one-rank trace whose session carries the public allocator snapshot (7,946
    # allocations with Python stacks, recorded on Windows), and the same with one more 64 MiB block,
    # allocated before recording began from leak (extra.py:1) and never freed
    import pickle

    from ..kineto_gen import TrainingSpec, write_profile

    real = pickle.loads(MEMORY_PICKLE.read_bytes())  # plain dicts and lists: no code runs
    leak = {"address": 0x7F0000000000, "size": 64 << 20, "requested_size": 64 << 20, "state": "active_allocated",
            "frames": [{"filename": "extra.py", "line": 1, "name": "leak"}]}
    grown = {**real, "segments": [*real["segments"], {**real["segments"][0], "address": 0x7F0000000000,
                                                      "total_size": 64 << 20, "blocks": [leak]}]}
    sides = []
    for name, snapshot in (("base", real), ("grown", grown)):
        (session,) = write_profile(tmp_path / name, TrainingSpec(ranks=1, layers=2, problems=False))
        (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
        sides.append(tmp_path / name)
    memory = diff_json(capsys, *sides)["scopes"][0]["memory"]
    # THEN both sides hold the snapshot's allocations, the peak grows by exactly 64 MiB, and the
    # leak's stack is the only one that changed
    assert memory["new"]["allocations"] == memory["base"]["allocations"] + 1 > 7_946
    assert memory["delta_peak_bytes"] == 64 << 20
    assert [(r["stack"], r["delta_bytes"]) for r in memory["stacks_grew"]] == [("leak (extra.py:1)", 64 << 20)]
    assert memory["stacks_shrank"] == []
    assert memory["stacks_total"] > 10  # the real stacks matched one another across the two runs
