"""`memoryd mcp`: the `recall` and `memory` tools and the memory block (a resource and a prompt)
over stdio, with the official MCP SDK.

It goes through the daemon when one serves the home, and works on the home directly otherwise
(catching the index up before each recall, as the CLI does). The model's edits are made for one
session, `--session` (default `mcp`): its log's taint and class decide whether they are allowed.
"""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from memoryd.errors import DaemonError, MemorydError
from memoryd.home import Home
from memoryd.memory.journal import Op
from memoryd.recall import K_DEFAULT, K_MAX, QUERY_MAX
from memoryd.serve.client import Client
from memoryd.serve.service import Edited, Labelled, Service
from memoryd.serve.tools import MEMORY_DESCRIPTION, RECALL_DESCRIPTION, shown

BLOCK_URI = "memory://block"

INSTRUCTIONS = (
    "memoryd is your long-term memory. Read the memory block (resource memory://block, or the "
    "prompt memory_block) at the start of a conversation; call `recall` to search past "
    "conversations; call `memory` to keep a lasting fact in your memory files."
)


class Backend(Protocol):
    """What the MCP server needs: the daemon's client or the home itself."""

    def recall(self, query: str, k: int, session: str | None) -> Labelled:
        """The model's `recall`."""
        ...

    def block(self, session: str | None) -> Labelled:
        """The memory block."""
        ...

    def edit(self, op: Op, file: str, text: str, old: str, session: str | None) -> Edited:
        """A memory edit by the model for `session`."""
        ...


class Direct:
    """The home itself, without a daemon: the index is caught up before each recall."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def recall(self, query: str, k: int, session: str | None) -> Labelled:
        """The model's `recall`, after indexing what the logs gained."""
        self.service.catch_up()
        return self.service.recall(query, k, session)

    def block(self, session: str | None) -> Labelled:
        """The memory block."""
        return self.service.block(session)

    def edit(self, op: Op, file: str, text: str, old: str, session: str | None) -> Edited:
        """A memory edit by the model for `session`."""
        return self.service.edit(op, file, text, old, session)


def build(backend: Backend, session: str) -> MCPServer:
    """The MCP server over `backend`, the model's calls made for `session`."""
    server: MCPServer = MCPServer("memoryd", instructions=INSTRUCTIONS)

    @server.tool(name="recall", description=RECALL_DESCRIPTION, structured_output=False)
    def recall(
        query: Annotated[str, Field(min_length=1, max_length=QUERY_MAX)],
        k: Annotated[int, Field(ge=1, le=K_MAX)] = K_DEFAULT,
    ) -> str:
        try:
            answer = backend.recall(query, k, session)
        except MemorydError as e:
            raise ToolError(str(e)) from None
        return shown(answer.text, answer.untrusted)

    @server.tool(name="memory", description=MEMORY_DESCRIPTION, structured_output=False)
    def memory(
        op: Literal["add", "replace", "remove"], file: str, text: str = "", old: str = ""
    ) -> str:
        try:
            done = backend.edit(Op(op), file, text, old, session)
        except MemorydError as e:
            raise ToolError(str(e)) from None
        return f"{done.op} {done.file} (journal line {done.line}); {done.usage}"

    @server.resource(
        BLOCK_URI,
        name="memory_block",
        description="Your memory files as the system prompt shows them.",
        mime_type="text/markdown",
    )
    def block_resource() -> str:
        return backend.block(session).text

    @server.prompt(
        name="memory_block", description="Your memory block, to start a conversation with."
    )
    def block_prompt() -> str:
        return "Your memory (your memory files, kept across conversations):\n\n" + (
            backend.block(session).text or "(empty)"
        )

    return server


def backend(home: Home) -> Backend:
    """The daemon serving `home` when one answers on its socket, else the home directly."""
    if (home.root / "memoryd.sock").exists():
        client = Client.unix(home)
        try:
            client.health()
            return client
        except DaemonError:
            client.close()
    return Direct(Service.open(home))


def run(home: Home, session: str) -> None:
    """Serve MCP over stdio until the client closes it."""
    server = build(backend(home), session)
    anyio.run(server.run_stdio_async)
