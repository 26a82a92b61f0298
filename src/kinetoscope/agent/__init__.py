"""The agent surface: ``kinetoscope mcp``, a Model Context Protocol server over the same
deterministic code as the commands (``answers`` computes, ``mcp_server`` speaks MCP)."""
