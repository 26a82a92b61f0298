"""Who may use one viewer launch: one-time codes in links, exchanged once for a page's session.

A link (the URL printed in the terminal, or the launch page the browser is pointed at) carries
a one-time code (``/?code=...``) that works once and for `CODE_TTL_S` seconds. The page
exchanges it (``POST /api/session``) for a session credential, which it keeps in its own
origin's storage (scheme, host and port: no page served on another port can read it) and sends
as the ``X-Kinetoscope-Session`` header with every API request. No cookie is ever set, so
nothing of this launch goes to another server on another port of the same host; the code and
the credential never appear in any process's arguments (the browser is given the path of a
private launch page, `launch_page`). A failed exchange has a fresh link printed in the
terminal of `kinetoscope view` (at most one every `REPRINT_INTERVAL_S`): only the user who
started the viewer sees it.
"""

from __future__ import annotations

import hashlib
import html
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path

from kinetoscope.format.private_dirs import private_dir, user_runtime_root

SESSION_HEADER = "x-kinetoscope-session"
CODE_TTL_S = 300.0
MAX_CODES = 32  # codes waiting to be used; the oldest goes first
MAX_SESSIONS = 256
REPRINT_INTERVAL_S = 2.0


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode(errors="surrogatepass")).digest()


class Access:
    """The codes and sessions of one launch. `base_url`: the viewer's address, for printed links;
    `announce`: prints a line in the user's terminal."""

    def __init__(self, base_url: str = "", announce: Callable[[str], None] = print) -> None:
        self.base_url = base_url
        self.announce = announce
        self._lock = threading.Lock()
        self._codes: dict[bytes, float] = {}  # digest -> expiry (monotonic s)
        self._on_use: dict[bytes, Callable[[], None]] = {}
        self._sessions: dict[bytes, None] = {}  # digests, oldest first
        self._last_reprint_s = -REPRINT_INTERVAL_S

    def new_code(self, on_use: Callable[[], None] | None = None) -> str:
        """A fresh one-time code; `on_use` runs once it is used or dropped."""
        code = secrets.token_urlsafe(24)
        with self._lock:
            self._drop_expired(time.monotonic())
            while len(self._codes) >= MAX_CODES:
                self._forget(next(iter(self._codes)))
            self._codes[_digest(code)] = time.monotonic() + CODE_TTL_S
            if on_use is not None:
                self._on_use[_digest(code)] = on_use
        return code

    def link(self, query: str = "", on_use: Callable[[], None] | None = None) -> str:
        """The viewer's URL with a fresh code, then ``query`` (a deep link's: ``page=memory``,
        ``page=timeline&start=...``)."""
        return f"{self.base_url}?code={self.new_code(on_use)}" + (f"&{query}" if query else "")

    def redeem(self, code: str) -> str | None:
        """A new session credential for `code` if it is valid (it is then used up), else None."""
        key = _digest(code)
        with self._lock:
            self._drop_expired(time.monotonic())
            if not code or key not in self._codes:
                return None
            self._forget(key)
            session = secrets.token_urlsafe(32)
            self._sessions[_digest(session)] = None
            while len(self._sessions) > MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
        return session

    def allows(self, session: str | None) -> bool:
        if not session:
            return False
        with self._lock:
            return _digest(session) in self._sessions

    def reprint(self) -> bool:
        """Prints a fresh link for the user (unless one was printed within REPRINT_INTERVAL_S)."""
        now = time.monotonic()
        with self._lock:
            if now - self._last_reprint_s < REPRINT_INTERVAL_S or not self.base_url:
                return False
            self._last_reprint_s = now
        self.announce(f"kinetoscope viewer: a new link (works once): {self.link()}")
        return True

    def close(self) -> None:
        """Forgets every code (running their `on_use`) and session."""
        with self._lock:
            for key in list(self._codes):
                self._forget(key)
            self._sessions.clear()

    def _drop_expired(self, now: float) -> None:
        for key in [k for k, until in self._codes.items() if until < now]:
            self._forget(key)

    def _forget(self, key: bytes) -> None:
        self._codes.pop(key, None)
        on_use = self._on_use.pop(key, None)
        if on_use is not None:
            on_use()


def launch_page(url: str) -> Path:
    """A page in this user's private runtime folder that sends the browser to `url`: what the
    browser is given instead of `url`, so that the code is in no process's arguments."""
    folder = private_dir(user_runtime_root())
    path = folder / f"view-{os.getpid()}-{secrets.token_hex(6)}.html"
    shown = html.escape(url, quote=True)
    text = (f'<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={shown}">'
            f'<title>kinetoscope viewer</title></head><body><p><a href="{shown}">Open the kinetoscope viewer</a>'
            "</p></body></html>\n")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
