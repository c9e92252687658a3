"""A scripted MCP tool server (the official mcp package's MCPServer, stdio) for the gateway's
tests: ``export_status`` answers the same thing forever; ``job_progress`` moves on each call."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("scripted")
PROGRESS = {"n": 0}


@server.tool()
def export_status(job: int) -> str:
    """The export job's status."""
    return '{"state": "pending"}'


@server.tool()
def job_progress(job: int) -> str:
    """The job's progress: it moves on each time."""
    PROGRESS["n"] += 1
    return f'{{"done_pct": {PROGRESS["n"] * 10}}}'


if __name__ == "__main__":
    server.run("stdio")
