"""`memoryd mcp`: the `recall` and `memory` tools and the memory block (a resource and a prompt)
over stdio, with the official MCP SDK's low-level server.

The tools are listed with exactly the schemas `GET /v1/tools` serves (`tools.tools()`), and a
call's arguments are checked against that same schema here, before any work: an unknown
argument, a wrong type, a value out of range is refused with what is wrong and what to do, and
never with the value (it may hold a secret). A refusal is a tool result marked as an error, so
the model reads it and can try again; a bad prompt or resource request is a protocol error.

It goes through the daemon when one serves the home, and works on the home directly otherwise
(catching the index up before each recall, as the CLI does). The model's edits are made for one
session, `--session` (default `mcp`): its log's taint and class decide whether they are allowed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from functools import cache, partial
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any, Protocol

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS
from pydantic import ValidationError

from memoryd.errors import DaemonError, MemorydError
from memoryd.home import Home
from memoryd.labels import Labelled
from memoryd.memory.journal import Op
from memoryd.serve.client import Client
from memoryd.serve.footprint import recalled
from memoryd.serve.service import Edited, Service
from memoryd.serve.stdio import held
from memoryd.serve.tools import shown, tools

BLOCK_URI = "memory://block"
PROMPT = "memory_block"

INSTRUCTIONS = (
    "memoryd is your long-term memory. Read the memory block (resource memory://block, or the "
    "prompt memory_block) at the start of a conversation; call `recall` to search past "
    "conversations; call `memory` to keep a lasting fact in your memory files."
)

log = logging.getLogger("memoryd.mcp")


class Backend(Protocol):
    """What the MCP server needs: the daemon's client or the home itself."""

    def begin_recall(self, query: str, k: int, session: str | None) -> Callable[[], Labelled]:
        """The model's `recall`: the part that reads the index; what it gives makes the answer
        (waiting for Honcho, when it was asked)."""
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

    def begin_recall(self, query: str, k: int, session: str | None) -> Callable[[], Labelled]:
        """The model's `recall`, after indexing what the logs gained."""
        self.service.catch_up()
        return self.service.begin_recall(query, k, session)

    def block(self, session: str | None) -> Labelled:
        """The memory block."""
        return self.service.block(session)

    def edit(self, op: Op, file: str, text: str, old: str, session: str | None) -> Edited:
        """A memory edit by the model for `session`."""
        return self.service.edit(op, file, text, old, session)


@cache
def version() -> str:
    """memoryd's version, as the MCP handshake reports it (read once: reading the package's
    metadata was 97% of building a server, which the daemon does for each MCP request)."""
    try:
        return package_version("memoryd")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "0"


def build(backend: Backend, session: str) -> Server[Any]:
    """The MCP server over `backend`, the model's calls made for `session`."""
    schemas = {tool["name"]: tool for tool in tools()}
    listed = [
        types.Tool(
            name=tool["name"], description=tool["description"], input_schema=tool["input_schema"]
        )
        for tool in schemas.values()
    ]

    async def recall(arguments: dict[str, Any]) -> str:
        schema = schemas["recall"]["input_schema"]["properties"]
        k = arguments.get("k", schema["k"]["default"])
        answer = await recalled(partial(backend.begin_recall, arguments["query"], int(k), session))
        return shown(answer.text, answer.untrusted)

    def edit(arguments: dict[str, Any]) -> str:
        done = backend.edit(
            Op(arguments["op"]),
            arguments["file"],
            arguments.get("text", ""),
            arguments.get("old", ""),
            session,
        )
        return f"{done.op} {done.file} (journal line {done.line}); {done.usage}"

    async def memory(arguments: dict[str, Any]) -> str:
        return await anyio.to_thread.run_sync(partial(edit, arguments))

    calls: dict[str, Callable[[dict[str, Any]], Awaitable[str]]] = {
        "recall": recall,
        "memory": memory,
    }

    async def list_tools(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(
        _: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = schemas.get(params.name)
        if tool is None:
            names = " and ".join(schemas)
            return _result(f"no such tool: the tools are {names}", error=True)
        arguments = dict(params.arguments or {})
        problems = problems_of(arguments, tool["input_schema"])
        if problems:
            return _result(
                "; ".join(problems) + ": call the tool again with the arguments its input "
                "schema names",
                error=True,
            )
        try:
            text = await calls[params.name](arguments)
        except MemorydError as e:
            return _result(str(e), error=True)
        except Exception as e:  # a bug: the model is told only that, and its trace id
            return _result(_bug(f"tool {params.name}", e), error=True)
        return _result(text)

    async def list_resources(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=BLOCK_URI,
                    name=PROMPT,
                    description="Your memory files as the system prompt shows them.",
                    mime_type="text/markdown",
                )
            ]
        )

    async def read_resource(
        _: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != BLOCK_URI:
            raise MCPError(INVALID_PARAMS, f"no such resource: the one resource is {BLOCK_URI}")
        text = await _block(backend, session)
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(uri=BLOCK_URI, text=text, mime_type="text/markdown")
            ]
        )

    async def list_prompts(
        _: ServerRequestContext[Any], __: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[
                types.Prompt(
                    name=PROMPT,
                    description="Your memory block, to start a conversation with.",
                    arguments=[],
                )
            ]
        )

    async def get_prompt(
        _: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        if params.name != PROMPT:
            raise MCPError(INVALID_PARAMS, f"no such prompt: the one prompt is {PROMPT}")
        if params.arguments:
            raise MCPError(INVALID_PARAMS, f"{PROMPT} takes no arguments: get it without any")
        text = await _block(backend, session)
        intro = "Your memory (your memory files, kept across conversations):\n\n"
        message = types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=intro + (text or "(empty)"))
        )
        return types.GetPromptResult(description="Your memory block.", messages=[message])

    server: Server[Any] = Server(
        "memoryd",
        version=version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    server.middleware.append(unechoed)
    return server


async def unechoed(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a refused request's error carries no `data`, and bad params are told
    without pydantic's words. The SDK puts the client's method name, or its params, there, and
    either may be anything the client sent (a key, a forged line)."""
    try:
        return await call_next(ctx)
    except MCPError as e:
        if e.error.data is None:
            raise
        raise MCPError(e.error.code, e.error.message) from None
    except ValidationError:
        raise MCPError(
            INVALID_PARAMS, "the params do not fit the method: send them as MCP defines them"
        ) from None


def problems_of(arguments: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """What is wrong with a tool call's arguments against its input schema (the keywords the
    tools use: `properties`, `required`, `additionalProperties: false`, `type` string or
    integer, `enum`, `minLength`, `maxLength`, `minimum`, `maximum`), each in words that name
    the argument and the rule, never the value; empty when they are fine."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    problems = []
    if schema.get("additionalProperties") is False and any(a not in properties for a in arguments):
        # The unknown name is not echoed: it may be anything the model or a client sent.
        problems.append(f"an unknown argument: send only {', '.join(properties)}")
    for name in schema.get("required", ()):
        if name not in arguments:
            problems.append(f"{name}: missing, and it is required")
    for name, rule in properties.items():
        if name in arguments:
            problem = _problem(arguments[name], rule)
            if problem is not None:
                problems.append(f"{name}: {problem}")
    return problems


def _problem(value: Any, rule: Mapping[str, Any]) -> str | None:
    kind = rule.get("type")
    if kind == "integer":
        low, high = rule.get("minimum"), rule.get("maximum")
        wanted = f"an integer from {low} to {high}" if low is not None else "an integer"
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        if isinstance(value, bool) or not whole:
            return f"must be {wanted}"
        if (low is not None and value < low) or (high is not None and value > high):
            return f"must be {wanted}"
        return None
    if kind == "string":
        if not isinstance(value, str):
            return "must be a string"
        if "enum" in rule and value not in rule["enum"]:
            return f"must be one of {', '.join(rule['enum'])}"
        if len(value) < rule.get("minLength", 0):
            n = rule["minLength"]
            return "must not be empty" if n == 1 else f"at least {n} characters"
        if "maxLength" in rule and len(value) > rule["maxLength"]:
            return f"at most {rule['maxLength']} characters: shorten it"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "a lone surrogate escape (such as \\ud800) is not text: send UTF-8 text"
    return None


def _result(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


async def _block(backend: Backend, session: str) -> str:
    try:
        found: Labelled = await anyio.to_thread.run_sync(partial(backend.block, session))
    except MemorydError as e:
        raise MCPError(INTERNAL_ERROR, str(e)) from None
    except Exception as e:
        raise MCPError(INTERNAL_ERROR, _bug("the memory block", e)) from None
    return found.text


def _bug(what: str, e: Exception) -> str:
    """Log a bug with its traceback under a trace id; the message the client gets."""
    trace = uuid.uuid4().hex[:12]
    log.error("a bug (trace %s) in %s", trace, what, exc_info=e)
    return f"a bug in memoryd; trace id {trace}"


def backend(home: Home) -> Backend:
    """The daemon serving `home` when one answers on its socket, else the home directly."""
    if (home.root / "memoryd.sock").exists():
        client = Client.unix(home)
        try:
            if client.health():
                return client
        except DaemonError:
            pass
        client.close()
    return Direct(Service.open(home))


def run(home: Home, session: str) -> None:
    """Serve MCP over stdio until the client closes it."""
    server = build(backend(home), session)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            # JSON-RPC's rules the SDK's stdio leaves out: every line answered, before the end.
            await server.run(*held(read, write), server.create_initialization_options())

    anyio.run(serve)
