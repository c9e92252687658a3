"""A scripted MCP tool server (the official mcp package's MCPServer, stdio) for the gateway's
tests: ``export_status`` answers the same thing forever; ``job_progress`` moves on each call; a
resource, a prompt and a log notification let a test compare every other message with a direct
session."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer

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


@server.resource("notes://readme", mime_type="text/plain")
def readme() -> str:
    """A static note."""
    return "the scripted server's notes"


@server.prompt()
def review(path: str) -> str:
    """A prompt template."""
    return f"Review {path}."


@server.tool()
async def announce(ctx: Context) -> str:
    """Sends a log notification before answering (a server-to-client notification)."""
    await ctx.info("announced")
    return "ok"


if __name__ == "__main__":
    server.run("stdio")
