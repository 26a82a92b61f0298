"""Ingest changes no value: every table ingest writes from real traces (the fixtures of
``tests/data``, a few of the public corpus when ``../shared`` holds it, and a CPU
torch.profiler capture made here) has the digest recorded in ``golden_digests.json``.

A deliberate change of a value updates the record, in its own commit:
``PYTHONPATH=src python -m tests.ingest.test_golden_digests`` rewrites it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kinetoscope.importer.trace_import import ImportOptions, import_trace

from ..conftest import SHARED, python_env, use_record_codec
from .digest import differences, ingest_digest
from .helpers import DATA, import_scenario

GOLDEN = Path(__file__).with_name("golden_digests.json")
SCENARIOS = (
    "ingest-cpu-capture",
    "import-cpu-gloo",
    "import-cuda-alexnet",
    "import-cuda-multi-stream",
    "import-large-ids",
    "import-legacy-kineto",
    "import-rocm-mi250",
    "dlrm_8rank",
)
CORPUS = SHARED / "datasets" / "public-traces"
PUBLIC = (
    "hta/tests/data/trace_filter/sampled_rank-0.json.gz",
    "hta/tests/data/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz",
    "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.pt.trace.json.gz",
)
CAPTURE = """
import sys
import torch
from torch.profiler import ProfilerActivity, profile

model = torch.nn.Sequential(*(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()) for _ in range(3)))
x = torch.randn(16, 64)
model(x).sum().backward()
with profile(activities=[ProfilerActivity.CPU], with_stack=True, record_shapes=True, profile_memory=True) as prof:
    for _ in range(2):
        model(x).sum().backward()
        prof.step()
prof.export_chrome_trace(sys.argv[1])
"""


def _digest_of(name: str, root: Path) -> dict:
    if name in SCENARIOS:
        import_scenario(name, root / "prof")
    else:
        import_trace(CORPUS / name, ImportOptions(out_dir=root / "prof"))
    return ingest_digest(root / "prof", root / "ds")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_fixture_tables_are_unchanged(tmp_path: Path, scenario: str) -> None:
    expected = json.loads(GOLDEN.read_text())[scenario]
    assert differences(_digest_of(scenario, tmp_path), expected) == []


@pytest.mark.parametrize("trace", PUBLIC)
def test_public_trace_tables_are_unchanged(tmp_path: Path, trace: str) -> None:
    if not (CORPUS / trace).exists():
        pytest.skip("public trace corpus not present")
    expected = json.loads(GOLDEN.read_text())[trace]
    assert differences(_digest_of(trace, tmp_path), expected) == []


def test_a_fresh_capture_reads_the_same_by_records_and_by_dicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture made now (its times are new) has no record: the fast reader must give exactly
    what the reader of plain dicts gives."""
    pytest.importorskip("torch")
    trace = tmp_path / "trace.json"
    subprocess.run([sys.executable, "-c", CAPTURE, str(trace)], check=True, env=python_env(), timeout=600)
    import_trace(trace, ImportOptions(out_dir=tmp_path / "prof"))
    use_record_codec("msgspec", monkeypatch)
    fast = ingest_digest(tmp_path / "prof", tmp_path / "fast")
    use_record_codec("dicts", monkeypatch)
    plain = ingest_digest(tmp_path / "prof", tmp_path / "plain")
    assert fast["events"][0]["rows"] > 500 and fast["frames"][0]["rows"] > 50
    assert differences(fast, plain) == []


def _record() -> None:
    import tempfile

    found = {}
    for name in (*SCENARIOS, *(p for p in PUBLIC if (CORPUS / p).exists())):
        with tempfile.TemporaryDirectory() as root:
            found[name] = _digest_of(name, Path(root))
    GOLDEN.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    assert DATA.is_dir()
    _record()
