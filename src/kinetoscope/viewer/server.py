"""Runs the viewer: picks the address, makes the access token, prints the URL, opens a browser."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
import webbrowser
from collections.abc import Callable
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

from kinetoscope._errors import ConfigError
from kinetoscope.viewer.app import create_app
from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.pairing import ComparePair

DEFAULT_PORT = 8700


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """Where and how to serve.

    Attributes:
        host: address to bind; on a loopback address only local Host names are answered (no DNS
            rebinding). Every request needs the access token of this launch, wherever it binds.
        port: port to bind; 0 tries DEFAULT_PORT and then any free port.
        open_browser: open the URL in the default browser once the server listens.
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


def viewer_url(host: str, port: int, token: str | None) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    return f"http://{host_port(shown, port)}/" + (f"?token={token}" if token else "")


def loopback_hosts(host: str, port: int) -> frozenset[str]:
    """The Host headers a loopback server answers: the bound address and the usual local names."""
    return frozenset(host_port(name, port) for name in (host, "127.0.0.1", "localhost", "::1"))


def serve(index: ViewerIndex, options: ServeOptions, *, on_ready: Callable[[str], None] = print,
          pair: ComparePair | None = None) -> None:
    """Serves until interrupted (`pair`: compare mode, `index` being its BASE)."""
    serve_app(lambda token, hosts: create_app(index, token=token, allowed_hosts=hosts, pair=pair), options,
              on_ready=on_ready, page="compare" if pair else None)


AppFactory = Callable[[str, frozenset[str] | None], ASGIApp]


def serve_app(make_app: AppFactory, options: ServeOptions, *, on_ready: Callable[[str], None] = print,
              page: str | None = None) -> None:
    """Serves `make_app(token, allowed_hosts)` until interrupted; `page` opens that page of the URL."""
    sock = bind(options.host, options.port)
    port = sock.getsockname()[1]
    token = secrets.token_urlsafe(24)  # even on loopback: other users and other sites' pages reach it too
    hosts = loopback_hosts(options.host, port) if is_loopback(options.host) else None
    app = make_app(token, hosts)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    url = viewer_url(options.host, port, token) + (f"&page={page}" if page else "")

    def announce() -> None:
        while not server.started:
            threading.Event().wait(0.02)
        on_ready(url)
        if options.open_browser:
            webbrowser.open(url)

    threading.Thread(target=announce, daemon=True).start()
    server.run(sockets=[sock])
