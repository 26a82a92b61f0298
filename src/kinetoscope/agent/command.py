"""Serve the agent tools over the Model Context Protocol on stdio.

`kinetoscope mcp` is started by an MCP client (an agent or an editor), which talks to it over
standard input and output. Its tools open a profile (ingesting it when needed), answer the
one-screen summary or one section, the findings, read-only SQL with a row limit, the events of
a time window or a track, an event's dependency chain, and the diff of two runs; every figure
comes from the code the commands run. Needs the `agent` extra (`pip install kinetoscope[agent]`).
See docs/agent.md for a client configuration.
"""

from __future__ import annotations

import argparse

from kinetoscope._errors import CommandError


class McpCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        pass

    def run(self, args: argparse.Namespace) -> int:
        try:
            import mcp  # noqa: F401 - checked here, for the message below

            from kinetoscope.agent.mcp_server import serve
        except ImportError as exc:
            needs = "kinetoscope mcp needs the MCP SDK: pip install 'kinetoscope[agent]'"
            raise CommandError(needs, exit_code=2) from exc
        return serve()


command = McpCommand()
