"""Runs the viewer: picks the address, prints a link, opens a browser on a launch page of its own.

Each link carries a one-time code (`viewer.serving.access`); the browser is given the path of a private
launch page that redirects to its link, never the link itself, so no code is in any process's
arguments (``/proc/*/cmdline`` is readable by every local user).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn
from starlette.types import ASGIApp

from kinetoscope._errors import ConfigError
from kinetoscope.format.files import discard
from kinetoscope.format.private_dirs import UnsafeDirectoryError
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving.access import Access, launch_page
from kinetoscope.viewer.serving.app import create_app
from kinetoscope.viewer.serving.pairing import ComparePair

DEFAULT_PORT = 8700


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """Where and how to serve.

    Attributes:
        host: address to bind; on a loopback address only local Host names are answered (no DNS
            rebinding). Every API request needs a session of this launch, wherever it binds.
        port: port to bind; 0 tries DEFAULT_PORT and then any free port.
        open_browser: open the viewer in the default browser once the server listens.
    """

    host: str = "127.0.0.1"
    port: int = 0
    open_browser: bool = True


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int, *, prefer_default: bool = True) -> socket.socket:
    """A listening socket on `port`; port 0 tries DEFAULT_PORT first when `prefer_default`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in ([port] if port or not prefer_default else [DEFAULT_PORT, 0]):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError as exc:
            sock.close()
            if candidate == port:
                raise ConfigError(f"--port {port}: cannot listen on {host_port(host, port)} ({exc.strerror or exc}); "
                                  "another process may be using it: choose another port, or --port 0 for any free one"
                                  ) from exc
            continue
        sock.listen(128)
        return sock
    raise OSError(f"no free port on {host}")


def host_port(host: str, port: int) -> str:
    """``host:port`` as it appears in a URL and a Host header (IPv6 in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def viewer_url(host: str, port: int) -> str:
    """The viewer's address (without a code)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{host_port(shown, port)}/"


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """The Host headers a loopback server answers: the bound address and the usual local names."""
    return frozenset(host_port(name, port) for name in (host, "127.0.0.1", "localhost", "::1"))


def serve(index: ViewerIndex, options: ServeOptions, *, on_ready: Callable[[str], None] = print,
          pair: ComparePair | None = None) -> None:
    """Serves until interrupted (`pair`: compare mode, `index` being its BASE)."""
    serve_app(lambda access, hosts: create_app(index, access=access, allowed_hosts=hosts, pair=pair), options,
              on_ready=on_ready, page="compare" if pair else None)


AppFactory = Callable[[Access, frozenset[str] | None], ASGIApp]


def serve_app(make_app: AppFactory, options: ServeOptions, *, on_ready: Callable[[str], None] = print,
              page: str | None = None, place: str = "") -> None:
    """Serves `make_app(access, allowed_hosts)` until interrupted; `on_ready` gets a link (with
    its own one-time code, opening `page`, or `place`: a deep link's query, `page=timeline&start=...`)
    once the server listens."""
    query = place or (f"page={page}" if page else "")
    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    # even on loopback: other local users and other sites' pages reach the port too
    access = Access(viewer_url(options.host, port), announce=lambda line: print(line, flush=True))
    hosts = loopback_hosts(options.host, port) if is_loopback(options.host) else None
    server = uvicorn.Server(uvicorn.Config(make_app(access, hosts), log_level="warning", access_log=False))

    def announce() -> None:
        while not server.started:
            threading.Event().wait(0.02)
        on_ready(access.link(query))
        if options.open_browser:
            open_browser(access, query)

    threading.Thread(target=announce, daemon=True).start()
    try:
        server.run(sockets=[sock])
    finally:
        access.close()  # the launch pages go


def open_browser(access: Access, query: str = "") -> bool:
    """Points the default browser at a private launch page holding a link of its own (removed
    once its code is used or has expired)."""
    holder: list[Path] = []

    def forget() -> None:
        for path in holder:
            discard(path)

    link = access.link(query, on_use=forget)
    try:
        holder.append(launch_page(link))
    except (OSError, UnsafeDirectoryError) as exc:
        print(f"kinetoscope viewer: not opening a browser ({exc}): open the link above", flush=True)
        return False
    return webbrowser.open(holder[0].as_uri())
