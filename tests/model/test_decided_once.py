"""What an event's name means is spelled in ``model/`` alone (``format/`` may name the raw strings
it parses): a step marker, a synchronising call, a host-collective prefix or the allocator's event
name written as a rule anywhere else (a string that is the name, or a pattern that starts with it)
is a second rule that can drift from the model's. Prose (docstrings, messages) may name them."""

from __future__ import annotations

import ast

from kinetoscope.model import blocking, compilation, data_loading, flows, kinds

from ..conftest import REPO

SRC = REPO / "src" / "kinetoscope"
MODEL_ONLY = (kinds.STEP_PREFIX, kinds.MEMORY_EVENT, *blocking.SYNC_CALLS, *blocking.QUERY_CALLS,
              *kinds.COLLECTIVE_PREFIXES, *flows.KINDS, data_loading.LOADER_PREFIX)  # fmt: skip
ALLOWED = ("model", "format", "_proto")
# What marks compilation (``model.compilation``): a string outside the model holding one of these
# words, prose aside, is a second set of compilation patterns (``verify`` and the findings once had two).
COMPILATION_WORDS = ("dynamo_timed", "convert_frame", "compile_fx", compilation.FRAME_COMPILE,
                     "inductor_compile", compilation.COMPILED_REGION)  # fmt: skip


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string nodes that are docstrings."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            found.add(id(first.value))
    return found


def second_rules(source: str) -> list[tuple[int, str]]:
    """(line, name) of each string in ``source`` that spells a name the model decides, as a rule."""
    tree = ast.parse(source)
    prose = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
            text = node.value.lstrip("^(")
            if not any(c.isspace() for c in text):
                found += [(node.lineno, word) for word in MODEL_ONLY if text.startswith(word)]
            found += [(node.lineno, word) for word in COMPILATION_WORDS if _as_rule(node.value, word)]
    return found


def _as_rule(text: str, word: str) -> bool:
    """Whether ``text`` holds ``word`` as a name or a pattern does (not in a sentence: a message)."""
    return word in text and (text.count(" ") <= 1 or "\\" in text or "|" in text)


def test_names_the_model_decides_are_spelled_only_there() -> None:
    problems = []
    for path in SRC.rglob("*.py"):
        if not any(part in ALLOWED for part in path.relative_to(SRC).parts[:-1]):
            problems += [f"{path.relative_to(SRC)}:{line}: {word!r}" for line, word in second_rules(path.read_text())]
    assert problems == []


def test_the_guard_sees_a_rule_and_lets_prose_be() -> None:
    rule = 'STEP = "ProfilerStep#"\nSYNC = r"^cudaStreamSynchronize$"\n'
    prose = '"""Steps are ProfilerStep#N."""\nsay = "no ProfilerStep#N in the trace"\n'
    assert second_rules(rule) == [(1, "ProfilerStep#"), (2, "cudaStreamSynchronize")]
    assert second_rules(prose) == []


def test_the_guard_sees_a_second_set_of_compilation_patterns() -> None:
    rule = 'INNER = "_compile.compile_inner (dynamo_timed)"\nRE = r"\\(dynamo_timed\\)|torch/_inductor/compile_fx"\n'
    prose = 'say = "the frames of dynamo_timed ranges cover most of the window here"\n'
    assert second_rules(rule) == [(1, "dynamo_timed"), (2, "dynamo_timed"), (2, "compile_fx")]
    assert second_rules(prose) == []
