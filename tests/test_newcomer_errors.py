"""The errors a newcomer met (issue 26), each run as the newcomer ran it and read for what it
says to do: `memory undo` of what is no line number, `window --url` of a daemon not there, the
API's 404 and 405, and help texts and messages that point at no file a wheel user lacks."""

from __future__ import annotations

import ast
import json
import shlex
import socket
from pathlib import Path

from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from memoryd.cli import cli
from memoryd.home import Home
from memoryd.serve.app import create_app
from memoryd.serve.client import Client
from memoryd.serve.service import Service
from test_listen_errors import memoryd
from test_serve_daemon import Daemon

UNDO_SAYS = (
    "ID is a journal line's number, like 12: `memoryd memory log` lists the lines, each with "
    "its number first"
)


def test_undo_of_what_is_no_line_number_says_what_one_is_and_where_to_see_them(
    home: Home,
) -> None:
    done = memoryd("memory", "undo", "abc")
    assert done.returncode == 2
    assert UNDO_SAYS in done.stderr
    assert "abc" not in done.stderr.rpartition("Error:")[2]


@given(
    st.text(min_size=1, max_size=40).filter(
        lambda s: (
            not (s.isascii() and s.isdigit() and 0 < len(s.lstrip("0")) <= 18)
            and not s.startswith("-")
        )
    )
)
def test_undo_refuses_every_text_that_is_no_line_number_in_the_same_words(typed: str) -> None:
    done = CliRunner().invoke(cli, ["memory", "undo", typed])
    assert done.exit_code == 2
    assert UNDO_SAYS in done.output


def test_undo_takes_a_line_number_written_with_leading_zeros(home: Home) -> None:
    assert memoryd("memory", "add", "notes.md", "likes tea").returncode == 0
    done = memoryd("memory", "undo", "0001")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("undid line 1 as journal line 2")


def test_window_url_of_a_daemon_not_there_names_the_command_that_serves_it(home: Home) -> None:
    with socket.socket() as probe:  # a port nobody listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done = memoryd("window", "--url", f"http://127.0.0.1:{port}", "--no-browser")
    assert done.returncode == 1
    serve = f"memoryd serve --listen 127.0.0.1:{port} --home {shlex.quote(str(home.root))}"
    assert f"start it with `{serve}`" in done.stderr
    assert done.stderr.count("\n") == 1


def test_the_apis_404_lists_its_routes_and_its_405_the_methods_the_route_takes(
    home: Home, daemon: Daemon
) -> None:
    with daemon.client() as client:
        missing = client.get("/v1/recal")
        wrong = client.get("/v1/recall")
        records = client.get("/v1/sessions/s1/records")
        routes = client.get("/openapi.json").json()["paths"]
    assert missing.status_code == 404
    said = missing.json()["error"]
    assert said["code"] == "not_found"
    assert said["message"].startswith("no such route: the API's routes are GET /v1/block, ")
    for path, methods in routes.items():
        for method in methods:
            assert f"{method.upper()} {path}" in said["message"]
    assert "GET /openapi.json describes each" in said["message"]
    assert "/v1/mcp/" not in said["message"]  # the stdio bridge's, no person's
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    assert wrong.json()["error"] == {
        "code": "method_not_allowed",
        "message": "/v1/recall takes POST, not GET; GET /openapi.json describes each route",
    }
    assert records.json()["error"]["message"].startswith(
        "/v1/sessions/{session}/records takes POST, not GET"
    )


def test_a_404_and_a_405_repeat_nothing_of_the_path_asked_for(home: Home, daemon: Daemon) -> None:
    key = "sk-ant-api03-" + "b" * 90
    with daemon.client() as client:
        answers = [
            client.get(f"/v1/{key}"),
            client.request("DELETE", f"/v1/recall?{key}"),
            client.send(client.build_request("BREW", "/v1/status")),
        ]
    for answer in answers:
        assert answer.status_code in (404, 405)
        assert key not in answer.text
        assert "BREW" not in answer.text


SOURCE = Path(__file__).parent.parent / "src" / "memoryd"


def _said(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal of a module that is no docstring: its messages and help options
    (the commands' docstrings, their help texts, are read from `--help` itself)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def test_no_message_nor_help_option_points_at_a_docs_file_a_wheel_user_lacks() -> None:
    # A wheel holds no docs/: messages say it inline, or name what every install has.
    pointing = [
        f"{path.relative_to(SOURCE)}:{line}: {text[:80]!r}"
        for path in sorted(SOURCE.rglob("*.py"))
        for line, text in _said(ast.parse(path.read_text(), str(path)))
        if "docs/" in text
    ]
    assert pointing == []


def test_no_help_text_nor_route_description_points_at_a_docs_file(home: Home) -> None:
    helps = [CliRunner().invoke(cli, [*name.split(), "--help"]) for name in ["", *_commands()]]
    assert all(done.exit_code == 0 for done in helps)
    shown = [done.output for done in helps]
    shown.append(json.dumps(create_app(Service.open(home)).openapi()))
    assert [text for text in shown if "docs/" in text] == []


def _commands() -> list[str]:
    """Every command's name as typed after `memoryd`, the groups' subcommands included."""
    import click

    context = click.Context(cli)
    found = []
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        found.append(name)
        if isinstance(command, click.Group):
            found += [f"{name} {sub}" for sub in command.list_commands(context)]
    return found


def test_the_command_named_serves_the_urls_address_as_serve_takes_it(home: Home) -> None:
    cases = {
        "http://127.0.0.1:8765": "memoryd serve --listen 127.0.0.1:8765",
        "http://localhost": "memoryd serve --listen localhost:80",
        "http://[::1]:9000": "memoryd serve --listen '[::1]:9000'",
        "https://192.0.2.7": "memoryd serve --listen 192.0.2.7:443 --public",
    }
    for url, serve in cases.items():
        with Client.tcp(url, "token") as client:
            assert client.start == serve, url
    with Client.tcp("http://127.0.0.1:1", "token", Home(Path("/a b"))) as client:
        assert client.start == "memoryd serve --listen 127.0.0.1:1 --home '/a b'"
