"""The flight recorder's decisions, without starting one: what counts as out of memory, which
hooks dump, and the dump signal's spelling."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kinetoscope import ConfigError
from kinetoscope.capture.running import flight_recorder as fr
from kinetoscope.capture.running.run_settings import parse_dump_signal


def test_out_of_memory_is_found_in_the_error_its_cause_or_its_context() -> None:
    assert fr.is_out_of_memory(MemoryError()) and fr.is_out_of_memory(torch.OutOfMemoryError("cuda"))
    try:
        try:
            raise MemoryError
        except MemoryError as inner:
            raise RuntimeError("step failed") from inner
    except RuntimeError as outer:
        assert fr.is_out_of_memory(outer)
    assert not fr.is_out_of_memory(ValueError()) and not fr.is_out_of_memory(None)


def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[fr.FlightRecorder, list[str]]:
    made = fr.FlightRecorder(tmp_path, dump_signal=None)
    triggers: list[str] = []
    monkeypatch.setattr(made, "dump", triggers.append)
    return made, triggers


def test_the_hooks_dump_on_out_of_memory_only_and_chain_to_the_previous_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made, triggers = recorder(tmp_path, monkeypatch)
    seen: list[object] = []
    made._previous_hook = lambda kind, error, tb: seen.append(error)
    made._previous_thread_hook = lambda args: seen.append(args.exc_value)
    made.on_exception(ValueError, ValueError("no"), None)
    made.on_exception(MemoryError, MemoryError("full"), None)
    worker = threading.Thread(name="loader")
    made.on_thread_exception(SimpleNamespace(exc_type=MemoryError, exc_value=MemoryError("x"), thread=worker))
    assert triggers == ["out of memory: MemoryError: full", "out of memory in thread loader: MemoryError: x"]
    assert len(seen) == 3  # every error still reaches the hook that was there before


def test_after_the_cuda_observer_dumped_the_excepthook_does_not_dump_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made, triggers = recorder(tmp_path, monkeypatch)
    made._previous_hook = lambda kind, error, tb: None
    made.on_cuda_oom(0, 1 << 30, 5, 7)
    made.on_cuda_oom(0, 1 << 30, 5, 7)
    made.on_exception(torch.OutOfMemoryError, torch.OutOfMemoryError("cuda"), None)
    assert triggers == ["out of memory: cuda:0 could not allocate 1073741824 bytes (5 allocated, 7 free)"]


def test_dump_signal_names_and_numbers() -> None:
    assert parse_dump_signal("SIGUSR2") is parse_dump_signal("usr2") is parse_dump_signal(int(signal.SIGUSR2))
    with pytest.raises(ConfigError, match="--dump-signal"):
        parse_dump_signal("SIGNOPE")
