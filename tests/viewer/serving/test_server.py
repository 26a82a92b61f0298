"""Serving: an explicit --port that another process holds is said in one line, not a traceback."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kinetoscope import ConfigError
from kinetoscope.cli import main
from kinetoscope.viewer.serving.server import bind


@pytest.fixture
def taken_port() -> socket.socket:
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    return holder


def test_a_taken_port_is_a_config_error(taken_port: socket.socket) -> None:
    port = taken_port.getsockname()[1]
    with taken_port, pytest.raises(ConfigError, match=f"--port {port}: cannot listen on 127.0.0.1:{port}"):
        bind("127.0.0.1", port).close()


def test_view_on_a_taken_port_says_so(taken_port: socket.socket, multirank_dir: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    port = taken_port.getsockname()[1]
    with taken_port:
        code = main(["view", str(multirank_dir), "--port", str(port), "--no-browser", "--host", "127.0.0.1"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--port {port}: cannot listen" in err and "Traceback" not in err
