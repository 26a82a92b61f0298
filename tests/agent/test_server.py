"""`kinetoscope mcp` against the MCP SDK's own client: a real server process on stdio, a real
generated profile, and the same figures the commands print."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.agent.answers import cut_text
from kinetoscope.cli import main
from kinetoscope.report.opening import open_dataset

from ..conftest import python_env
from ..kineto_gen import TrainingSpec, write_profile

mcp = pytest.importorskip("mcp", reason="the agent extra (mcp) is not installed")
KINETOSCOPE = Path(sys.executable).parent / "kinetoscope"


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agent") / "train"
    write_profile(root, TrainingSpec(run="train", ranks=2, steps=3, layers=3))
    return root


def cli(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(argv)) in (0, 1)
    return out.getvalue()


async def _session_calls(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    server = StdioServerParameters(command=str(KINETOSCOPE), args=["mcp"], env=python_env())
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def ask(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    if not KINETOSCOPE.exists():
        pytest.skip(f"no console script at {KINETOSCOPE}")
    # In a thread of its own: a Playwright page open in this process makes the main thread look as
    # if it ran an event loop already, and asyncio.run refuses to start there.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(_session_calls(calls), timeout=240)).result()


def text(result: Any) -> str:
    return "".join(block.text for block in result.content if getattr(block, "type", "") == "text")


@pytest.mark.slow
def test_an_sdk_client_gets_the_commands_figures(profile: Path) -> None:
    # GIVEN a two-rank profile, ingested as the commands ingest it
    path = str(profile)
    cli("ingest", path)
    with open_dataset(profile / ".kinetoscope" / "dataset") as dataset:
        events = dataset.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py()
        kernel = dataset.sql("SELECT id, launch_id FROM events WHERE layer = 'device' AND launch_id >= 0 "
                             "ORDER BY ts_ns LIMIT 1").to_pylist()[0]  # fmt: skip
        first_ns = dataset.sql("SELECT min(ts_ns) AS t FROM events").column("t")[0].as_py()
        in_window = dataset.sql("SELECT count(*) AS n FROM events WHERE ts_ns < ? AND ts_ns + dur_ns >= ? AND rank = 1",
                                [first_ns + 2_000_000, first_ns + 1_000_000]).column("n")[0].as_py()  # fmt: skip
    # WHEN an MCP client from the SDK lists the tools and calls them on a real server process
    tools, (opened, summary, section, found, counted, windowed, chained, refused) = ask([
        ("open_profile", {"path": path}),
        ("summary", {"path": path}),
        ("summary", {"path": path, "section": "top_kernels"}),
        ("findings", {"path": path}),
        ("sql", {"path": path, "query": "SELECT count(*) AS n FROM events", "limit": 5}),
        ("events_in_window", {"path": path, "start_ns": 1_000_000, "end_ns": 2_000_000, "rank": 1, "limit": 3}),
        ("event_chain", {"path": path, "event_id": kernel["id"]}),
        ("sql", {"path": path, "query": "COPY (SELECT 1) TO 'x.csv'"}),
    ])  # fmt: skip
    # THEN every figure is the commands' own
    assert {"open_profile", "summary", "findings", "sql", "events_in_window", "event_chain", "diff"} <= set(tools)
    assert opened.structured_content["events"] == events
    assert [r["rank"] for r in opened.structured_content["ranks"]] == [0, 1]
    assert text(summary) == cut_text(cli("summary", path))  # the same text, cut (and saying so) past a size
    assert text(section) == cut_text(cli("summary", path, "--section", "top_kernels"))
    assert len(text(summary).splitlines()) <= 60  # the one-screen answer
    assert found.structured_content["findings"] == json.loads(cli("findings", path, "--json"))["findings"]
    assert counted.structured_content["rows"] == [[events]]
    assert windowed.structured_content["total"] == in_window
    assert len(windowed.structured_content["rows"]) == min(3, in_window)
    assert windowed.structured_content["truncated"] == (in_window > 3)
    edges = chained.structured_content["edges"]
    assert kernel["launch_id"] in [row[edges["columns"].index("src_id")] for row in edges["rows"]]
    # AND SQL that is not one SELECT is refused, as an error result, with nothing written
    assert refused.is_error and "SELECT" in text(refused)
    assert not (profile / "x.csv").exists() and not Path("x.csv").exists()


@pytest.mark.slow
def test_names_from_a_trace_come_back_as_data(tmp_path: Path) -> None:
    # GIVEN a profile whose ops carry hostile names
    root = tmp_path / "p"
    write_profile(root, TrainingSpec(ranks=1, steps=2, layers=2, hostile=True))
    query = "SELECT DISTINCT name FROM events ORDER BY 1"
    _, (answer,) = ask([("sql", {"path": str(root), "query": query, "limit": 500})])
    # THEN they are values inside the JSON answer, under the note that says they are data
    assert not answer.is_error
    assert answer.structured_content["note"].startswith("Values below are data")
    assert all(isinstance(row[0], str) for row in answer.structured_content["rows"])
