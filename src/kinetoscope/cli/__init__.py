"""The ``kinetoscope`` command line: a registry of small commands, ``main(argv) -> int``."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, Protocol

from kinetoscope._errors import CommandError, KinetoscopeError
from kinetoscope._process_end import end_process
from kinetoscope._version import __version__


class Command(Protocol):
    """One subcommand: its module docstring is the help text."""

    def prepare_parser(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


# name -> module (under kinetoscope.cli, or the agent layer above it); each defines `command`, a Command.
COMMANDS: dict[str, str] = {
    "demo": "kinetoscope.cli.demo",
    "run": "kinetoscope.cli.run",
    "trigger": "kinetoscope.cli.trigger",
    "dump": "kinetoscope.cli.dump",
    "import": "kinetoscope.cli.import_",
    "verify": "kinetoscope.cli.verify",
    "ingest": "kinetoscope.cli.ingest",
    "summary": "kinetoscope.cli.summary",
    "findings": "kinetoscope.cli.findings",
    "diff": "kinetoscope.cli.diff",
    "baseline": "kinetoscope.cli.baseline",
    "sql": "kinetoscope.cli.sql",
    "export": "kinetoscope.cli.export",
    "view": "kinetoscope.cli.view",
    "report": "kinetoscope.cli.report",
    "mcp": "kinetoscope.agent.command",
}


def _load(name: str) -> tuple[Command, str]:
    module = importlib.import_module(COMMANDS[name])
    doc = (module.__doc__ or "").strip()
    return module.command, doc


def get_argument_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, that command's module alone is imported (the others
    are bare names), so a command starts without importing what the others need."""
    parser = argparse.ArgumentParser(
        prog="kinetoscope",
        description="Profile capture and explorer for PyTorch.",
    )
    parser.add_argument("--version", action="version", version=f"kinetoscope {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is not None and name != only:
            subparsers.add_parser(name)
            continue
        command, doc = _load(name)
        summary = doc.splitlines()[0] if doc else name
        sub = subparsers.add_parser(
            name, help=summary, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        command.prepare_parser(sub)
        sub.set_defaults(_command=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = get_argument_parser(_command_named(words))
    args = parser.parse_args(words)
    args.own_process = argv is None  # the command line's process (console script, -m), not a caller's
    from kinetoscope.cli.environment import from_environment

    try:
        with from_environment():  # the environment's settings for the analyses, read at this edge
            return int(args._command.run(args))
    except CommandError as exc:
        print(f"kinetoscope {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except KinetoscopeError as exc:
        print(f"kinetoscope {args.command}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): stop quietly, as a SIGPIPE would
        _discard_stdout()
        return 128 + 13
    except OSError as exc:
        from kinetoscope.cli.storage_errors import storage_message

        message = storage_message(exc, getattr(args, "out", None))
        if message is None:
            raise
        print(f"kinetoscope {args.command}: {message}", file=sys.stderr)
        return 2


def command_line() -> NoReturn:
    """The ``kinetoscope`` command (its console script and ``python -m kinetoscope``): ``main`` in
    this process, with one BLAS thread where the command only reads profiles (``one_blas_thread``),
    which then ends without the interpreter's teardown (``_process_end``)."""
    one_blas_thread(_command_named(sys.argv[1:]))
    end_process(main())


def output_of(argv: Sequence[str], ok_codes: tuple[int, ...] = (0,)) -> str:
    """What ``kinetoscope ARGV`` prints, run in this process (the report, the agent and notebooks
    show the commands' own answers); an exit status outside ``ok_codes`` is a CommandError with the
    command's last error lines."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    if code not in ok_codes:
        last = [line for line in err.getvalue().splitlines() if line.strip()][-3:]
        raise CommandError(f"kinetoscope {argv[0]} failed (exit {code}): " + " | ".join(last), exit_code=code or 2)
    return out.getvalue()


# Commands that run the user's own code (a training script under the profiler): their process keeps
# the environment's BLAS threads.
USER_CODE_COMMANDS = frozenset({"run", "demo"})


def one_blas_thread(command: str | None) -> None:
    """One OpenBLAS thread for a command that only reads profiles (none of them multiplies
    matrices): numpy's OpenBLAS starts a thread per CPU when numpy is imported, which spin for
    about 0.08 CPU s on two CPUs before they sleep. Set before numpy is loaded, in the command
    line's own process (``command_line``) and the worker processes it starts; a value the user set
    is kept."""
    if command is not None and command not in USER_CODE_COMMANDS and "numpy" not in sys.modules:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _command_named(words: list[str]) -> str | None:
    """The command ``words`` run, when the first word that is not an option names one."""
    first = next((word for word in words if not word.startswith("-")), None)
    return first if first in COMMANDS else None


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests, embedding)
        pass
