"""`kinetoscope view` on a big raw trace: a preview of its first events while the whole is prepared.

When the traces named are raw torch.profiler traces of more than `MIN_SOURCE_FACTOR` times the
preview budget, a child process cuts the first trace's first events into a trace of their own
(``viewer.pages.preview.cut_prefix``), imports, ingests and indexes it, all in a private folder of
the user's cache; the viewer serves it, labelled as a preview, until the whole is ready (a
whole that is ready first, as when it was imported and indexed before, ends the child). The
whole's import waits for the preview to answer (at most `HEAD_START_LIMIT_S`), so the two do
not share the CPU while the first timeline is being made. The
child and the folder go when the server stops (and the folder, if it was killed, when a later
`kinetoscope view` starts).
Anything that goes wrong with the preview is printed and leaves the full preparation alone.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope import _helper_process as helper
from kinetoscope._processes import process_alive
from kinetoscope.format.private_dirs import private_dir, user_cache_root
from kinetoscope.format.session_files import session_dir as layout

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from kinetoscope.viewer.indexing.index import ViewerIndex
    from kinetoscope.viewer.serving.loading import Preparation

MIN_SOURCE_FACTOR = 3
HEAD_START_LIMIT_S = 60.0  # the longest the whole's import waits for the preview
_PREFIX = "preview-"


def preview_trace(paths: list[Path | str], budget_bytes: int) -> Path | None:
    """The trace to preview among `paths`: the first raw trace, when they are raw traces (not a
    profile tree or a dataset) larger in all than `MIN_SOURCE_FACTOR` x `budget_bytes`."""
    local = [p for p in paths if isinstance(p, Path)]
    if budget_bytes <= 0 or len(local) != len(paths) or any(_prepared(p) for p in local):
        return None
    from kinetoscope.importer.trace_import import find_trace_files

    traces = find_trace_files(local)
    total = sum(t.stat().st_size for t in traces)
    return traces[0] if traces and total > MIN_SOURCE_FACTOR * budget_bytes else None


def _prepared(path: Path) -> bool:
    from kinetoscope.dataset.directory import is_dataset

    return not path.exists() or layout.is_profile(path) or is_dataset(path)


def start_preview(paths: list[Path | str], budget_bytes: int, preparation: Preparation,
                  make_app: Callable[[ViewerIndex], Starlette]) -> threading.Thread:
    """Prepares the preview of `paths` (when `preview_trace` finds one) in a thread, and a child
    process, of its own. Until it answers (or fails, or none is wanted) `preparation` holds the
    whole's import (`Preparation.wait_for_preview`), so the child has the CPU first."""
    preparation.expect_preview()
    thread = threading.Thread(target=contextvars.copy_context().run, daemon=True, name="prepare-preview",
                              args=(_run, paths, budget_bytes, preparation, make_app))  # the command's settings
    thread.start()
    return thread


def _run(paths: list[Path | str], budget_bytes: int, preparation: Preparation,
         make_app: Callable[[ViewerIndex], Starlette]) -> None:
    trace: Path | str = paths[0] if paths else ""
    try:
        found = preview_trace(paths, budget_bytes)
        if found is None:
            return
        trace = found
        folder = _new_folder(preparation)
        built = build_in_child(trace, folder, budget_bytes, preparation)
        if built is None:
            return
        from kinetoscope.query.dataset import Dataset
        from kinetoscope.viewer.indexing.index import ViewerIndex

        index = ViewerIndex.open(Dataset(Path(built["dataset"])))
        preparation.on_close(index.close)
        preparation.show_preview(make_app(index), preview_about(index, built))
    except Exception as exc:  # noqa: BLE001 - the preview is a convenience: the full preparation goes on
        print(f"kinetoscope view: no preview of {trace}: {exc}", file=sys.stderr, flush=True)
    finally:
        preparation.preview_over()


def _new_folder(preparation: Preparation) -> Path:
    root = private_dir(user_cache_root() / "view-previews")
    for old in root.glob(f"{_PREFIX}*"):  # left by a view that was killed
        with contextlib.suppress(ValueError, IndexError):
            if not process_alive(int(old.name.split("-")[1])):
                shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=root))
    preparation.on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
    return folder


def build_in_child(trace: Path, folder: Path, budget_bytes: int, preparation: Preparation) -> dict[str, Any] | None:
    """Runs `build` in a child process (the full preparation keeps this one busy); None when the
    whole became ready first."""
    command = helper.module_command("kinetoscope.cli.view_preview", str(trace), str(folder), str(budget_bytes))
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=helper.environment()
    ) as child:
        preparation.on_close(child.kill)  # a no-op once it has ended
        while child.poll() is None:
            if preparation.settled():
                child.terminate()
                child.wait()
                return None
            time.sleep(0.05)
        out, err = child.communicate()
    if child.returncode != 0:
        raise RuntimeError(err.strip().splitlines()[-1] if err.strip() else f"exit status {child.returncode}")
    found: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return found


def build(trace: Path, folder: Path, budget_bytes: int) -> dict[str, Any]:
    """The preview dataset of `trace` in `folder`, imported, ingested and indexed (run in the child)."""
    from kinetoscope.cli.sources import local_profile_path
    from kinetoscope.viewer.indexing.index import ViewerIndex
    from kinetoscope.viewer.indexing.source import resolve_dataset
    from kinetoscope.viewer.pages.preview import cut_prefix

    cut = cut_prefix(trace, folder / trace.name.removesuffix(".gz"), budget_bytes)
    profile = local_profile_path([cut.path], "view", lambda _: None)
    dataset = resolve_dataset(profile, say=lambda _: None)
    ViewerIndex.open(dataset).close()
    return {"dataset": str(dataset.path), "trace": str(trace), "events_kept": cut.events, "complete": cut.complete,
            "trace_bytes": cut.source_bytes, "names_added": cut.names}


def preview_about(index: ViewerIndex, built: dict[str, Any]) -> dict[str, Any]:
    """What the page says of the preview."""
    ranks = [int(r) for (r,) in index.cursor().execute(
        "SELECT DISTINCT rank FROM view_tracks WHERE rank IS NOT NULL ORDER BY rank").fetchall()]
    return {"trace": Path(built["trace"]).name, "trace_bytes": built["trace_bytes"], "ranks": ranks,
            "events": index.event_count, "span_ns": index.span_ns}


def main(argv: list[str]) -> int:
    trace, folder, budget = Path(argv[0]), Path(argv[1]), int(argv[2])
    print(json.dumps(build(trace, folder, budget)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
