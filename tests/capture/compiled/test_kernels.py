"""Compiled kernels: a real torch.compile model on CPU, its generated code copied into the session."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture.compiled import artifacts
from kinetoscope.capture.compiled.kernel_catalog import CATALOG, ArtifactFile, Graph, Kernel
from kinetoscope.format.files import sha256_of
from kinetoscope.format.session_files import kernel_index

from ...conftest import requires_cxx
from ..helpers import check_complete_session, load_trace, tiny_model

# serial: the catalog counts the graphs torch.compile made in this process, so it runs in one that
# compiled nothing else (a parallel worker may have run other files' compiles first)
pytestmark = [pytest.mark.slow, pytest.mark.serial, requires_cxx]


class Compiled:
    def __init__(self, cache: Path, model: torch.nn.Module, x: torch.Tensor, warmup_catalog: int) -> None:
        self.cache, self.model, self.x, self.warmup_catalog = cache, model, x, warmup_catalog


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Compiled]:
    """One real compile for the module: tiny MLP, Inductor's C++ backend, cache in a fresh directory."""
    cache = tmp_path_factory.mktemp("artifacts")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
        CATALOG.reset()
        Profiler(ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path_factory.mktemp("warm"),
                               artifact_cache_dir=cache))
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(cache)
        model, x = tiny_model()
        fast = torch.compile(model)
        with torch.no_grad():
            for _ in range(3):  # warm-up: compiles once
                fast(x)
        yield Compiled(cache, fast, x, len(CATALOG.graphs))
        torch._dynamo.reset()


def profile_once(out: Path, compiled: Compiled, *, precache: bool = True, eager: bool = False) -> Path:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out, artifact_cache_dir=compiled.cache,
                           precache=precache)
    exporter = Profiler(config)
    model = compiled.model._orig_mod if eager else compiled.model  # type: ignore[union-attr]
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace), torch.no_grad():
        model(compiled.x)
    return exporter.sessions[0]


def test_precache_gathers_metadata_during_warm_up(compiled: Compiled) -> None:
    assert compiled.warmup_catalog == 1
    (graph,) = CATALOG.graphs.values()
    assert graph.fx_key_known and graph.fx_key
    assert graph.wrapper.path.is_relative_to(compiled.cache)
    (kernel,) = graph.kernels
    assert kernel.kind == "cpp" and kernel.name.startswith("cpp_fused_")
    assert {f.path.suffix for f in kernel.files} == {".cpp", ".so"}


def test_kernels_that_ran_are_copied_with_an_index(tmp_path: Path, compiled: Compiled) -> None:
    session = profile_once(tmp_path, compiled)
    info = check_complete_session(session)  # the manifest lists the copied kernels too
    out = info.compiled_kernels
    assert (out.enabled, out.precached, out.index, out.graphs, out.kernels, out.reason) == (
        True, True, "kernels/index.json", 1, 1, "")
    assert out.cache_dir == str(compiled.cache)

    index = kernel_index.read_index(session / "kernels" / "index.json")
    (graph,) = CATALOG.graphs.values()
    (graph_entry,) = index["trace_names"][graph.trace_name]
    assert graph_entry["kind"] == "graph" and graph_entry["cache_key"] == graph.module_key
    trace_names = {e.get("name") for e in load_trace(session)["traceEvents"]}
    assert graph.trace_name in trace_names  # the index key is a name in the trace
    (kernel,) = graph.kernels
    (kernel_entry,) = index["trace_names"][kernel.name]
    assert kernel_entry["cache_key"] == kernel.cache_key and kernel_entry["in_trace"] is False
    for relative in [*graph_entry["files"], *kernel_entry["files"]]:
        meta = index["files"][relative]
        assert sha256_of(session / relative) == meta["sha256"]
        assert (session / relative).stat().st_size == meta["size_bytes"]
        assert relative.split("/")[1] in (graph.module_key, kernel.cache_key)
    cpp = next(session / r for r in kernel_entry["files"] if r.endswith(".cpp"))
    assert 'extern "C"' in cpp.read_text()
    assert out.files == len(index["files"]) == 3


def test_without_precache_the_catalog_is_gathered_when_profiling_starts(tmp_path: Path, compiled: Compiled) -> None:
    CATALOG.reset()
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path,
                           artifact_cache_dir=compiled.cache, precache=False)
    exporter = Profiler(config)
    assert CATALOG.graphs == {}
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace), torch.no_grad():
        assert len(CATALOG.graphs) == 1  # gathered inside the profiled window
        compiled.model(compiled.x)
    out = check_complete_session(exporter.sessions[0]).compiled_kernels
    assert (out.precached, out.graphs, out.kernels) == (False, 1, 1)
    index = json.loads((exporter.sessions[0] / "kernels" / "index.json").read_text())
    assert index["precached"] is False


def test_an_eager_run_records_that_no_compiled_kernel_ran(tmp_path: Path, compiled: Compiled) -> None:
    session = profile_once(tmp_path, compiled, eager=True)
    out = check_complete_session(session).compiled_kernels
    assert out.enabled and out.reason == artifacts.NONE_RAN and out.graphs == 0 and not out.index
    assert not (session / "kernels").exists()


def test_only_graphs_named_in_the_trace_are_selected(tmp_path: Path) -> None:
    def graph(fx_key: str, kernel_name: str) -> Graph:
        wrapper = ArtifactFile(tmp_path / f"{fx_key}.py", 1, "0" * 64)
        kernel = Kernel(kernel_name, "triton", f"k{fx_key}", ())
        return Graph(module_key=f"m{fx_key}", wrapper=wrapper, kernels=(kernel,), fx_key=fx_key, fx_key_known=True)

    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"name": kernel_index.graph_event_name("ran"), "ph": "X"},
        {"name": "triton_poi_fused_add_7", "ph": "X", "cat": "kernel"},
        {"name": "something else with idle in it", "ph": "X"},
    ]}))
    graphs = [graph("ran", "triton_a"), graph("idle", "triton_b"), graph("kernel-only", "triton_poi_fused_add_7")]
    found = artifacts.names_in_file(trace, artifacts.names_of(graphs))
    assert [g.fx_key for g in artifacts.ran_graphs(graphs, found)] == ["ran", "kernel-only"]


def test_without_artifact_cache_dir_nothing_is_copied(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = Profiler(config)
    with profile(activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace):
        torch.ones(4).sum()
    out = check_complete_session(exporter.sessions[0]).compiled_kernels
    assert (out.enabled, out.reason) == (False, artifacts.NOT_SET)
