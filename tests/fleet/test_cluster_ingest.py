"""Ingest on a Dask cluster from object storage into object storage: the dataset equals a local
ingest table by table, is updated incrementally, and ``summary`` and ``sql`` read it where it lies."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from kinetoscope.dataset.schema import TABLES
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import PYTHON
from ..kineto_gen import TrainingSpec, write_profile
from .conftest import BUCKET, Fleet

pytestmark = pytest.mark.slow
RANKS = 3
# Where a dataset records where its sessions were read from: the one column that differs by design.
LOCATION_COLUMNS = {"sessions": {"path"}}


def kinetoscope(fleet: Fleet, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "kinetoscope", *args], env=fleet.env, capture_output=True, text=True, timeout=600, check=False
    )


def ingest_on_cluster(fleet: Fleet, *, by_env: bool = False) -> subprocess.CompletedProcess[str]:
    """``kinetoscope ingest`` from S3 into S3, told the scheduler by ``--scheduler`` or ``$KINETOSCOPE_SCHEDULER``."""
    tree, out = fleet.url("profiles/train"), fleet.url("datasets/train")
    if by_env:
        env = {**fleet.env, "KINETOSCOPE_SCHEDULER": fleet.scheduler}
        return kinetoscope(Fleet(fleet.endpoint, fleet.scheduler, env), "ingest", tree, "--out", out)
    return kinetoscope(fleet, "ingest", tree, "--out", out, "--scheduler", fleet.scheduler)


def rows(dataset: Any, table: str) -> list[str]:
    names = [c for c in dataset.table(table).column_names if c not in LOCATION_COLUMNS.get(table, set())]
    return sorted(json.dumps(row, sort_keys=True, default=str) for row in dataset.table(table, names).to_pylist())


def executed_per_worker(fleet: Fleet) -> dict[str, int]:
    from distributed import Client

    with Client(fleet.scheduler) as client:
        counts: dict[str, int] = client.run(lambda dask_worker: dask_worker.state.executed_count)
        return counts


@pytest.fixture(scope="module")
def ingested(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 3-rank profile tree, uploaded to S3 and ingested there by the cluster; and ingested locally."""
    work = tmp_path_factory.mktemp("profiles")
    local_tree = work / "train"
    write_profile(local_tree, TrainingSpec(run="train", ranks=RANKS, steps=2, layers=2, problems=False))
    s3, _ = pafs.FileSystem.from_uri(fleet.url(""))
    pafs.copy_files(str(local_tree), f"{BUCKET}/profiles/train", destination_filesystem=s3)
    ingest(IngestOptions(profile_dir=local_tree, out=work / "local", jobs=1))
    before = sum(executed_per_worker(fleet).values())
    done = ingest_on_cluster(fleet, by_env=True)
    return {"local": work / "local", "done": done, "tasks": sum(executed_per_worker(fleet).values()) - before}


def test_the_cluster_ingests_every_rank_from_s3_into_s3(fleet: Fleet, ingested: dict[str, Any]) -> None:
    # GIVEN a 3-rank profile tree on S3, WHEN ingest ran it on the cluster ($KINETOSCOPE_SCHEDULER) into S3
    done = ingested["done"]
    assert done.returncode == 0, done.stdout + done.stderr
    # THEN each session was one task on the workers, and the dataset equals a local ingest table by table
    assert ingested["tasks"] == RANKS
    with open_dataset(ingested["local"]) as local, open_dataset(fleet.url("datasets/train")) as remote:
        assert remote.runs == local.runs == ["train"]
        for table in TABLES:
            assert rows(remote, table.name) == rows(local, table.name), table.name
        paths = remote.table("sessions", ["path"]).column("path").to_pylist()
    assert all(p.startswith(fleet.url("profiles/train/")) for p in paths) and len(paths) == RANKS


def test_summary_and_sql_read_the_dataset_on_s3(fleet: Fleet, ingested: dict[str, Any]) -> None:
    assert ingested["done"].returncode == 0
    # WHEN summary and sql open the dataset where it lies, and the local one
    remote, local = fleet.url("datasets/train"), str(ingested["local"])
    summaries = [kinetoscope(fleet, "summary", where, "--json") for where in (remote, local)]
    query = "SELECT rank, count(*) AS n, sum(dur_ns) AS busy_ns FROM events GROUP BY rank ORDER BY rank"
    answers = [kinetoscope(fleet, "sql", where, query, "--csv", "-") for where in (remote, local)]
    # THEN they say the same of it
    for done in (*summaries, *answers):
        assert done.returncode == 0, done.stderr
    assert json.loads(summaries[0].stdout) == json.loads(summaries[1].stdout)
    assert answers[0].stdout == answers[1].stdout and len(answers[0].stdout.splitlines()) == RANKS + 1


def test_ingest_again_skips_the_unchanged_sessions_on_s3(fleet: Fleet, ingested: dict[str, Any]) -> None:
    assert ingested["done"].returncode == 0
    before = sum(executed_per_worker(fleet).values())
    # WHEN the same tree is ingested into the same dataset again
    again = ingest_on_cluster(fleet)
    # THEN nothing is re-read: the manifest on S3 was found and every fingerprint matched
    assert again.returncode == 0, again.stderr
    assert f"0 session(s) ingested, {RANKS} unchanged" in again.stdout
    assert sum(executed_per_worker(fleet).values()) == before


def test_the_docs_duckdb_example_reads_the_dataset_on_s3(fleet: Fleet, ingested: dict[str, Any]) -> None:
    assert ingested["done"].returncode == 0
    # GIVEN the DuckDB example of docs/fleet.md, pointed at the dataset on S3
    example = docs_example(Path(__file__).resolve().parents[2] / "docs" / "fleet.md")
    code = example.replace("s3://my-bucket/datasets/train", fleet.url("datasets/train"))
    # WHEN it runs
    done = subprocess.run([PYTHON, "-c", code], env=fleet.env, capture_output=True, text=True, timeout=300, check=False)
    # THEN it prints each rank's event count, as the local dataset has them
    assert done.returncode == 0, done.stderr
    with open_dataset(ingested["local"]) as local:
        expected = local.sql("SELECT rank, count(*) AS events FROM events GROUP BY rank ORDER BY rank").to_pylist()
    assert done.stdout.strip() == str([(r["rank"], r["events"]) for r in expected])


def docs_example(doc: Path) -> str:
    """The ```python block marked ``<!-- tested: duckdb-on-s3 -->`` in ``doc``."""
    text = doc.read_text()
    marker = text.index("<!-- tested: duckdb-on-s3 -->")
    start = text.index("```python\n", marker) + len("```python\n")
    return text[start : text.index("```", start)]


def test_per_rank_analyses_run_on_the_workers_over_the_dataset_on_s3(fleet: Fleet, ingested: dict[str, Any]) -> None:
    from distributed import Client

    from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns, run_all
    from kinetoscope.analysis.per_rank import RANK_LOCAL, by_rank
    from kinetoscope.query.rank_loaders import rank_loaders

    assert ingested["done"].returncode == 0
    before = sum(executed_per_worker(fleet).values())
    # WHEN each rank's analyses are computed by a worker, reading only that rank's rows from S3
    with Client(fleet.scheduler) as client:
        combined = by_rank(client.get_executor(), rank_loaders(fleet.url("datasets/train")), top=5)
    # THEN there was one task per rank, and the results are those of the local dataset, all ranks at once
    assert sum(executed_per_worker(fleet).values()) - before == RANKS
    with open_dataset(ingested["local"]) as local:
        tables = local.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in RANK_LOCAL)))
    for name in RANK_LOCAL:
        alone = run_all(tables, (TopOptions(top=5),), analyses=(ANALYSES_BY_NAME[name],))[name]
        assert combined[name].to_pylist() == alone.to_pylist(), name


def test_summary_on_the_cluster_makes_each_rank_a_task_and_says_what_a_local_summary_says(
    fleet: Fleet, ingested: dict[str, Any]
) -> None:
    assert ingested["done"].returncode == 0
    # WHEN summary runs on the cluster over the dataset on S3: each worker reads its rank from S3
    before = sum(executed_per_worker(fleet).values())
    remote = kinetoscope(fleet, "summary", fleet.url("datasets/train"), "--json", "--scheduler", fleet.scheduler)
    tasks = sum(executed_per_worker(fleet).values()) - before
    local = kinetoscope(fleet, "summary", str(ingested["local"]), "--json", "--no-by-rank")
    # THEN there was a task per rank, and the document is the local one, analyses and findings
    assert remote.returncode == 0 and local.returncode == 0, remote.stderr + local.stderr
    assert tasks == RANKS
    document = json.loads(remote.stdout)
    assert document == json.loads(local.stdout)
    assert document["findings"]["findings"] and document["analyses"]["step_times"]["rows"]
    # AND the user's settings travel with each rank's task: the workers' roofline uses --device too
    device = ("--json", "--device", "H100 SXM")
    remote = kinetoscope(fleet, "summary", fleet.url("datasets/train"), "--scheduler", fleet.scheduler, *device)
    local = kinetoscope(fleet, "summary", str(ingested["local"]), "--no-by-rank", *device)
    assert remote.returncode == 0 and local.returncode == 0, remote.stderr + local.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)
