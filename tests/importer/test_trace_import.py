"""Import of a trace that expands past its bound: refused with a clear error, nothing left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope._errors import FormatError
from kinetoscope.format import trace_source
from kinetoscope.importer import trace_import as imp
from tests.format.test_trace_source import write_bomb


@pytest.mark.parametrize("write_pb", [True, False])
def test_a_gzip_bomb_is_refused_naming_the_setting(tmp_path: Path, write_pb: bool) -> None:
    # GIVEN a 70 KB trace.json.gz that expands to 72 MB
    bomb = write_bomb(tmp_path / "bomb.json.gz", 72 << 20)
    out = tmp_path / "out"
    # WHEN it is imported THEN the import is refused, naming the setting that raises the bound
    with pytest.raises(FormatError, match=trace_source.MAX_RATIO_ENV):
        imp.import_trace(bomb, imp.ImportOptions(out_dir=out, write_pb=write_pb))
    # AND no session nor staging folder is left
    assert list(out.iterdir()) == []
