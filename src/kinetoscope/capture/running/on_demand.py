"""On-demand capture: a per-user local Unix socket on which ``kinetoscope trigger`` asks for the next N steps.

Each listening process binds ``<runtime dir>/<pid>.sock``. The runtime directory is
``$XDG_RUNTIME_DIR/kinetoscope`` when that is set, else ``<temp dir>/kinetoscope-<uid>``;
it must be a private folder of this user (`format.private_dirs`: no link, mode 0700, no parent
others can write), or nothing listens. Nothing listens on a network port. On Linux the peer's uid is also checked
(``SO_PEERCRED``): only the same user can trigger.

Protocol: one JSON line from the client (``{"steps": N, "modes": [...], "with_stack": b,
"record_shapes": b, "out": "dir"}``, all but steps optional), answered by one JSON line
``{"state": "accepted", ...}`` (or ``"error"``), then, once the capture has ended, one
``{"state": "done", "sessions": [...]}`` (or ``"error"``). The listener is a daemon thread;
the capture itself starts at the program's next step boundary.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
import struct
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope._errors import ConfigError, SessionError
from kinetoscope._processes import process_alive
from kinetoscope.capture.running.run_settings import parse_mode_names
from kinetoscope.format.private_dirs import UnsafeDirectoryError, private_dir, user_runtime_root

if TYPE_CHECKING:
    from kinetoscope.capture.running.autorun import Controller

SOCKET_SUFFIX = ".sock"
MAX_REQUEST_BYTES = 64 * 1024
REQUEST_READ_TIMEOUT_S = 10.0
_PEERCRED_FORMAT = "3i"


def runtime_dir(create: bool = True) -> Path:
    """The private per-user directory holding the sockets (`format.private_dirs`); raise
    ``SessionError`` if it is not private. Without `create`, a missing one is returned unchecked."""
    path = user_runtime_root()
    if not create and not os.path.lexists(path):
        return path
    try:
        return private_dir(path)
    except UnsafeDirectoryError as exc:
        raise SessionError(f"{exc}; or set XDG_RUNTIME_DIR to a private directory") from exc


def socket_path(pid: int) -> Path:
    return runtime_dir(create=False) / f"{pid}{SOCKET_SUFFIX}"


def listen(controller: Controller) -> Path:
    """Bind this process's socket and serve it from a daemon thread; return its path."""
    path = runtime_dir() / f"{os.getpid()}{SOCKET_SUFFIX}"
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a socket left by an earlier process with this pid
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o600)  # the 0700 directory already keeps others out; no umask change, which is process-wide
    server.listen(16)
    owner = os.getpid()
    atexit.register(_remove_socket, path, owner)
    threading.Thread(target=_serve, args=(server, controller), name="kinetoscope-on-demand", daemon=True).start()
    return path


def _remove_socket(path: Path, owner: int) -> None:
    if os.getpid() == owner:  # not from a forked child
        with contextlib.suppress(OSError):
            path.unlink()


def _serve(server: socket.socket, controller: Controller) -> None:
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=_handle, args=(conn, controller), name="kinetoscope-trigger", daemon=True).start()


def _handle(conn: socket.socket, controller: Controller) -> None:
    from kinetoscope.capture.running.autorun import CaptureRequest

    with conn:
        try:
            if not _same_user(conn):
                _send(conn, {"state": "error", "message": "only the user running this process can trigger it"})
                return
            request = CaptureRequest(**parse_request(_read_line(conn)))
        except (OSError, ValueError, ConfigError) as exc:
            with contextlib.suppress(OSError):
                _send(conn, {"state": "error", "message": f"bad request: {exc}"})
            return
        refusal = controller.ask(request)
        identity = _identity(controller.step)
        with contextlib.suppress(OSError):
            if refusal:
                _send(conn, {"state": "error", "message": refusal, **identity})
                return
            _send(conn, {"state": "accepted", **identity})
            request.done.wait()
            final = {"state": "error", "message": request.error} if request.error else {"state": "done"}
            _send(conn, {**final, **identity, "sessions": [str(p) for p in request.sessions]})


def _same_user(conn: socket.socket) -> bool:
    peercred = getattr(socket, "SO_PEERCRED", None)
    if peercred is None:
        return True  # no peer credentials here: the 0700 directory is the only guard
    raw = conn.getsockopt(socket.SOL_SOCKET, peercred, struct.calcsize(_PEERCRED_FORMAT))
    _pid, uid, _gid = struct.unpack(_PEERCRED_FORMAT, raw)
    return bool(uid == os.getuid())


def _identity(step: int) -> dict[str, Any]:
    return {"pid": os.getpid(), "rank": os.environ.get("RANK", ""), "step": step}


def parse_request(line: bytes) -> dict[str, Any]:
    """Check a client's request; the keyword arguments of a ``CaptureRequest``."""
    raw = json.loads(line)
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object")
    steps = raw.get("steps")
    if type(steps) is not int or steps < 1:
        raise ValueError(f"steps: expected a positive integer, got {steps!r}")
    request: dict[str, Any] = {"steps": steps}
    if raw.get("modes"):
        request["modes"] = parse_mode_names(",".join(map(str, raw["modes"])))
    for flag in ("with_stack", "record_shapes"):
        if raw.get(flag) is not None:
            request[flag] = bool(raw[flag])
    if raw.get("out"):
        request["out"] = Path(str(raw["out"]))
    return request


def _read_line(conn: socket.socket) -> bytes:
    conn.settimeout(REQUEST_READ_TIMEOUT_S)
    data = b""
    while b"\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
        if len(data) > MAX_REQUEST_BYTES:
            raise ValueError(f"request longer than {MAX_REQUEST_BYTES} bytes")
    conn.settimeout(None)
    return data.split(b"\n", 1)[0]


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def listening_pids() -> dict[int, Path]:
    """pid -> socket of every process of this user listening on this host; stale sockets are removed."""
    directory = runtime_dir(create=False)
    found: dict[int, Path] = {}
    for path in sorted(directory.glob(f"*{SOCKET_SUFFIX}")) if directory.is_dir() else []:
        pid = int(path.stem) if path.stem.isdigit() else -1
        if pid > 0 and process_alive(pid):
            found[pid] = path
        elif pid > 0:
            with contextlib.suppress(OSError):
                path.unlink()
    return found


