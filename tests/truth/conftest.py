"""Prints the truth harness's table after the tests."""

from __future__ import annotations

import pytest

from tests.truth.harness import RESULTS, table


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not RESULTS:
        return
    terminalreporter.section("labelled truth cases")
    for line in table(RESULTS):
        terminalreporter.write_line(line)
