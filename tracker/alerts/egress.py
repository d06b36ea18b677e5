"""The one egress path: every connection an alert makes is resolved, judged and pinned here.

An `Egress` is made for one send (a webhook POST or one Apprise notification). It

1. resolves each host name once (the answers are kept for the rest of the send, so a name that
   rebinds after the check, or between two connections of the same send, still gets the first,
   judged answer),
2. judges every answer with `tracker.alerts.ssrf` (public, or inside `Settings.webhook_allow`;
   IPv6 transition forms by the IPv4 they carry), and
3. connects a socket to an address it judged, itself; callers keep the name for the Host header,
   TLS SNI and certificate checks.

Webhooks (httpx) put the judged address in the request URL and pass the name as Host/SNI. Apprise
plugins do not let a caller choose where they connect, so while `Egress.active()` is in force (a
context variable, which Apprise copies into its worker threads) three client paths are routed here:

- `requests`: every `Session` (including the throwaway one behind `requests.post`) hands its
  requests to this egress's adapter, whose urllib3 connections open their socket through
  `Egress.connect` (TLS still verifies the original name). Proxies are not used, and no redirect is
  followed: the plugin sees the 3xx answer itself, which makes its send fail.
- `smtplib`: `SMTP._get_socket` (also used by `SMTP_SSL` and STARTTLS) connects through
  `Egress.connect`.
- anything else: an audit hook refuses every `socket.connect`/`sendto` made in this context to an
  address the egress did not judge (a name, a UNIX socket, an address resolved behind our back), so a
  path we did not pin fails closed instead of reaching an internal address.

These patches are installed once, on first use, and do nothing outside an active egress.
"""

from __future__ import annotations

import contextlib
import ipaddress
import smtplib
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from typing import Any, ClassVar, cast

import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from requests.sessions import SessionRedirectMixin
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError
from urllib3.poolmanager import PoolManager

from tracker.alerts.ssrf import CheckedUrl, IPAddress, Resolver, UnsafeUrl, check_host, check_url, system_resolver
from tracker.config import Network

# Open a TCP socket to exactly this address and port (tests replace it to observe or refuse).
Connector = Callable[[IPAddress, int, float | None], socket.socket]

_ACTIVE: ContextVar[Egress | None] = ContextVar("tracker_alert_egress", default=None)


class EgressRefused(OSError):
    """A connection the egress refused. An OSError, so every client library reports it as a failed connect."""


def tcp_connect(ip: IPAddress, port: int, timeout: float | None) -> socket.socket:
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect((str(ip), port))
    except BaseException:
        sock.close()
        raise
    return sock


class Egress:
    """Resolve once, judge every address, connect only to a judged address. One instance per send."""

    def __init__(
        self,
        allow: Sequence[Network],
        *,
        resolver: Resolver = system_resolver,
        connector: Connector = tcp_connect,
        timeout_s: float = 10.0,
    ) -> None:
        self.allow = tuple(allow)
        self.timeout_s = timeout_s
        self._resolver = resolver
        self._connector = connector
        self._lock = threading.Lock()  # Apprise may run a plugin in a worker thread
        self._answers: dict[str, list[str]] = {}
        self._approved: set[IPAddress] = set()
        self._adapter: _PinnedAdapter | None = None
        self._refusals: dict[str, None] = {}  # ordered set: the same refusal is often seen twice

    # -------------------------------------------------------------------------------------- judging

    def resolve(self, host: str, port: int) -> list[str]:
        """A `Resolver` that asks DNS once per name for the life of this egress."""
        with self._lock:
            cached = self._answers.get(host)
        if cached is not None:
            return list(cached)
        answers = list(self._resolver(host, port))
        with self._lock:
            # Another thread may have resolved it meanwhile; the first answer wins.
            return list(self._answers.setdefault(host, answers))

    def check_host(self, host: str, port: int, *, what: str = "URL") -> tuple[IPAddress, ...]:
        addresses = check_host(host, port, self.allow, resolver=self.resolve, what=what)
        with self._lock:
            self._approved.update(addresses)
        return addresses

    def check_url(self, url: str, *, what: str = "webhook URL") -> CheckedUrl:
        checked = check_url(url, self.allow, resolver=self.resolve, what=what)
        with self._lock:
            self._approved.update(checked.addresses)
        return checked

    def approved(self, address: object) -> bool:
        """True if `address` (a socket address tuple) is one this egress judged and may connect to."""
        if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
            return False  # a UNIX socket path or something stranger
        try:
            ip = ipaddress.ip_address(address[0].split("%", 1)[0])
        except ValueError:
            return False  # a name: the socket would resolve it itself, unjudged
        with self._lock:
            return ip in self._approved

    # -------------------------------------------------------------------------------------- refusals

    def refuse(self, message: str) -> EgressRefused:
        with self._lock:
            self._refusals[message] = None
        return EgressRefused(message)

    @property
    def refusals(self) -> list[str]:
        with self._lock:
            return list(self._refusals)

    # ------------------------------------------------------------------------------------ connecting

    def connect(self, host: str, port: int, *, timeout: float | None = None) -> socket.socket:
        """A TCP socket to a judged address of `host` (the first that accepts). Raises OSError."""
        try:
            addresses = self.check_host(host, port, what="connection to")
        except UnsafeUrl as exc:
            raise self.refuse(str(exc)) from None
        limit = self.timeout_s if timeout is None else min(timeout, self.timeout_s)
        error: OSError | None = None
        for ip in addresses:
            try:
                return self._connector(ip, port, limit)
            except OSError as exc:
                error = exc  # try the next judged address, as a normal client would
        raise error if error is not None else self.refuse(f"no address to connect to for {host}")

    def http_adapter(self, url: str) -> BaseAdapter:
        if not url.lower().startswith(("http://", "https://")):
            scheme = url.split(":", 1)[0]
            raise requests.exceptions.InvalidSchema(self.refuse(f"alert connections may not use {scheme}://"))
        with self._lock:
            if self._adapter is None:
                self._adapter = _PinnedAdapter(self)
            return self._adapter

    @contextlib.contextmanager
    def active(self) -> Iterator[Egress]:
        """Route every connection made in this context (and contexts copied from it) through this egress."""
        _install()
        token = _ACTIVE.set(self)
        try:
            yield self
        finally:
            _ACTIVE.reset(token)
            with self._lock:
                adapter, self._adapter = self._adapter, None
            if adapter is not None:
                adapter.close()


# ------------------------------------------------------------------------------- urllib3 / requests


class _PinnedConnectionMixin:
    """A urllib3 connection whose socket comes from `Egress.connect` (the name stays for Host and TLS)."""

    egress: ClassVar[Egress]
    # Provided by urllib3's HTTPConnection, which this is mixed into.
    _dns_host: str
    host: str
    port: int
    timeout: Any
    socket_options: Any

    def _new_conn(self) -> socket.socket:
        timeout = self.timeout if isinstance(self.timeout, int | float) else None
        conn = cast(HTTPConnection, self)  # always mixed into one (see _pool_classes)
        try:
            sock = self.egress.connect(self._dns_host, self.port, timeout=timeout)
        except EgressRefused as exc:
            raise NewConnectionError(conn, str(exc)) from exc
        except TimeoutError as exc:
            raise ConnectTimeoutError(conn, f"Connection to {self.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc
        for option in self.socket_options or ():
            sock.setsockopt(*option)
        sys.audit("http.client.connect", self, self.host, self.port)
        return sock


def _pool_classes(egress: Egress) -> dict[str, type[HTTPConnectionPool]]:
    # Classes per egress: urllib3 builds connections from a class, and its pool keys cannot carry one.
    http_conn = type("PinnedHTTPConnection", (_PinnedConnectionMixin, HTTPConnection), {"egress": egress})
    https_conn = type("PinnedHTTPSConnection", (_PinnedConnectionMixin, HTTPSConnection), {"egress": egress})
    http_pool = type("PinnedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http_conn})
    https_pool = type("PinnedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https_conn})
    return {"http": http_pool, "https": https_pool}


class _PinnedAdapter(HTTPAdapter):
    """The requests adapter of an egress: pinned connections, no proxies, no retries."""

    def __init__(self, egress: Egress) -> None:
        self._egress = egress  # before super().__init__, which builds the pool manager
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any) -> None:
        super().init_poolmanager(connections, maxsize, block=block, **pool_kwargs)
        pools: Any = _pool_classes(self._egress)
        self.poolmanager.pool_classes_by_scheme = pools

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        # A proxy would connect to the destination itself, past the check.
        raise requests.exceptions.ProxyError(self._egress.refuse("alert connections do not use proxies"))

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: bool | str = True,
        cert: Any = None,
        proxies: Mapping[str, str] | None = None,
    ) -> requests.Response:
        # Environment proxies (HTTPS_PROXY) are dropped rather than refused: the connection goes direct.
        return super().send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=None)


# ------------------------------------------------------------------------------------ installation

_install_lock = threading.Lock()
_installed = False
_original_get_adapter = requests.Session.get_adapter
_original_get_redirect_target = SessionRedirectMixin.get_redirect_target
_original_smtp_get_socket = smtplib.SMTP._get_socket  # type: ignore[attr-defined]


def _get_adapter(self: requests.Session, url: str) -> BaseAdapter:
    egress = _ACTIVE.get()
    if egress is None:
        return _original_get_adapter(self, url)
    return egress.http_adapter(url)


def _get_redirect_target(self: SessionRedirectMixin, resp: requests.Response) -> str | None:
    target = _original_get_redirect_target(self, resp)
    egress = _ACTIVE.get()
    if egress is None or target is None:
        return target
    # Not followed at all (as for webhooks): the plugin gets the 3xx answer and reports a failure.
    egress.refuse(f"HTTP {resp.status_code}: redirects are not followed (Location: {target[:200]})")
    return None


def _smtp_get_socket(self: smtplib.SMTP, host: str, port: int, timeout: Any) -> socket.socket:
    egress = _ACTIVE.get()
    if egress is None:
        sock: socket.socket = _original_smtp_get_socket(self, host, port, timeout)
        return sock
    return egress.connect(host, port, timeout=timeout if isinstance(timeout, int | float) else None)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    # Called for every audit event in the process: return as fast as possible when not ours.
    if event != "socket.connect" and event != "socket.sendto":
        return
    egress = _ACTIVE.get()
    if egress is None or egress.approved(args[1]):
        return
    shown = args[1][0] if isinstance(args[1], tuple) and args[1] else args[1]
    raise egress.refuse(f"connection to {shown!r} was not made through the alert egress check")


def _install() -> None:
    global _installed
    with _install_lock:
        if _installed:
            return
        requests.Session.get_adapter = _get_adapter  # type: ignore[method-assign]
        SessionRedirectMixin.get_redirect_target = _get_redirect_target  # type: ignore[method-assign]
        smtplib.SMTP._get_socket = _smtp_get_socket  # type: ignore[attr-defined]
        sys.addaudithook(_audit)  # cannot be removed; inert outside an active egress
        _installed = True
