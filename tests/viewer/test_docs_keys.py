"""docs/viewer.md names every key the viewer answers (the command palette's keys and the help list's), and
the tests its defect table names exist."""

from __future__ import annotations

import re

from ..conftest import REPO

MAIN_TS = REPO / "web" / "src" / "main.ts"
DOCS = REPO / "docs" / "viewer.md"


def _help_keys(source: str) -> list[str]:
    """The key tokens of the help list (`KEYS`): single keys and chords such as `Ctrl+K`, not mouse words."""
    block = source.split("export const KEYS", 1)[1].split("];", 1)[0]
    firsts = re.findall(r'\["([^"]+)",', block)
    tokens = [t for first in firsts for t in re.split(r"[ ,]+", first) if t]
    chord = re.compile(r"(Ctrl\+|Shift\+)*(Enter|Esc|Tab|Space|K|P)")
    return [t for t in tokens if (len(t) == 1 and not t.islower()) or chord.fullmatch(t)]


def test_every_palette_and_help_key_is_in_the_docs() -> None:
    source, docs = MAIN_TS.read_text(encoding="utf-8"), DOCS.read_text(encoding="utf-8")
    palette = re.findall(r'keys: "([^"]+)"', source)
    assert len(palette) >= 8  # M, F, . , ] [ / ?
    help_keys = _help_keys(source)
    assert {"W", "S", "A", "D", "Ctrl+K", "Esc"} <= set(help_keys)
    missing = [k for k in [*palette, *help_keys] if f"`{k}`" not in docs]
    assert missing == [], f"docs/viewer.md does not name these keys: {missing}"


def test_every_test_of_the_defect_table_exists() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    table = docs.split("## Defects and their tests", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\| .+? \| `([a-z_]+\.py)::(test_\w+)`", table, flags=re.MULTILINE)
    assert len(named) >= 35
    for short, test in named:
        source = (REPO / "tests" / "viewer" / f"test_browser_{short}").read_text(encoding="utf-8")
        assert f"def {test}(" in source, f"{short}::{test}"
