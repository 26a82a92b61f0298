"""Op and kernel categories: the model's built-in patterns (``model.category_rules.RULES``) and users' own.

A user file (JSON or TOML, a table of category -> list of patterns) passed by ``kinetoscope
summary --categories FILE`` (or the ``KINETOSCOPE_CATEGORIES`` environment variable, read by the
command line) is tried before the built-in rules (``user_options``), so it can add categories and
move names between them::

    {"attention": ["my_fused_attn"], "GEMM": ["^cutlass"]}
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables.column_arrays import encoded
from kinetoscope.analysis.settings.settings_files import read_table
from kinetoscope.analysis.settings.user_options import given
from kinetoscope.model.category_rules import CATEGORIES, COMMUNICATION, MEMORY, OTHER, RULES, Rules

__all__ = ["CATEGORIES", "COMMUNICATION", "MEMORY", "OTHER", "RULES", "Rules", "categorise", "labels",
           "rules", "user_rules"]  # fmt: skip


def user_rules(path: Path) -> Rules:
    """The rules of the user file at ``path``. A file that cannot be read or parsed, or holds
    anything but category -> list of valid patterns, is an error naming the file and the entry."""
    data = read_table(path, "categories")  # category -> list of name patterns
    for name, patterns in data.items():
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            raise ValueError(f"{path}: category {name!r}: expected a list of name patterns (strings)")
        for pattern in patterns:
            _check_pattern(path, name, pattern)
    return tuple((str(name), tuple(patterns)) for name, patterns in data.items())


def _check_pattern(path: Path, category: str, pattern: str) -> None:
    """The pattern compiles as ``categorise`` runs it (Arrow's RE2: no look-around, no back-references)."""
    try:
        pc.match_substring_regex(pa.array([""]), pattern)
    except pa.ArrowInvalid as exc:
        raise ValueError(
            f"{path}: category {category!r}: pattern {pattern!r} is not a valid expression: {exc}"
        ) from None


def rules() -> Rules:
    """The user's rules of the run under way (``user_options``) first, then the built-in ones."""
    return (*given().categories, *RULES)


def labels(ordered: Rules) -> list[str]:
    """The category names of ``ordered`` (each once, first mention first), then ``other``."""
    return list(dict.fromkeys([*(name for name, _ in ordered), OTHER]))


def categorise(names: pa.Array | pa.ChunkedArray, ordered: Rules) -> np.ndarray:
    """The category of each name as an index into ``labels(ordered)``, by the first matching rule
    (each distinct name is matched once)."""
    indices, distinct = encoded(names)
    names_of = labels(ordered)
    found = np.full(len(distinct), names_of.index(OTHER), dtype=np.int64)
    undecided = np.ones(len(distinct), dtype=bool)
    for category, patterns in ordered:
        if not undecided.any():
            break
        pattern = "(?i)" + "|".join(f"(?:{p})" for p in patterns)
        hit = np.asarray(
            pc.fill_null(pc.match_substring_regex(distinct, pattern), False).to_numpy(zero_copy_only=False)
        )
        found[hit & undecided] = names_of.index(category)
        undecided &= ~hit
    other = indices < 0
    return np.where(
        other, names_of.index(OTHER), found[np.maximum(indices, 0)] if len(found) else names_of.index(OTHER)
    )
