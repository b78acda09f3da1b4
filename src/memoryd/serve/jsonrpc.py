"""JSON-RPC 2.0 as MCP holds a client to it, without the SDK (the stdio bridge, which imports
none, reads its lines here too): what an id may be, the refusal of a message whose id is not
one, and of a stdio line that is no message. Pure: no I/O.

An id is a string or an integer, in every message; `null` only in an error answering a message
whose id could not be read. MCP allows no `null` in a request (JSON-RPC 2.0 only discourages
it), and JSON-RPC's fractions are no integer (`1.0` included: the SDK reads no float as one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

INVALID_REQUEST = -32600
"""JSON-RPC's code for a message that is no request, as the SDK names it."""

PARSE_ERROR = -32700
"""JSON-RPC's code for a line that is not JSON."""

INTERNAL_ERROR = -32603
"""JSON-RPC's code for an error of the server's own, as the SDK names it."""

BAD_ID = (
    "the id is not a string or an integer (MCP allows no null, fraction, boolean, list or "
    "object): send one, or no id for a notification"
)

NOT_JSON = "the line is not JSON: send one JSON-RPC message a line"
NO_MESSAGE = (
    "the line is no JSON-RPC message memoryd takes: one object a line, no batch, with "
    '"jsonrpc": "2.0" and a method; ' + BAD_ID
)


def is_request_id(found: object) -> bool:
    """Whether `found` (a JSON value) is an id a request may carry: a string or an integer."""
    return isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool))


def id_refusal(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error for a message whose `id` is neither a string nor an integer (`null`
    in an error answer aside), or None. A body that is not one JSON object is left to the SDK,
    which refuses it in its own words."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "id" not in message:
        return None
    found = message["id"]
    if is_request_id(found) or (found is None and "error" in message and "method" not in message):
        return None
    return refused(INVALID_REQUEST, BAD_ID)


def refused(code: int, message: str) -> dict[str, Any]:
    """JSON-RPC's error with a null id: the answer to a message whose id cannot be read."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


@dataclass(frozen=True)
class Refused:
    """A stdio line that is no message memoryd can answer by its id, and the error answering it."""

    answer: dict[str, Any]


def message_of(line: str) -> dict[str, Any] | Refused:
    """The JSON-RPC message a stdio line holds, read once; `Refused` with the error answering a
    line that is none, as the in-process server answers it (`serve.stdio`): not JSON, no object
    (a batch), or a request's method without a string or integer id."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return Refused(refused(PARSE_ERROR, NOT_JSON))
    if not isinstance(message, dict):
        return Refused(refused(INVALID_REQUEST, NO_MESSAGE))
    method = message.get("method")
    # MCP names every notification `notifications/...`: any other method is a request's.
    asks = isinstance(method, str) and not method.startswith("notifications/")
    if asks and not is_request_id(message.get("id")):
        return Refused(refused(INVALID_REQUEST, NO_MESSAGE))
    return message
