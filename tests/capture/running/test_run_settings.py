"""The pieces of ``kinetoscope run`` that need no child process: variables, import hooks, the private socket dir."""

from __future__ import annotations

import importlib
import os
import socket
import sys
import types
from pathlib import Path

import pytest

from kinetoscope import ConfigError, SessionError
from kinetoscope.capture.running import import_hooks, on_demand
from kinetoscope.capture.running import run_settings as rs


def test_steps_become_a_schedule_with_one_warmup_step() -> None:
    assert rs.steps_schedule("10-15") == rs.Schedule(skip_first=9, wait=0, warmup=1, active=6, repeat=1)
    assert rs.steps_schedule("1") == rs.Schedule(skip_first=1, wait=0, warmup=0, active=1, repeat=1)
    schedule = rs.steps_schedule("10-15")
    assert (schedule.first_step, schedule.first_recorded_step, schedule.end_step) == (9, 10, 16)


@pytest.mark.parametrize("steps", ["0-3", "5-2", "a-b", "3-"])
def test_bad_steps_name_the_variable(steps: str) -> None:
    with pytest.raises(ConfigError, match="KINETOSCOPE_STEPS"):
        rs.steps_schedule(steps)


def test_variables_round_trip_and_errors_name_the_variable(tmp_path: Path) -> None:
    settings = rs.RunSettings(schedule=rs.Schedule(skip_first=2, wait=1, warmup=1, active=2, repeat=0),
                              modes=("RUNTIME", "CPU_UTIL"), out=tmp_path, with_stack=True, memory=True,
                              step_fn="train:step")
    assert rs.from_env(settings.to_env()) == settings
    assert rs.from_env({rs.FLAG_ENV["on_demand"]: "1"}).schedule is None  # on demand only
    assert rs.from_env({}).schedule == rs.steps_schedule(rs.DEFAULT_STEPS)
    with pytest.raises(ConfigError, match="KINETOSCOPE_MODES"):
        rs.from_env({rs.MODES_ENV: "DEVICE,GPU"})
    with pytest.raises(ConfigError, match="KINETOSCOPE_WAIT"):
        rs.from_env({rs.SCHEDULE_ENV["wait"]: "-1"})
    with pytest.raises(ConfigError, match="exclusive"):
        rs.from_env({rs.STEPS_ENV: "3-4", rs.SCHEDULE_ENV["active"]: "2"})
    with pytest.raises(ConfigError, match="KINETOSCOPE_WITH_STACK"):
        rs.from_env({rs.FLAG_ENV["with_stack"]: "maybe"})


def test_when_imported_runs_after_the_import_and_leaves_no_finder(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "kt_hooked_module.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[int] = []
    import_hooks.when_imported("kt_hooked_module", lambda module: seen.append(module.VALUE + 1))
    assert not seen
    import kt_hooked_module  # type: ignore[import-not-found]

    assert seen == [42] and kt_hooked_module.VALUE == 41
    assert "exec_module" not in vars(kt_hooked_module.__loader__)
    assert not any(isinstance(f, import_hooks.PostImportFinder) for f in sys.meta_path)
    import_hooks.when_imported("kt_hooked_module", lambda module: seen.append(0))  # already imported: at once
    assert seen == [42, 0]
    del sys.modules["kt_hooked_module"]


def test_a_failed_import_keeps_the_callback_for_a_later_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[str] = []
    import_hooks.when_imported("kt_later_module", lambda module: seen.append(module.__name__))
    with pytest.raises(ImportError):
        import kt_later_module  # type: ignore[import-not-found]
    (tmp_path / "kt_later_module.py").write_text("")
    importlib.invalidate_caches()
    import kt_later_module  # noqa: F401

    assert seen == ["kt_later_module"]
    del sys.modules["kt_later_module"]


def test_runtime_dir_must_be_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    made = on_demand.runtime_dir()
    assert made == tmp_path / "kinetoscope" and (made.stat().st_mode & 0o777) == 0o700
    made.chmod(0o755)  # others could read, not write: made private again
    assert on_demand.runtime_dir().stat().st_mode & 0o777 == 0o700
    made.chmod(0o777)
    with pytest.raises(SessionError, match="not a private folder"):
        on_demand.runtime_dir()
    made.rmdir()
    os.symlink(tmp_path, made)
    with pytest.raises(SessionError, match="not a private folder"):
        on_demand.runtime_dir()


def test_requests_are_checked() -> None:
    assert on_demand.parse_request(b'{"steps": 3, "modes": ["runtime"], "with_stack": true}') == {
        "steps": 3, "modes": ("RUNTIME",), "with_stack": True}
    for bad in (b'{"steps": 0}', b'{"steps": "3"}', b"[3]", b'{"steps": 2, "modes": ["GPU"]}'):
        with pytest.raises((ValueError, ConfigError)):
            on_demand.parse_request(bad)


def test_listener_answers_the_same_user_and_cleans_stale_sockets(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from kinetoscope.capture.running.autorun import Controller

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    controller = Controller(rs.RunSettings(schedule=None, on_demand=True))
    controller.capture = types.SimpleNamespace()  # type: ignore[assignment]  # busy: the request is refused
    path = on_demand.listen(controller)
    assert path.stat().st_mode & 0o777 == 0o600
    stale = path.with_name("999999999.sock")
    stale.write_text("")
    assert on_demand.listening_pids() == {os.getpid(): path} and not stale.exists()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.connect(str(path))
        client.sendall(b'{"steps": 2}\n')
        reply = client.makefile().readline()
    assert '"state": "error"' in reply and "already capturing" in reply


def test_trigger_removes_a_socket_nobody_listens_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from kinetoscope.cli import main

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    path = on_demand.runtime_dir() / f"{os.getpid()}.sock"  # a live pid, but its listener has gone
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))
    assert main(["trigger", str(os.getpid()), "--steps", "1"]) == 2
    assert "stale" in capsys.readouterr().err and not path.exists()


def test_only_the_first_optimizer_that_steps_counts() -> None:
    import torch

    from kinetoscope.capture.running.step_sources import count_optimizer_steps

    boundaries: list[int] = []
    first, second = (torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.0) for _ in range(2))
    handle = count_optimizer_steps(lambda: boundaries.append(1))
    try:
        first.step()
        second.step()  # a second optimizer (a GAN's discriminator, say) in the same iteration
        first.step()
    finally:
        handle.remove()
    assert len(boundaries) == 2


def test_a_step_method_is_wrapped_in_its_class() -> None:
    from kinetoscope.capture.running.step_sources import wrap_function

    class Trainer:
        def step(self, value: int) -> int:
            return value + 1

    module = types.ModuleType("kt_trainer")
    module.Trainer = Trainer  # type: ignore[attr-defined]
    boundaries: list[int] = []
    wrap_function(module, "Trainer.step", lambda: boundaries.append(1))
    assert Trainer().step(1) == 2 and Trainer().step(2) == 3 and len(boundaries) == 2
    assert Trainer.step.__name__ == "step"
