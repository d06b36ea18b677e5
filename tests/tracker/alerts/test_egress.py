"""The alert egress: every connection an alert makes (webhook or Apprise, redirects, discovery and SMTP
included) is resolved once, judged, and made to the judged address.

Everything here stays on this machine: receivers listen on 127.0.0.1 (forbidden unless a test allows it)
and 127.0.0.2 (the stand-in for an acceptable server, allow-listed where used); names are answered by
fake resolvers, never by DNS; and the `net` fixture refuses any socket to a non-loopback address, so a
connection to a "public" address is recorded and fails at once instead of leaving the machine.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import socketserver
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import requests

from tracker.alerts.channels import APPRISE_SCHEMES, check_channel, send_apprise
from tracker.alerts.egress import Egress, EgressRefused
from tracker.alerts.rules import ChannelInput, RuleError, RuleInput, create_rule
from tracker.alerts.ssrf import UnsafeUrl
from tracker.storage.engine import session_scope

NONE: tuple[Any, ...] = ()
LOOPBACK = (ipaddress.ip_network("127.0.0.1/32"),)
OTHER = (ipaddress.ip_network("127.0.0.2/32"),)  # the "acceptable server" address
PUBLIC = "93.184.215.14"

# The TLS receivers use a throwaway certificate, so their clients connect with verify=no.
pytestmark = pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")

# A throwaway self-signed certificate for the TLS receivers.
CERT = """-----BEGIN CERTIFICATE-----
MIIBkjCCATmgAwIBAgIUZGcQTQGaEKnhLk3pn1FCuOHzzoAwCgYIKoZIzj0EAwIw
HjEcMBoGA1UEAwwTYWxlcnRzLXRlc3QuaW52YWxpZDAgFw0yNjEyMDExMTQ3NDBa
GA8yMTI2MTEwNzExNDc0MFowHjEcMBoGA1UEAwwTYWxlcnRzLXRlc3QuaW52YWxp
ZDBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABASge4GT2G4xTPdAg9gtUMmYQaXQ
uT0x+JQsB0wWm9Gip3YxHWGoDaZj8eKV4ygMCMtl5NektwXkc+SuOBhnv7GjUzBR
MB0GA1UdDgQWBBTCwxZFwWuMfR7yoO9F0SW/Ly3nazAfBgNVHSMEGDAWgBTCwxZF
wWuMfR7yoO9F0SW/Ly3nazAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0cA
MEQCID/C99Uppilr+rFapMPAdjlJPM7HGJ1HYvnsOZJXI4bTAiBmH1RWkg+y8bM2
l2G0U2aPlUmxXoKU+szTdumWnxmB8w==
-----END CERTIFICATE-----
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmD0JXDeltUYkYSJC
w3iAuPRTdhF3OhSYzJtwAuoGe/WhRANCAAQEoHuBk9huMUz3QIPYLVDJmEGl0Lk9
MfiULAdMFpvRoqd2MR1hqA2mY/HileMoDAjLZeTXpLcF5HPkrjgYZ7+x
-----END PRIVATE KEY-----
"""


# ------------------------------------------------------------------------------------------ fake DNS


class FakeDns:
    """Answers by name, in sequence: the n-th lookup of a name gets the n-th answer (the last one after that).

    `default` answers every name not in the table. Every lookup is recorded in `calls`.
    """

    def __init__(self, table: dict[str, list[list[str]]] | None = None, default: list[str] | None = None) -> None:
        self.table = table or {}
        self.default = default
        self.calls: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, host: str, port: int) -> list[str]:
        with self._lock:
            self.calls.append(host)
            n = self.calls.count(host)
        answers = self.table.get(host)
        if answers is None:
            if self.default is None:
                raise OSError(f"unknown host {host}")
            return list(self.default)
        return list(answers[min(n, len(answers)) - 1])


@dataclass
class Net:
    """The process's view of the network during a test (see the `net` fixture)."""

    system: FakeDns = field(default_factory=FakeDns)  # what a lookup outside the guard gets
    reached: list[tuple[str, int]] = field(default_factory=list)  # connects the egress let through
    blocked: list[tuple[str, int]] = field(default_factory=list)  # connects the egress refused

    def to(self, host: str) -> list[tuple[str, int]]:
        return [a for a in self.reached if a[0] == host]


@pytest.fixture
def net(monkeypatch: pytest.MonkeyPatch) -> Net:
    """No real DNS, no traffic off the machine, and a record of every connect.

    getaddrinfo (what Apprise, requests or smtplib would use on their own) answers from `net.system`;
    a connect to a loopback address really happens, any other is recorded and refused (as if the
    network were down) after the audit check a real connect would run.
    """
    state = Net()
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            ipaddress.ip_address(name)
            answers = [name]
        except ValueError:
            try:
                answers = state.system(name, int(port or 0))
            except OSError as exc:
                raise socket.gaierror(socket.EAI_NONAME, str(exc)) from None
        return [info for a in answers for info in real_getaddrinfo(a, port, family, type, proto, flags)]

    def no_dns(*args: Any, **kwargs: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "no DNS in tests")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket, "gethostbyname", no_dns)
    monkeypatch.setattr(socket, "gethostbyaddr", no_dns)
    monkeypatch.setattr(socket, "getfqdn", lambda name="": "alerts-test.invalid")  # smtplib's EHLO name

    def guarded(real: Callable[..., Any]) -> Callable[..., Any]:
        def connect(sock: socket.socket, address: Any) -> Any:
            if not isinstance(address, tuple):
                return real(sock, address)
            host, port = str(address[0]), int(address[1])
            try:
                loopback = ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
            except ValueError:
                raise AssertionError(f"a socket was asked to resolve {host!r} itself") from None
            try:
                if not loopback:
                    import sys

                    sys.audit("socket.connect", sock, address)  # what the real connect would check first
                    state.reached.append((host, port))
                    raise ConnectionRefusedError(f"test: no traffic leaves this machine ({host})")
                result = real(sock, address)
            except EgressRefused:
                state.blocked.append((host, port))
                raise
            except ConnectionRefusedError:
                if loopback:
                    state.reached.append((host, port))
                raise
            state.reached.append((host, port))
            return result

        return connect

    monkeypatch.setattr(socket.socket, "connect", guarded(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", guarded(socket.socket.connect_ex))
    return state


@pytest.fixture(scope="session")
def cert_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tls") / "cert.pem"
    path.write_text(CERT)
    return path


# ------------------------------------------------------------------------------------------ receivers


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


Responder = Callable[[Request], tuple[int, dict[str, str], bytes]]


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: Listener

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        self.owner.accepted += 1  # every TCP connection, whatever follows
        return sock, addr

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that hangs up mid-handshake is not a test failure


class _HTTPHandler(BaseHTTPRequestHandler):
    server: _Server

    def setup(self) -> None:
        owner = self.server.owner
        if owner.tls is not None:
            self.request = owner.tls.wrap_socket(self.request, server_side=True)
        super().setup()

    def _serve(self) -> None:
        owner = self.server.owner
        body = self.rfile.read(int(self.headers.get("content-length", 0) or 0))
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        owner.requests.append(request)
        status, headers, payload = owner.respond(request)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PUT = _serve

    def log_message(self, *args: Any) -> None:
        pass


class _SMTPHandler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        owner = self.server.owner
        self.wfile.write(b"220 alerts-test ESMTP\r\n")
        while line := self.rfile.readline():
            verb = line.strip().split(b" ", 1)[0].upper()
            if verb == b"DATA":
                self.wfile.write(b"354 go on\r\n")
                data = b""
                while (chunk := self.rfile.readline()) not in (b".\r\n", b""):
                    data += chunk
                owner.messages.append(data)
                self.wfile.write(b"250 queued\r\n")
            elif verb == b"QUIT":
                self.wfile.write(b"221 bye\r\n")
                return
            else:
                self.wfile.write(b"250 ok\r\n")


def _ok(request: Request) -> tuple[int, dict[str, str], bytes]:
    return 200, {}, b""


class Listener:
    """A receiver on one loopback address: HTTP (optionally TLS) or SMTP; counts every connection."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        smtp: bool = False,
        tls: Path | None = None,
        respond: Responder = _ok,
    ) -> None:
        self.accepted = 0
        self.requests: list[Request] = []
        self.messages: list[bytes] = []
        self.sni: list[str | None] = []
        self.respond = respond
        self.tls: ssl.SSLContext | None = None
        if tls is not None:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(tls)
            self.tls.sni_callback = lambda _sock, name, _ctx: self.sni.append(name)
        self._server = _Server((host, port), _SMTPHandler if smtp else _HTTPHandler)
        self._server.owner = self
        self.host, self.port = host, self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Listeners:
    """Starts receivers for one test and stops them all afterwards."""

    def __init__(self, cert: Path) -> None:
        self.cert = cert
        self.started: list[Listener] = []

    def __call__(self, host: str = "127.0.0.1", port: int = 0, *, tls: bool = False, **kw: Any) -> Listener:
        try:
            listener = self._start(host, port, tls=tls, **kw)
        except OSError as exc:
            pytest.skip(f"cannot listen on {host}:{port} here: {exc}")
        return listener

    def _start(self, host: str, port: int, *, tls: bool = False, **kw: Any) -> Listener:
        listener = Listener(host, port, tls=self.cert if tls else None, **kw)
        self.started.append(listener)
        return listener

    def pair(self, **kw: Any) -> tuple[Listener, Listener]:
        """A forbidden receiver on 127.0.0.1 and an acceptable one on 127.0.0.2, on the same port."""
        for _ in range(20):
            forbidden = self("127.0.0.1", **kw)
            try:
                return forbidden, self._start("127.0.0.2", forbidden.port, **kw)
            except OSError:
                continue  # that port is taken on 127.0.0.2: try another
        pytest.skip("no port free on both 127.0.0.1 and 127.0.0.2")

    def stop(self) -> None:
        for listener in self.started:
            listener.stop()


@pytest.fixture
def listen(cert_file: Path) -> Iterator[Listeners]:
    listeners = Listeners(cert_file)
    yield listeners
    listeners.stop()


# ------------------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize(
    "url",
    [
        "workflow://169.254.169.254:443/abc123/def456",
        "workflow://127.0.0.1:{port}/abc123/def456",
        "workflows://10.0.0.5/abc123/def456",
        "workflows://flows.internal.test/abc123/def456",  # a name for 10.0.0.5
    ],
)
def test_power_automate_workflow_hosts_are_checked(net, listen, url):
    """workflow:// names the user's server, not a fixed Microsoft endpoint: its host is checked."""
    receiver = listen()
    url = url.format(port=receiver.port)
    dns = FakeDns({"flows.internal.test": [["10.0.0.5"]]})
    net.system = dns
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_channel("apprise", url, NONE, resolver=dns)
    result = send_apprise(url, "t", "b", NONE, resolver=dns, timeout_s=2)
    assert not result.ok and not result.retryable and "non-public" in (result.error or "")
    assert net.reached == [] and receiver.accepted == 0


@pytest.mark.parametrize("scheme", ["json", "form", "mailto"])
def test_a_rebinding_name_cannot_reach_loopback(net, listen, scheme):
    """First answer public, every later one 127.0.0.1: the send resolves once and connects to the public one."""
    receiver = listen(smtp=scheme == "mailto")
    dns = FakeDns({"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
    net.system = dns  # an unpinned lookup (Apprise's own) would get the second answer
    url = {
        "json": f"json://rebind.test:{receiver.port}/hook",
        "form": f"form://rebind.test:{receiver.port}/hook",
        "mailto": f"mailto://rebind.test:{receiver.port}?from=alerts@example.com&to=ops@example.com",
    }[scheme]
    result = send_apprise(url, "t", "b", NONE, resolver=dns, timeout_s=2)
    assert not result.ok
    assert receiver.accepted == 0 and net.to("127.0.0.1") == []
    assert net.reached == [(PUBLIC, receiver.port)]  # the judged address, and only it
    assert dns.calls == ["rebind.test"]  # resolved once


@pytest.mark.parametrize("scheme", ["json", "form", "mailto"])
def test_a_rebinding_name_delivers_to_the_address_that_was_checked(net, listen, scheme):
    """First answer an allow-listed server, later ones 127.0.0.1: the message reaches the checked server."""
    smtp = scheme == "mailto"
    forbidden, checked = listen.pair(smtp=smtp)
    dns = FakeDns({"rebind.test": [["127.0.0.2"], ["127.0.0.1"]]})
    net.system = dns
    url = {
        "json": f"json://rebind.test:{checked.port}/hook",
        "form": f"form://rebind.test:{checked.port}/hook",
        "mailto": f"mailto://rebind.test:{checked.port}?from=alerts@example.com&to=ops@example.com",
    }[scheme]
    result = send_apprise(url, "[FIRING] H100", "below 2.00", OTHER, resolver=dns, timeout_s=5)
    assert result.ok, result.error
    assert forbidden.accepted == 0
    assert checked.messages if smtp else checked.requests, "the checked server got nothing"
    assert dns.calls == ["rebind.test"]


@pytest.mark.parametrize("homeserver", ["https://127.0.0.1:{port}", "https://homeserver.internal.test:{port}"])
def test_matrix_discovery_cannot_lead_to_an_internal_address(net, listen, homeserver):
    """.well-known on an acceptable server names an internal homeserver: discovery runs, the hop is refused."""
    internal, well_known = listen.pair(tls=True)
    base_url = homeserver.format(port=internal.port)
    well_known.respond = lambda req: (
        200,
        {"content-type": "application/json"},
        json.dumps({"m.homeserver": {"base_url": base_url}}).encode(),
    )
    dns = FakeDns({"matrix.test": [["127.0.0.2"]], "homeserver.internal.test": [["127.0.0.1"]]})
    net.system = dns
    url = f"matrixs://bot:secret@matrix.test:{well_known.port}/#alerts?verify=no"
    check_channel("apprise", url, OTHER, resolver=dns)  # the URL itself names an acceptable server
    result = send_apprise(url, "t", "b", OTHER, resolver=dns, timeout_s=2)
    assert internal.accepted == 0 and net.to("127.0.0.1") == []
    assert well_known.requests and {r.path for r in well_known.requests} == {"/.well-known/matrix/client"}
    assert not result.ok and not result.retryable and "non-public" in (result.error or "")


@pytest.mark.parametrize(
    "url",
    [
        "json://127.0.0.2:{port}/hook",
        "ntfy://127.0.0.2:{port}/alerts",
        "gotify://127.0.0.2:{port}/AbCdEfGhIjKlMnO",
    ],
)
def test_apprise_redirects_to_loopback_are_not_followed(net, listen, url):
    internal = listen()
    first = listen("127.0.0.2", respond=lambda req: (302, {"location": f"http://127.0.0.1:{internal.port}/x"}, b""))
    result = send_apprise(url.format(port=first.port), "t", "b", OTHER, resolver=FakeDns(), timeout_s=2)
    assert len(first.requests) == 1 and internal.accepted == 0
    # A redirect is refused for good, as for webhooks: retrying would only be redirected again.
    assert not result.ok and not result.retryable and "redirect" in (result.error or "")


def test_json_delivery_to_an_allow_listed_receiver_goes_through_the_pinned_path(net, listen):
    """With 127.0.0.1 allowed, a name only the guard's resolver knows is delivered to: nothing resolves twice."""
    receiver = listen()
    dns = FakeDns({"hooks.internal.test": [["127.0.0.1"]]})  # net.system knows no names at all
    result = send_apprise(
        f"json://hooks.internal.test:{receiver.port}/hook",
        "[FIRING] H100",
        "min of H100 below 2.00",
        LOOPBACK,
        resolver=dns,
        timeout_s=5,
    )
    assert result.ok, result.error
    (req,) = receiver.requests
    assert req.method == "POST" and req.path == "/hook" and json.loads(req.body)["title"] == "[FIRING] H100"
    assert req.headers["host"] == f"hooks.internal.test:{receiver.port}"
    assert net.reached == [("127.0.0.1", receiver.port)] and dns.calls == ["hooks.internal.test"]


def test_https_is_pinned_and_keeps_the_name_for_sni_and_host(net, listen):
    receiver = listen(tls=True)
    dns = FakeDns({"hooks.internal.test": [["127.0.0.1"]]})
    result = send_apprise(
        f"jsons://hooks.internal.test:{receiver.port}/hook?verify=no", "t", "b", LOOPBACK, resolver=dns, timeout_s=5
    )
    assert result.ok, result.error
    assert receiver.sni == ["hooks.internal.test"]
    assert receiver.requests[0].headers["host"] == f"hooks.internal.test:{receiver.port}"
    assert dns.calls == ["hooks.internal.test"]


def test_smtp_delivery_is_pinned_to_the_checked_address(net, listen):
    receiver = listen(smtp=True)
    dns = FakeDns({"mail.internal.test": [["127.0.0.1"]]})
    url = f"mailto://mail.internal.test:{receiver.port}?from=alerts@example.com&to=ops@example.com"
    result = send_apprise(url, "[FIRING] H100", "min of H100 below 2.00", LOOPBACK, resolver=dns, timeout_s=5)
    assert result.ok, result.error
    (message,) = receiver.messages
    assert b"[FIRING] H100" in message
    assert net.reached == [("127.0.0.1", receiver.port)] and dns.calls == ["mail.internal.test"]


# One URL per accepted scheme; the servers they name are svc.example.com / smtp.example.com.
SAMPLES = {
    "json": "json://svc.example.com/hook",
    "jsons": "jsons://svc.example.com/hook",
    "form": "form://svc.example.com/hook",
    "forms": "forms://svc.example.com/hook",
    "xml": "xml://svc.example.com/hook",
    "xmls": "xmls://svc.example.com/hook",
    "ntfy": "ntfy://svc.example.com/alerts",
    "ntfys": "ntfys://svc.example.com/alerts",
    "gotify": "gotify://svc.example.com/AbCdEfGhIjKlMnO",
    "gotifys": "gotifys://svc.example.com/AbCdEfGhIjKlMnO",
    "matrix": "matrix://bot:secret@svc.example.com/#alerts",
    "matrixs": "matrixs://bot:secret@svc.example.com/#alerts",
    "mmost": "mmost://svc.example.com/3ccdd113474722377935511fc85d3dd4",
    "mmosts": "mmosts://svc.example.com/3ccdd113474722377935511fc85d3dd4",
    "rocket": "rocket://bot:secret@svc.example.com/#alerts",
    "rockets": "rockets://bot:secret@svc.example.com/#alerts",
    "apprise": "apprise://svc.example.com/mytoken",
    "apprises": "apprises://svc.example.com/mytoken",
    "workflow": "workflow://svc.example.com:443/abc123/def456",
    "workflows": "workflows://svc.example.com/abc123/def456",
    "slack": "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ",
    "discord": "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js",
    "tgram": "tgram://123456789:abcdefg_hijklmnop/12315544",
    "pover": "pover://uQiRzpo4DXghDmr9QzzfQu27cmVRsG@azGDORePK8gMaC0QOYAMyEEuzJnyUi",
    "pbul": "pbul://o.gn5kj6nfhv736I7jC3cj3QLRiyhgl98b",
    "pagerduty": "pagerduty://myroutekey@myapikey",
    "opsgenie": "opsgenie://3ccdd113-4747-2237-7935-511fc85d3dd4?action=new",
    "pushed": "pushed://ABCDEFGHIJABCDEFGHIJ/abcdefghijklmnopqrstuvwxyzabcdefghijk",
    "join": "join://abcdefghijklmnopqrstuvwxyzabcdef",
    "twilio": "twilio://AC8d5f3ab36e4e1c5b9a1cdf79de9d2f33:abcdefghijklmnopqrstuvwxyz012345@15551233453/15551234567",
    "spush": "spush://ABC123",
    "line": "line://abcdefghij1234567890/U1234567890abcdef1234567890abcdef",
    "mailto": "mailto://bot:secret@svc.example.com?smtp=smtp.example.com&to=ops@example.com",
    "mailtos": "mailtos://bot:secret@svc.example.com?smtp=smtp.example.com&to=ops@example.com",
}


def test_every_accepted_scheme_has_a_sample():
    assert set(SAMPLES) == set(APPRISE_SCHEMES)


@pytest.mark.parametrize("scheme", sorted(APPRISE_SCHEMES))
def test_every_accepted_scheme_connects_only_to_checked_addresses(net, scheme):
    """The guard says every name is public; a lookup behind its back would say 127.0.0.1. Only the former is used."""
    guard = FakeDns(default=[PUBLIC])
    net.system = FakeDns(default=["127.0.0.1"])
    url = SAMPLES[scheme]
    check_channel("apprise", url, NONE, resolver=guard)  # accepted when the rule is saved
    result = send_apprise(url, "t", "b", NONE, resolver=guard, timeout_s=2)
    assert not result.ok  # nothing listens: the point is where it tried
    assert net.reached, "the plugin made no connection at all"
    assert {host for host, _ in net.reached} == {PUBLIC}
    assert net.system.calls == []  # nothing resolved outside the egress


@pytest.mark.parametrize(
    "url",
    [
        "irc://chat.example.com/#alerts",  # raw TCP
        "rsyslog://logs.example.com",  # UDP
        "kodi://media.example.com",  # HTTP, but not on the list
        "signal://signal.example.com/12345678901/12345678902",
    ],
)
def test_schemes_off_the_list_are_refused_when_saved_and_when_sent(net, url):
    dns = FakeDns(default=[PUBLIC])
    with pytest.raises(UnsafeUrl, match="not accepted as an alert channel"):
        check_channel("apprise", url, NONE, resolver=dns)
    result = send_apprise(url, "t", "b", NONE, resolver=dns, timeout_s=2)
    assert not result.ok and not result.retryable and "not accepted" in (result.error or "")
    assert net.reached == []


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("workflow://169.254.169.254:443/abc123/def456", "non-public"),
        ("json://[64:ff9b::7f00:1]:8080/hook", "non-public"),
        ("irc://chat.example.com/#alerts", "not accepted"),
    ],
)
def test_rule_creation_names_the_channel_url_field(engine, settings, clock, url, message):
    inp = RuleInput(
        gpu="H100-SXM-80GB",
        condition="below",
        threshold="2.00",
        channels=[ChannelInput("webhook", "https://hooks.example.com/x"), ChannelInput("apprise", url)],
    )
    with pytest.raises(RuleError, match=message) as exc, session_scope(engine) as session:
        create_rule(session, inp, now=clock(), settings=settings, cost_model=None, resolver=FakeDns(default=[PUBLIC]))
    assert exc.value.field == "channels[1].url"


def test_connections_not_made_by_the_egress_fail_closed(net, listen):
    """A client the egress does not pin (raw sockets, http.client) cannot connect while an alert is sent."""
    receiver = listen()
    egress = Egress(LOOPBACK, resolver=FakeDns())
    with egress.active():
        with pytest.raises(EgressRefused):
            socket.create_connection(("127.0.0.1", receiver.port), timeout=2)
        with pytest.raises(requests.exceptions.InvalidSchema):
            requests.post(f"ftp://127.0.0.1:{receiver.port}/", timeout=2)
        assert receiver.accepted == 0
        egress.check_host("127.0.0.1", receiver.port)  # judged now: a connection to it may be made
        socket.create_connection(("127.0.0.1", receiver.port), timeout=2).close()
    socket.create_connection(("127.0.0.1", receiver.port), timeout=2).close()  # outside an alert: untouched
    assert requests.Session().get_adapter("http://x/").__class__ is requests.adapters.HTTPAdapter
