"""Sign-in of one viewer launch: one-time codes in links, a session header bound to this server, no cookie."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving import access as access_module
from kinetoscope.viewer.serving.access import Access, launch_page

from ..helpers import exchange, running_server
from ..test_api import fetch


@pytest.fixture
def launch(multirank: ViewerIndex) -> Iterator[tuple[str, Access, list[str]]]:
    printed: list[str] = []
    access = Access("http://127.0.0.1:1/", announce=printed.append)
    with running_server(multirank, access=access) as url:
        yield url, access, printed


def test_a_code_works_once_for_a_session_the_api_then_needs(launch: tuple[str, Access, list[str]]) -> None:
    url, access, _ = launch
    assert fetch(url + "/")[0] == 200 and fetch(url + "/static/app.js")[0] == 200  # the package's own files
    assert fetch(url + "/api/meta")[0] == 401
    code = access.new_code()
    status, answer = exchange(url, code)
    assert status == 200
    header = {"X-Kinetoscope-Session": str(answer["session"])}
    assert fetch(url + "/api/meta", headers=header)[0] == 200
    assert fetch(url + "/api/sql.csv?q=SELECT%201", headers=header)[0] == 200
    assert exchange(url, code)[0] == 401  # used up
    assert fetch(url + "/api/meta", headers={"X-Kinetoscope-Session": "guessed"})[0] == 401


def test_no_cookie_is_ever_set(launch: tuple[str, Access, list[str]]) -> None:
    """Browsers send a host's cookies to all its ports: nothing of this launch may be in one."""
    url, access, _ = launch
    _, answer = exchange(url, access.new_code())
    header = {"X-Kinetoscope-Session": str(answer["session"])}
    for path in ("/", f"/?code={access.new_code()}", "/static/app.js", "/api/meta", "/api/progress"):
        assert "set-cookie" not in fetch(url + path, headers=header)[2], path


def test_a_session_of_a_server_on_another_port_is_refused(
        multirank: ViewerIndex, launch: tuple[str, Access, list[str]]) -> None:
    url, _, _ = launch
    other = Access()
    with running_server(multirank, access=other) as other_url:
        assert other_url != url
        status, answer = exchange(other_url, other.new_code())
        assert status == 200
        theirs = {"X-Kinetoscope-Session": str(answer["session"])}
        assert fetch(other_url + "/api/meta", headers=theirs)[0] == 200
        assert fetch(url + "/api/meta", headers=theirs)[0] == 401
        assert exchange(url, other.new_code())[0] == 401  # nor a code of theirs


def test_the_old_token_url_is_refused(launch: tuple[str, Access, list[str]]) -> None:
    url, access, _ = launch
    status, answer = exchange(url, access.new_code())
    header = {"X-Kinetoscope-Session": str(answer["session"])}
    for path in ("/?token=launch-token-123456789012", "/api/meta?token=x"):
        status, body, _ = fetch(url + path, headers=header)
        assert status == 401 and b"older kinetoscope" in body, path
    cookie = {"Cookie": f"kinetoscope_token_{url.rsplit(':', 1)[1]}=launch-token-123456789012"}
    assert fetch(url + "/api/meta", headers=cookie)[0] == 401


def test_a_failed_exchange_prints_a_new_link_for_the_user(launch: tuple[str, Access, list[str]]) -> None:
    url, _, printed = launch
    status, answer = exchange(url, "used-or-guessed")
    assert status == 401 and "terminal" in str(answer["error"]) and answer["login"] is True
    assert len(printed) == 1 and "?code=" in printed[0]
    assert exchange(url, "again")[0] == 401 and len(printed) == 1  # at most one every 2 s
    new_code = printed[0].rsplit("?code=", 1)[1]
    assert exchange(url, new_code)[0] == 200


def test_a_code_expires(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(access_module.time, "monotonic", lambda: now[0])
    used: list[str] = []
    access = Access()
    late = access.new_code(on_use=lambda: used.append("late"))
    fresh = access.new_code()
    now[0] += access_module.CODE_TTL_S + 1
    assert access.redeem(late) is None and used == ["late"]  # expired: its launch page goes too
    assert access.redeem(fresh) is None
    assert access.redeem(access.new_code()) is not None


def test_codes_waiting_are_bounded() -> None:
    access = Access()
    first = access.new_code()
    for _ in range(access_module.MAX_CODES):
        access.new_code()
    assert access.redeem(first) is None


def test_the_launch_page_is_private_and_holds_the_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    page = launch_page("http://127.0.0.1:8700/?code=abc&page=compare")
    assert page.parent == tmp_path / "kinetoscope" and page.parent.stat().st_mode & 0o777 == 0o700
    assert page.stat().st_mode & 0o777 == 0o600
    assert 'content="0;url=http://127.0.0.1:8700/?code=abc&amp;page=compare"' in page.read_text()
