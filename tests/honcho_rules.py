"""What a real Honcho 3.0.12 refuses, and how it says so: the fake Honcho's validation.

Each rule is one a real server showed (`tests/fixtures/honcho/exchanges.json`, copied from the
recorded answers in `../shared/honcho/recorded/`) or its OpenAPI document states: ids of
`^[a-zA-Z0-9_-]+$` and 1 to 512 characters, batches of 1 to 100, a message of at most 25 000
characters, a conclusion of 1 to 65 535, `limit` and `top_k` from 1 to 100, a `created_at` its
validator (pydantic, as here) reads. A refusal is `(422, body)` with the body a real server
gives: FastAPI's list of `{"type", "loc", "msg", "input", "ctx"}`, or Honcho's own string.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

Refusal = tuple[int, dict[str, Any]]

ID = re.compile(r"[a-zA-Z0-9_-]+")
ID_PATTERN = "^[a-zA-Z0-9_-]+$"
MAX_ID = 512
MAX_BATCH = 100
MAX_MESSAGE = 25_000
MAX_CONCLUSION = 65_535
MAX_LIMIT = 100

PAIR_NEEDED = (
    "observer and observed must be specified for semantic search. Pass them inside the "
    '\'filters\' object, e.g. {"query": "...", "filters": {"observer": "alice", '
    "\"observed\": \"bob\"}}. Both 'observer'/'observer_id' and 'observed'/'observed_id' are "
    "accepted."
)
NO_PROVIDER_CREATE = "OpenAI API key is required"
NO_PROVIDER_QUERY = "Query exceeds maximum token limit of 8192."

_TIME = TypeAdapter(datetime)


def invalid(kind: str, loc: list[Any], msg: str, value: Any, ctx: Any = None) -> Refusal:
    """One request-validation error, as FastAPI answers it."""
    error: dict[str, Any] = {"type": kind, "loc": loc, "msg": msg, "input": value}
    if ctx is not None:
        error["ctx"] = ctx
    return 422, {"detail": [error]}


def refused(detail: str, status: int = 422) -> Refusal:
    """An error Honcho raises itself: a string `detail`."""
    return status, {"detail": detail}


def check_body(body: Any) -> Refusal | None:
    """A request without a JSON object body."""
    if not isinstance(body, dict):
        return invalid("missing", ["body"], "Field required", body)
    return None


def check_id(value: Any, loc: list[Any]) -> Refusal | None:
    """A workspace, peer or session id that Honcho refuses."""
    if not isinstance(value, str):
        return invalid("string_type", loc, "Input should be a valid string", value)
    if len(value) > MAX_ID:
        msg = f"String should have at most {MAX_ID} characters"
        return invalid("string_too_long", loc, msg, value, {"max_length": MAX_ID})
    if not ID.fullmatch(value):
        msg = f"String should match pattern '{ID_PATTERN}'"
        return invalid("string_pattern_mismatch", loc, msg, value, {"pattern": ID_PATTERN})
    return None


def check_list(items: Any, loc: list[Any]) -> Refusal | None:
    """A batch that is not 1 to 100 items."""
    if not isinstance(items, list):
        return invalid("list_type", loc, "Input should be a valid list", items)
    count = len(items)
    if count < 1:
        ctx = {"field_type": "List", "min_length": 1, "actual_length": count}
        msg = f"List should have at least 1 item after validation, not {count}"
        return invalid("too_short", loc, msg, items, ctx)
    if count > MAX_BATCH:
        ctx = {"field_type": "List", "max_length": MAX_BATCH, "actual_length": count}
        msg = f"List should have at most {MAX_BATCH} items after validation, not {count}"
        return invalid("too_long", loc, msg, items, ctx)
    return None


def check_text(value: Any, loc: list[Any], least: int, most: int) -> Refusal | None:
    """A text field outside `least` to `most` characters."""
    if not isinstance(value, str):
        return invalid("string_type", loc, "Input should be a valid string", value)
    if len(value) < least:
        msg = f"String should have at least {least} character"
        return invalid("string_too_short", loc, msg, value, {"min_length": least})
    if len(value) > most:
        msg = f"String should have at most {most} characters"
        return invalid("string_too_long", loc, msg, value, {"max_length": most})
    return None


def check_limit(value: Any, loc: list[Any]) -> Refusal | None:
    """A `limit` or `top_k` outside 1 to 100."""
    if not isinstance(value, int):
        return invalid("int_type", loc, "Input should be a valid integer", value)
    if value < 1:
        msg = "Input should be greater than or equal to 1"
        return invalid("greater_than_equal", loc, msg, value, {"ge": 1})
    if value > MAX_LIMIT:
        msg = f"Input should be less than or equal to {MAX_LIMIT}"
        return invalid("less_than_equal", loc, msg, value, {"le": MAX_LIMIT})
    return None


def check_time(value: Any, loc: list[Any]) -> Refusal | None:
    """A `created_at` Honcho's validator does not read."""
    try:
        _TIME.validate_python(value)
    except ValidationError as e:
        error = e.errors()[0]
        return invalid(error["type"], loc, error["msg"], value, error.get("ctx"))
    return None


def stored_time(value: str) -> str:
    """A `created_at` as Honcho gives it back: read, in UTC, written its way."""
    when = _TIME.validate_python(value)
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return str(_TIME.dump_python(when, mode="json"))


def message_refusal(raw: Any, n: int) -> Refusal | None:
    """What Honcho refuses in the `n`-th message of a batch."""
    loc: list[Any] = ["body", "messages", n]
    if not isinstance(raw, dict):
        return invalid("model_attributes_type", loc, "Input should be a valid dictionary", raw)
    if not isinstance(raw.get("peer_id"), str):
        return invalid("missing", [*loc, "peer_id"], "Field required", raw)
    found = check_text(raw.get("content"), [*loc, "content"], 0, MAX_MESSAGE)
    if found is None and raw.get("created_at") is not None:
        found = check_time(raw["created_at"], [*loc, "created_at"])
    return found


def conclusion_refusal(raw: Any, n: int) -> Refusal | None:
    """What Honcho refuses in the `n`-th conclusion of a batch."""
    loc: list[Any] = ["body", "conclusions", n]
    if not isinstance(raw, dict):
        return invalid("model_attributes_type", loc, "Input should be a valid dictionary", raw)
    for key in ("observer_id", "observed_id"):
        if not isinstance(raw.get(key), str):
            return invalid("missing", [*loc, key], "Field required", raw)
    return check_text(raw.get("content"), [*loc, "content"], 1, MAX_CONCLUSION)


def pair(filters: Any) -> tuple[str, str] | None:
    """The observer and observed a conclusion query's filters name (either spelling)."""
    if not isinstance(filters, dict):
        return None
    observer = filters.get("observer_id", filters.get("observer"))
    observed = filters.get("observed_id", filters.get("observed"))
    if isinstance(observer, str) and isinstance(observed, str):
        return observer, observed
    return None
