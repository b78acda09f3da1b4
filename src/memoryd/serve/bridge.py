"""`memoryd mcp` over stdio when a daemon serves the home: a bridge, not a server. Each JSON-RPC
message read from stdin is sent to the daemon's `POST /v1/mcp/<session>` (`serve.mcp_route`,
the very server `serve.mcp` builds, with the SDK the daemon has loaded), and its answer is
written to stdout as one line. This process imports neither the MCP SDK nor pydantic nor an
HTTP client (`serve.exchange`): an MCP client's session starts in the time of the CLI's own
start.

- The session is `--session`, fixed for the process: it is the path the bridge posts to, and
  nothing read from stdin changes it.
- stdout carries the answers only, one JSON line each (fd 1 points at stderr while it runs, so
  a stray print misses the wire); a notification gets no line. A line that is no message (not
  JSON, a batch, a request whose id is no string nor integer, one the daemon's SDK cannot read)
  is answered as the in-process server answers it: JSON-RPC's error with a null id, in
  memoryd's words, echoing nothing (`jsonrpc.message_of`); a blank line is passed over.
- A refusal by the daemon's rules (a body over 1 MiB, one key twice) is a JSON-RPC error for
  that request, saying what to do.
- A daemon that does not answer MCP (one started before memoryd had `/v1/mcp`) is found by a
  `ping` first (`reaches`): `memoryd mcp` then serves in process.
- The daemon going away mid-session ends nothing: each request while it is away is answered
  with an error saying so and what to do (an MCP client seldom starts its server again, so an
  exit would cost the agent its memory until the host restarts), a notification is dropped, and
  the next message after a daemon is back is its again, as `mcp --listen` through a daemon does.
  stdin's end ends the bridge with 0.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, BinaryIO

from memoryd.errors import DaemonError
from memoryd.home import Home
from memoryd.serve.client import TIMEOUT
from memoryd.serve.exchange import Unanswered, Unreached, exchange, request
from memoryd.serve.jsonrpc import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    NO_MESSAGE,
    Refused,
    is_request_id,
    message_of,
    refused,
)

INTERRUPTED = 130
"""The exit status on Ctrl-C, as the CLI's."""


def reaches(home: Home, session: str) -> bool:
    """Whether the daemon serving `home` answers MCP for `session` (a `ping`): one from before
    `/v1/mcp` does not, and `memoryd mcp` then serves in process."""
    ping = json.dumps({"jsonrpc": "2.0", "id": "memoryd-bridge", "method": "ping"}).encode()
    try:
        status, body = _post(str(home.root / "memoryd.sock"), session, ping, None)
    except DaemonError:
        return False
    found = _parsed(body.decode("utf-8", "replace"))
    return status == 200 and found is not None and found.get("result") == {}


def run(home: Home, session: str) -> int:
    """Bridge stdin and stdout to the daemon's MCP server for `session` until stdin ends; the
    exit status."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print reaches stderr, never the wire
    where = str(home.root / "memoryd.sock")
    version: str | None = None
    try:
        for raw in sys.stdin.buffer:
            line = raw.decode("utf-8", "replace").strip()  # as the SDK's own stdio reads it
            if not line:
                continue
            message = message_of(line)
            if isinstance(message, Refused):
                # Nothing a daemon could answer by an id: refused here, as in process.
                _write(out, message.answer)
                continue
            try:
                status, body = _post(where, session, line.encode(), version)
            except DaemonError as e:
                print(f"memoryd: {e}", file=sys.stderr, flush=True)
                answer = _error(message, INTERNAL_ERROR, str(e))
            else:
                answer = _answer(message, status, body)
            if answer is None:
                continue
            if message.get("method") == "initialize":
                version = _version(answer)
            _write(out, answer)
    except BrokenPipeError:  # the client went away: nobody to answer
        return 0
    except KeyboardInterrupt:
        return INTERRUPTED
    return 0


def _parsed(line: str) -> dict[str, Any] | None:
    try:
        found = json.loads(line)
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _post(where: str, session: str, body: bytes, version: str | None) -> tuple[int, bytes]:
    """The daemon's status and body for one message; `DaemonError` (status 0) when it did not
    answer: stopped, or killed, mid-session."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    try:
        found = exchange(where, request("POST", f"/v1/mcp/{session}", body, headers), TIMEOUT)
    except (Unreached, Unanswered) as e:
        raise DaemonError(
            f"the daemon serving the home is not answering on {where} ({e}): "
            "start it again with `memoryd serve`; a call it was answering when it went away may "
            "or may not have been done",
            "unreachable",
            0,
        ) from None
    return found.status, found.body


def _answer(message: dict[str, Any], status: int, body: bytes) -> dict[str, Any] | None:
    """What to write for one message: the daemon's JSON-RPC answer, an error for a request the
    daemon's rules refused, a null id's for one its SDK read as no message, or nothing (a
    notification, a client's answer)."""
    try:
        found = json.loads(body) if body else None
    except ValueError:
        found = None
    if status == 200 and isinstance(found, dict) and found.get("jsonrpc") == "2.0":
        return found
    if isinstance(found, dict) and found.get("jsonrpc") == "2.0":
        # The daemon's SDK read no message in it (no method, a field of the wrong type): the
        # in-process server refuses it so, and the SDK's words may echo the line.
        return refused(INVALID_REQUEST, NO_MESSAGE)
    error = found.get("error") if isinstance(found, dict) else None
    said = error.get("message") if isinstance(error, dict) else None
    text = str(said) if said else f"the daemon answered HTTP {status}: see its log"
    return _error(message, INVALID_REQUEST if 400 <= status < 500 else INTERNAL_ERROR, text)


def _error(message: dict[str, Any], code: int, text: str) -> dict[str, Any] | None:
    """A JSON-RPC error answering `message` when it is a request; nothing for a notification or
    a client's answer (a line that is no message was refused before it was sent)."""
    # A float, null or an object is no request's id (the SDK says nothing to it), and one of
    # Python's NaN or Infinity is no JSON to echo.
    if "method" not in message or not is_request_id(message.get("id")):
        return None
    return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": code, "message": text}}


def _version(answer: dict[str, Any]) -> str | None:
    result = answer.get("result")
    found = result.get("protocolVersion") if isinstance(result, dict) else None
    return found if isinstance(found, str) and found.isascii() and found.isprintable() else None


def _write(out: BinaryIO, answer: dict[str, Any]) -> None:
    # ASCII escapes: a line of JSON whatever the text holds (a lone surrogate included).
    out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
    out.flush()
