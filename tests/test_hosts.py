"""The one Host policy of `mcp --listen` and the window (`serve.hosts`): only `localhost` and IP
literals name a listener, only with its port, and `localhost` only a listener of localhost's.
The table of accepted and refused `Host` values is `test_serve_mcp_http`'s; these are its
invariants, over any text."""

from __future__ import annotations

import ipaddress

from hypothesis import given
from hypothesis import strategies as st

from memoryd.serve.hosts import names_listener, origin_names_listener

LISTENERS = ["127.0.0.1", "::1", "localhost", "0.0.0.0", "::", "192.0.2.7", "2001:db8::7"]
"""Addresses a listener is given: loopback, localhost, every address, one address."""

NOT_LOCALHOSTS = ["0.0.0.0", "::", "192.0.2.7", "2001:db8::7", "127.0.0.2", "10.0.0.1"]

ports = st.integers(min_value=1, max_value=65535)
few_ports = st.sampled_from([80, 8765])
"""Ports a Host and its listener share often, so that the text around them decides."""
names = st.one_of(
    st.sampled_from(["localhost", "LocalHost", "localhost.", "evil.example", "127.1", "[::1"]),
    st.sampled_from(["127.0.0.1", "[::1]", "::1", "192.0.2.7", "[2001:db8::7]", "[127.0.0.1]"]),
    st.ip_addresses().map(lambda a: f"[{a}]" if a.version == 6 else str(a)),
    st.ip_addresses().map(str),
    st.text(max_size=20),
)


def authority(name: str, port: int | str | None) -> str:
    """`name[:port]` as a Host header writes it."""
    return name if port is None else f"{name}:{port}"


def is_name(name: str) -> bool:
    """Whether `name` is `localhost`, an IPv4 literal or an IPv6 one in brackets."""
    v6 = name.startswith("[") and name.endswith("]")
    try:
        address = ipaddress.ip_address(name[1:-1] if v6 else name)
    except ValueError:
        return name.lower() == "localhost"
    return (address.version == 6) == v6


@given(
    st.one_of(
        st.text(max_size=40),
        st.builds(authority, names, st.one_of(st.none(), few_ports, st.text(max_size=6))),
    ),
    st.one_of(st.sampled_from(LISTENERS), st.text(max_size=20)),
    few_ports,
)
def test_only_localhost_or_an_ip_literal_with_the_listeners_port_is_accepted(
    host_header: str, host: str, port: int
) -> None:
    accepted = names_listener(host_header, host, port)
    assert isinstance(accepted, bool)
    if accepted:
        suffix = f":{port}"
        named = [host_header.removesuffix(suffix)] if host_header.endswith(suffix) else []
        assert any(is_name(n) for n in [*named, *([host_header] if port == 80 else [])])
    assert origin_names_listener("http://" + host_header, host, port) == accepted
    assert not origin_names_listener("https://" + host_header, host, port)


@given(names, st.sampled_from(LISTENERS), ports, ports)
def test_no_port_but_the_listeners_is_accepted(name: str, host: str, port: int, other: int) -> None:
    if other != port:
        assert not names_listener(authority(name, other), host, port)
    if port != 80:
        assert not names_listener(name, host, port)
    for padded in (f"0{port}", f"+{port}", f"{port} ", f"{port}/"):
        assert not names_listener(authority(name, padded), host, port)


@given(st.sampled_from(NOT_LOCALHOSTS), ports)
def test_localhost_names_no_listener_but_localhosts_own(host: str, port: int) -> None:
    for written in ("localhost", "LOCALHOST", "[localhost]"):
        assert not names_listener(authority(written, port), host, port)


@given(st.ip_addresses(), ports)
def test_a_listeners_own_address_with_its_port_names_it(address: object, port: int) -> None:
    assert isinstance(address, ipaddress.IPv4Address | ipaddress.IPv6Address)
    shown = f"[{address}]" if address.version == 6 else str(address)
    assert names_listener(f"{shown}:{port}", str(address), port)
    assert origin_names_listener(f"http://{shown}:{port}", str(address), port)
    assert names_listener(f"{shown}:{port}", "::" if address.version == 6 else "0.0.0.0", port)


def test_localhost_and_its_addresses_name_each_other() -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        assert names_listener("localhost:8765", host, 8765), host
    assert names_listener("[::1]:8765", "localhost", 8765)
    assert not names_listener("127.0.0.2:8765", "localhost", 8765)
    assert not names_listener("[::1]:8765", "127.0.0.1", 8765)
    assert not names_listener("::1:8765", "::1", 8765)  # an IPv6 literal needs its brackets
    assert not names_listener("[127.0.0.1]:8765", "127.0.0.1", 8765)
    for origin in ("http://127.0.0.1:8765?x", "http://127.0.0.1:8765#x", "HTTP://127.0.0.1:8765"):
        assert not origin_names_listener(origin, "127.0.0.1", 8765), origin
