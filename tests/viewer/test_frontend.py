"""The committed front-end bundle is built from the current sources, and the front end's unit tests pass."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import pytest

from ..conftest import REPO

WEB = REPO / "web"
STATIC = REPO / "src" / "kinetoscope" / "viewer" / "static"


def source_hash() -> str:
    """Same digest as web/build.mjs's sourceHash()."""
    sources = (p.relative_to(WEB).as_posix() for p in (WEB / "src").rglob("*") if p.is_file())
    files = ["build.mjs", "package.json", "tsconfig.json", *sources]
    digest = hashlib.sha256()
    for name in sorted(files):
        text = (WEB / name).read_text(encoding="utf-8").replace("\r\n", "\n")
        digest.update(f"{name}\0{text}\0".encode())
    return digest.hexdigest()


def test_committed_bundle_matches_the_sources() -> None:
    info = json.loads((STATIC / "build-info.json").read_text())
    assert info["source_sha256"] == source_hash(), "the viewer bundle is stale: run `cd web && npm run build`"
    for name in ("index.html", "app.js", "style.css"):
        assert (STATIC / name).is_file()


def test_bundle_loads_nothing_from_outside() -> None:
    bundle = (STATIC / "app.js").read_text() + (STATIC / "index.html").read_text() + (STATIC / "style.css").read_text()
    for marker in ("http://", "https://", "//cdn", "googleapis", "unpkg", "jsdelivr"):
        assert marker not in bundle.replace("http://www.w3.org", ""), marker
    assert "innerHTML" not in bundle and "insertAdjacentHTML" not in bundle


@pytest.mark.skipif(not (WEB / "node_modules").is_dir() or shutil.which("node") is None,
                    reason="front-end dev dependencies not installed (cd web && npm ci)")
def test_front_end_type_checks_and_unit_tests_pass() -> None:
    subprocess.run(["npx", "tsc", "--noEmit", "-p", "."], cwd=WEB, check=True, capture_output=True, timeout=180)
    done = subprocess.run(["npm", "test"], check=False, cwd=WEB, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
