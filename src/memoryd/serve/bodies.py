"""What the API's requests carry: the bodies as pydantic models (no field beyond those named),
the session id rule, the labelled answer, and a validation problem in words that hold nothing
the client sent."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memoryd.recall_limits import K_DEFAULT, K_MAX
from memoryd.text.secrets import redact
from memoryd.text.session_ids import SESSION_ID, SESSION_RULE, is_session_id

SESSION_PATTERN = "^" + SESSION_ID.pattern + "$"
"""A session id as every field that takes one checks it (the rule of `session_ids.SESSION_ID`)."""


def _not_a_key(session: str | None) -> str | None:
    # A session id becomes item keys, journal lines and recall log lines: one shaped like a
    # key is refused here rather than kept there.
    if session is not None and not is_session_id(session):
        raise ValueError("not a session id")
    return session


SessionId = Annotated[str, Field(pattern=SESSION_PATTERN), AfterValidator(_not_a_key)]
"""A session id in a body or a path: the session id rule, and no key."""


class _Body(BaseModel):
    # Strict: a value of another type is refused, never coerced (`"dry_run": "no"` read as
    # false ran a forget; `"k": true` was 1).
    model_config = ConfigDict(extra="forbid", strict=True)


class RecallBody(_Body):
    """`POST /v1/recall`: for `session` (its class bounds what is shown), or for none."""

    query: str = Field(max_length=10_000)
    k: int = Field(default=K_DEFAULT, ge=1, le=K_MAX)
    session: SessionId | None = None


class MemoryBody(_Body):
    """`POST /v1/memory`: an edit by the model for `session`, or by the owner (`"as": "owner"`):
    exactly one of the two."""

    op: Literal["add", "replace", "remove"]
    file: str = Field(max_length=200)
    text: str = ""
    old: str = ""
    session: SessionId | None = None
    as_: Literal["owner"] | None = Field(default=None, alias="as")


class RecordsBody(_Body):
    """`POST /v1/sessions/{session}/records`: records as the session log format has them."""

    records: list[dict[str, Any]] = Field(min_length=1, max_length=10_000)


class ForgetEntry(_Body):
    """The entry of a memory file to forget: the file, and words of the one entry, or its
    number in the file (from 1) and its text as shown (`block.shown`: secrets removed)."""

    file: str = Field(max_length=200)
    words: str | None = Field(default=None, max_length=10_000)
    n: int | None = Field(default=None, ge=1, le=1_000_000)
    shown: str | None = Field(default=None, max_length=10_000)


class ForgetBody(_Body):
    """`POST /v1/forget`, the owner's only (`"as": "owner"`): keys, an entry or a query (with a
    query, `keys` are the matches the owner confirmed); `dry_run` shows what it would forget."""

    keys: list[Annotated[str, Field(max_length=400)]] = Field(default=[], max_length=10_000)
    entry: ForgetEntry | None = None
    query: str | None = Field(default=None, max_length=10_000)
    dry_run: bool = False
    as_: Literal["owner"] = Field(alias="as")


# Every name a request may use for a field: a validation error names only these, so a field
# name a client made up (which may be a key pasted in the wrong place) is never echoed.
_NAMES = frozenset(
    name
    for model in (RecallBody, MemoryBody, RecordsBody, ForgetBody, ForgetEntry)
    for field_name, info in model.model_fields.items()
    for name in (field_name, info.alias)
    if name
) | {"as", "session", "body", "query", "path"}


class Labelled(BaseModel):
    """Text that carries memory, with its label."""

    model_config = ConfigDict(populate_by_name=True)

    text: str
    data_class: str = Field(alias="class", serialization_alias="class")
    untrusted: bool


NOT_TEXT = (
    "a lone surrogate escape (such as \\ud800) is not text: send UTF-8 text (a whole "
    "character, not half of one)"
)


def problem_of(problem: Any) -> str:
    """One validation problem, in words that hold nothing the client sent: the field named
    only when it is one the API has, pydantic's message (which names rules, not values)
    with any secret removed, and the session id rule spelled out."""
    loc = list(problem.get("loc", ()))
    if loc and loc[0] in ("body", "query", "path"):
        loc = loc[1:]  # where it was sent; a field may be named `query` too
    where = ".".join(str(p) if isinstance(p, int) or p in _NAMES else "?" for p in loc)
    kind = problem.get("type")
    if kind == "extra_forbidden":
        return "an unknown field: send only the fields the API names"
    if kind == "string_unicode":
        return f"{where or 'body'}: {NOT_TEXT}"
    if kind in ("string_pattern_mismatch", "value_error") and loc and loc[-1] == "session":
        return f"{where}: {SESSION_RULE}"
    message = redact(str(problem.get("msg", "invalid")))
    return f"{where or 'body'}: {message[:200]}"
