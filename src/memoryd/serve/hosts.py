"""Whether a request's `Host` (or a browser's `Origin`) names the listener it reached: the one
check against DNS rebinding, for `memoryd mcp --listen` and the owner's window.

A page of another site whose name was made to resolve to this machine sends its own name in
`Host`: only `localhost` and IP literals are names no one else can point here. So a `Host`
names a listener on `host:port` when it is exactly `name[:port]`, the port the listener's (80
when left out) and the name

- an IP literal equal to the listener's address, or any IP literal when it listens on every
  address (`0.0.0.0`, `::`): no name is needed to reach it, so none can be rebound;
- `localhost` when the listener is localhost's own: `localhost`, `127.0.0.1` or `::1`;
- `127.0.0.1` or `::1` when the listener was given as `localhost`.

Pure: no lookup of any name, no I/O.
"""

from __future__ import annotations

import ipaddress

LOCALHOST = frozenset({ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")})
"""The addresses `localhost` names."""

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def names_listener(authority: str, host: str, port: int) -> bool:
    """Whether `authority` (a `Host` header: `name[:port]`) names the listener on `host:port`
    (`host` as it was given to listen on: an IP address or `localhost`)."""
    given = _authority(authority, port)
    if given is None:
        return False
    listening = host.lower()
    address = _address(listening)
    if given == "localhost":
        return listening == "localhost" or address in LOCALHOST
    if listening == "localhost":
        return given in LOCALHOST
    return address is not None and (address.is_unspecified or given == address)


def origin_names_listener(origin: str, host: str, port: int) -> bool:
    """Whether a browser's `Origin` header is a page of the listener on `host:port` itself:
    `http://` and an authority that names it, nothing after."""
    scheme = "http://"
    return origin.startswith(scheme) and names_listener(origin[len(scheme) :], host, port)


def _authority(authority: str, port: int) -> Address | str | None:
    # The name an authority gives, if it is `localhost` or an IP literal (an IPv6 one in
    # brackets, as a URL writes it) and its port is `port` written as a number is (80 when left
    # out): anything else is None. The port as written, not as parsed: `+80`, `080` and digits
    # of other scripts are not a port.
    if not authority.isascii():
        return None
    bracketed = authority.startswith("[")
    if bracketed:
        name, bracket, rest = authority[1:].partition("]")
        if not bracket:
            return None
    else:
        name = authority.partition(":")[0]
        rest = authority[len(name) :]
    if rest != f":{port}" and (rest or port != 80):
        return None
    if not bracketed and name.lower() == "localhost":
        return "localhost"
    given = _address(name)
    if given is None or (given.version == 6) != bracketed:
        return None
    return given


def _address(name: str) -> Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None
