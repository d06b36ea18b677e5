"""SSRF guard for user-supplied notification URLs.

A webhook URL is a request the server makes on a user's behalf, so it must never reach loopback,
private, link-local (cloud metadata at 169.254.169.254) or otherwise non-public addresses. The
check runs on the *resolved* addresses (every A/AAAA answer must be acceptable, so a name that
resolves to one public and one private address is refused). IPv6 forms that carry an IPv4 address
(IPv4-mapped `::ffff:a.b.c.d`, IPv4-translated `::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`,
NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo `2001::/32`) are judged by the IPv4 address they
carry as well, since that is where the packets end up; the local-use NAT64 prefix `64:ff9b:1::/48`
is refused outright (where its IPv4 sits depends on the operator's prefix length).

This module only judges. Connecting is the job of `tracker.alerts.egress`, the one path every alert
connection takes: it resolves each name once, judges every answer here, and connects to the address
it judged, so DNS rebinding between check and connect cannot redirect it. Operators can allow-list
networks (TRACKER_WEBHOOK_ALLOW) for receivers on their own network.
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


# IPv6 ranges whose address is only a wrapper around an IPv4 destination: judged by that IPv4 alone.
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT (RFC 6052 section 2.1)
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated, but the kernel may still route it
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # well-known NAT64 prefix (RFC 6052)
# Local-use NAT64 (RFC 8215): the IPv4 sits at a position the operator chose, so it cannot be judged.
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")


def embedded_ipv4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """Every IPv4 address `ip` carries (a transition form sends its packets there); () for none."""
    if ip.ipv4_mapped is not None:
        return (ip.ipv4_mapped,)
    if ip in _IPV4_TRANSLATED or ip in _IPV4_COMPATIBLE or ip in _NAT64:
        return (ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF),)
    if ip.sixtofour is not None:
        return (ip.sixtofour,)
    if ip.teredo is not None:
        return ip.teredo  # (server, client): the relay talks to both
    return ()


def _wrapper_only(ip: ipaddress.IPv6Address) -> bool:
    """True where the IPv6 address means nothing beyond the IPv4 it carries."""
    return ip.ipv4_mapped is not None or ip in _IPV4_TRANSLATED or ip in _IPV4_COMPATIBLE or ip in _NAT64


def _public(ip: IPAddress) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _NAT64_LOCAL:
            return False
        carried = embedded_ipv4(ip)
        if carried and not all(_public(v4) for v4 in carried):
            return False  # [::127.0.0.1], [64:ff9b::7f00:1], [2002:7f00:1::] reach 127.0.0.1
        if _wrapper_only(ip):
            return bool(carried)
        # ::/8 is reserved but counted global by some Python releases; site-local is obsolete.
        if ip.is_reserved or ip.is_site_local:
            return False
    # is_global is False for private, loopback, link-local, shared (CGNAT), reserved and
    # documentation ranges; multicast is global in some ranges but never a webhook receiver.
    return ip.is_global and not ip.is_multicast


def _listed(ip: IPAddress, allow: Sequence[Network]) -> bool:
    return any(ip in net for net in allow if net.version == ip.version)


def address_allowed(ip: IPAddress, allow: Sequence[Network]) -> bool:
    """True if `ip` is public, or allow-listed; an IPv6 transition form needs its IPv4 to pass too."""
    if _listed(ip, allow):
        return True
    if isinstance(ip, ipaddress.IPv6Address):
        carried = embedded_ipv4(ip)
        if carried and ip not in _NAT64_LOCAL and all(address_allowed(v4, allow) for v4 in carried):
            # ::ffff:10.0.0.5 reaches 10.0.0.5, so 10.0.0.0/8 allows it; 6to4 and Teredo also need the
            # IPv6 address itself to be acceptable (Teredo, 2001::/32, is not global: allow-list it).
            return _wrapper_only(ip) or _public_unwrapped(ip)
    return _public(ip)


def _public_unwrapped(ip: ipaddress.IPv6Address) -> bool:
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and not ip.is_site_local


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
