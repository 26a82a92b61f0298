"""Compiled-kernel provenance: a real torch.compile run on CPU names, in kernels/index.json, the
Inductor graph nodes and the model source lines each kernel came from."""

from __future__ import annotations

import inspect
import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture.compiled import provenance
from kinetoscope.capture.compiled.kernel_catalog import CATALOG
from kinetoscope.format.session_files import kernel_index
from kinetoscope.ingest.running.pipeline import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries

from ...conftest import PYTHON, requires_cxx
from ...torchrun import job_failed
from ..running.test_run import job_env
from ..running.test_run import kinetoscope as run_kinetoscope


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.fc1(x))
        return torch.sigmoid(self.fc2(hidden)) * 2.0


def line_of(text: str) -> int:
    lines, first = inspect.getsourcelines(Model.forward)
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture
def clean_inductor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Provenance and the cache directory set for this test only; dynamo, loaded modules and the catalog reset."""
    import torch._inductor.config as inductor_config
    from torch._inductor.codecache import PyCodeCache

    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv(provenance.LEVEL_ENV, raising=False)
    monkeypatch.delenv("TORCH_COMPILE_DEBUG", raising=False)
    CATALOG.reset()
    torch._dynamo.reset()
    with inductor_config.patch({"trace.provenance_tracking_level": 0}):
        yield
    torch._dynamo.reset()
    PyCodeCache.cache_clear()  # the catalog of later tests sees only what they compile
    CATALOG.reset()


def capture_compiled(out: Path, cache: Path) -> Path:
    """One profiled call of the compiled Model, compiled in warm-up with provenance on; its session."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out, artifact_cache_dir=cache)
    exporter = Profiler(config)  # turns provenance tracking on, before anything compiles
    assert os.environ[provenance.LEVEL_ENV] == "1"
    torch.manual_seed(0)
    fast, x = torch.compile(Model()), torch.randn(8, 16)
    with torch.no_grad():
        fast(x)  # warm-up: compiles
        with profile(activities=kinetoscope.activities(), experimental_config=config,
                     on_trace_ready=exporter.export_trace):
            fast(x)
    return exporter.sessions[0]


@pytest.mark.slow
@requires_cxx
@pytest.mark.usefixtures("clean_inductor")
def test_each_compiled_kernel_names_its_graph_nodes_and_model_lines(tmp_path: Path) -> None:
    session = capture_compiled(tmp_path / "out", tmp_path / "cache")
    index = kernel_index.read_index(session / "kernels" / "index.json")
    assert index["format"] == kernel_index.INDEX_FORMAT == 2

    kernels = {name: entry for name, (entry, *_) in index["trace_names"].items() if entry["kind"] == "cpp"}
    assert kernels and all("provenance" in entry for entry in kernels.values())
    sources = [s for entry in kernels.values() for s in entry["provenance"]["source"]]
    assert {s["file"] for s in sources} == {__file__}
    lines = {s["line"] for s in sources}
    assert {line_of("torch.relu"), line_of("torch.sigmoid")} <= lines
    nodes = {n for entry in kernels.values() for n in entry["provenance"]["post_grad_nodes"]}
    assert {"relu", "sigmoid"} <= nodes

    (graph,) = [e for entries in index["trace_names"].values() for e in entries if e["kind"] == "graph"]
    extern = {name: p for name, p in graph["provenance"].items() if name.startswith("extern_kernels.")}
    assert extern and any(s["line"] == line_of("self.fc1(x)") for p in extern.values() for s in p["source"])


@pytest.mark.slow
@requires_cxx
@pytest.mark.usefixtures("clean_inductor")
def test_event_details_of_a_compiled_graph_show_its_kernels_nodes_and_model_lines(tmp_path: Path) -> None:
    # GIVEN a real CPU torch.compile capture, ingested
    capture_compiled(tmp_path / "out", tmp_path / "cache")
    assert ingest(IngestOptions(profile_dir=tmp_path / "out", out=tmp_path / "ds")).status == "ok"
    viewer = ViewerIndex.open(Dataset(tmp_path / "ds"))
    con = viewer.cursor()
    (run, rank, session, graph_name), = con.execute(
        "SELECT run, rank, session, name FROM kernels WHERE kind = 'graph'").fetchall()
    (event_id,), = con.execute("SELECT id FROM events WHERE name = ?", [graph_name]).fetchall()

    # WHEN the viewer gives the graph call's details
    details = queries.event_details(viewer, int(event_id))

    # THEN they name each cpp kernel it ran, the graph nodes fused into it and this file's model lines
    assert details is not None
    (entry,) = details["provenance"]
    assert entry["kind"] == "graph" and all(f.startswith("kernels/") for f in entry["files"])
    cpp = {k["kernel"]: k for k in entry["kernels"] if k["kernel"].startswith("cpp_fused_")}
    assert {"relu", "sigmoid"} <= {n for k in cpp.values() for n in k["post_grad_nodes"]}
    sources = [s for k in cpp.values() for s in k["source"]]
    assert {s["file"] for s in sources} == {__file__}
    assert {line_of("torch.relu"), line_of("torch.sigmoid")} <= {s["line"] for s in sources}
    assert any("torch.relu" in s["code"] and s["function"] == "forward" for s in sources)
    # AND a kernel's own name (as Triton kernels appear in GPU traces) finds that kernel's entry and files
    name = sorted(cpp)[0]
    (own,) = queries.provenance(viewer, str(run), int(rank), str(session), name)
    assert own["kind"] == "cpp" and own["files"] and own["kernels"][0]["kernel"] == name
    assert own["kernels"][0]["source"] == cpp[name]["source"]


def test_provenance_is_read_from_what_inductor_keeps_on_a_compiled_graph() -> None:
    class Compiled:
        inductor_provenance_mapping_str = json.dumps({
            "postToPre": {"relu": ["hidden"], "add": ["add"]},
            "cppCodeToPost": {"cpp_fused_add_relu_0:2": ["add", "relu"]},
        })
        inductor_provenance_stack_traces_str = json.dumps({
            "cpp_fused_add_relu_0:2": ['  File "/m/model.py", line 7, in forward\n    return x.relu() + 1\n'],
        })

    (name, found), = provenance.of_compiled(Compiled()).items()
    assert name == "cpp_fused_add_relu_0"
    assert found.post_grad_nodes == ("add", "relu") and found.pre_grad_nodes == ("add", "hidden")
    assert found.as_json()["source"] == [{"file": "/m/model.py", "line": 7, "function": "forward",
                                          "code": "return x.relu() + 1"}]
    assert provenance.of_compiled(object()) == {}  # tracking off: nothing, and no error


def test_enable_leaves_a_level_the_job_chose() -> None:
    environ = {provenance.LEVEL_ENV: "0"}
    provenance.enable(environ)
    assert environ == {provenance.LEVEL_ENV: "0"}
    environ = {}
    provenance.enable(environ)
    assert environ == {provenance.LEVEL_ENV: "1"}


TRAIN_COMPILED = textwrap.dedent(
    """
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(16, 4)

        def forward(self, x):
            return torch.tanh(self.fc(x)) * 3.0  # MODEL LINE

    torch.manual_seed(0)
    net = Net()
    fast = torch.compile(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x = torch.randn(8, 16)
    for _ in range(5):
        loss = fast(x).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    """
)


@pytest.mark.slow
@requires_cxx
def test_run_with_an_artifact_cache_records_provenance_of_kernels_compiled_in_warm_up(tmp_path: Path) -> None:
    script = tmp_path / "train_compiled.py"
    script.write_text(TRAIN_COMPILED)
    out = tmp_path / "out"
    env = {k: v for k, v in job_env(KINETOSCOPE_ARTIFACT_CACHE_DIR=str(tmp_path / "cache")).items()
           if k not in ("TORCHINDUCTOR_CACHE_DIR", provenance.LEVEL_ENV, "TORCH_COMPILE_DEBUG")}
    done = run_kinetoscope("run", "--steps", "3-3", "--out", str(out), "--", PYTHON, str(script), env=env,
                           timeout_s=300)
    assert done.returncode == 0, job_failed(done)
    (session,) = out.glob("*_pid_*/*")
    index = kernel_index.read_index(session / "kernels" / "index.json")
    model_line = 1 + TRAIN_COMPILED.splitlines().index(next(
        line for line in TRAIN_COMPILED.splitlines() if "MODEL LINE" in line))
    kernels = [e for entries in index["trace_names"].values() for e in entries if e["kind"] == "cpp"]
    sources = [s for e in kernels for s in e.get("provenance", {}).get("source", [])]
    assert any(s["file"] == str(script) and s["line"] == model_line for s in sources), json.dumps(kernels)[:2000]
