"""SSRF guard for user-supplied notification URLs.

A webhook URL is a request the server makes on a user's behalf, so it must never reach loopback,
private, link-local (cloud metadata at 169.254.169.254) or otherwise non-public addresses. The
check runs on the *resolved* addresses (every A/AAAA answer must be acceptable, so a name that
resolves to one public and one private address is refused), and the webhook sender then connects to
the address that was checked (see channels.py), so DNS rebinding between check and connect cannot
redirect it. Redirects are never followed. Operators can allow-list networks (TRACKER_WEBHOOK_ALLOW)
for receivers on their own network.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from tracker.config import Network

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]

# Names that mean "cloud metadata" whatever they resolve to on a given host.
METADATA_NAMES = {"metadata.google.internal", "metadata.goog", "metadata.amazonaws.com", "metadata"}


class UnsafeUrl(ValueError):
    """A notification URL the server refuses to call. The message is safe to show the user."""


@dataclass(frozen=True)
class CheckedUrl:
    url: str
    scheme: str
    host: str  # as written (IDNA-encoded), for the Host header and TLS SNI
    port: int
    addresses: tuple[IPAddress, ...]  # every resolved address; all passed the check


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _public(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return _public(ip.ipv4_mapped)  # ::ffff:127.0.0.1 is loopback, whatever its spelling
    # is_global is False for private, loopback, link-local, shared (CGNAT), reserved and
    # documentation ranges; multicast is global in some ranges but never a webhook receiver.
    return ip.is_global and not ip.is_multicast


def address_allowed(ip: IPAddress, allow: Sequence[Network]) -> bool:
    if any(ip in net for net in allow if net.version == ip.version):
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        mapped = ip.ipv4_mapped
        if any(mapped in net for net in allow if net.version == 4):
            return True
    return _public(ip)


def check_host(
    host: str, port: int, allow: Sequence[Network], *, resolver: Resolver = system_resolver, what: str = "URL"
) -> tuple[IPAddress, ...]:
    """Resolve `host` and refuse it unless every address is public or allow-listed."""
    name = host.strip("[]").rstrip(".").lower()
    if not name:
        raise UnsafeUrl(f"{what} has no host")
    if name in METADATA_NAMES:
        raise UnsafeUrl(f"{what} points at a cloud metadata service ({name})")
    try:
        literal: IPAddress | None = ipaddress.ip_address(name)
    except ValueError:
        literal = None
    if literal is not None:
        answers = [str(literal)]
    else:
        try:
            answers = resolver(name.encode("idna").decode("ascii"), port)
        except (OSError, UnicodeError) as exc:
            raise UnsafeUrl(f"{what} host {name!r} does not resolve: {exc}") from None
    if not answers:
        raise UnsafeUrl(f"{what} host {name!r} does not resolve")
    addresses: list[IPAddress] = []
    for answer in answers:
        ip = ipaddress.ip_address(answer.split("%", 1)[0])  # drop an IPv6 zone id
        if not address_allowed(ip, allow):
            shown = name if literal is not None else f"{name} ({ip})"
            raise UnsafeUrl(
                f"{what} host {shown} is a loopback, private, link-local or otherwise non-public address; "
                "an operator can allow it with TRACKER_WEBHOOK_ALLOW"
            )
        addresses.append(ip)
    return tuple(addresses)


def check_url(
    url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver, what: str = "webhook URL"
) -> CheckedUrl:
    """Validate an http(s) URL for an outbound call: scheme, host, resolved addresses."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"{what} is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsafeUrl(f"{what} must be http:// or https://, got {scheme or 'no scheme'}")
    if parts.username or parts.password:
        raise UnsafeUrl(f"{what} must not carry credentials; sign with the channel secret instead")
    host = parts.hostname or ""
    port = port or (443 if scheme == "https" else 80)
    addresses = check_host(host, port, allow, resolver=resolver, what=what)
    try:
        idna_host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise UnsafeUrl(f"{what} host {host!r} is not a valid name: {exc}") from None
    return CheckedUrl(url=url.strip(), scheme=scheme, host=idna_host, port=port, addresses=addresses)
