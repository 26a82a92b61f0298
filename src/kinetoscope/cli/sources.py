"""The PROFILE argument the reading commands share: a profile tree, a dataset, or raw traces.

Raw torch.profiler traces (``*.json``, ``*.json.gz``, or folders of them) are imported first,
once, into a cache beside them (``importer.trace_cache``); the command then reads that profile.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

TRACES_HELP = "; or torch.profiler traces (*.json[.gz], one per rank), imported first into a cache beside them"


def add_profile_argument(parser: argparse.ArgumentParser, name: str, what: str) -> None:
    """A positional of one or more paths: ``what`` says which profiles the command reads."""
    parser.add_argument(name, type=Path, nargs="+", metavar=name.upper(), help=what + TRACES_HELP)


def profile_path(paths: list[Path]) -> Path:
    """The profile tree or dataset the paths name, importing raw traces first (notes on stderr)."""
    from kinetoscope.importer.trace_cache import profile_for

    return profile_for(paths, say=lambda line: print(line, file=sys.stderr, flush=True))
