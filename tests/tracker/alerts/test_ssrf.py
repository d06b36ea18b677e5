"""SSRF guard: private, loopback, link-local and metadata addresses are refused unless allow-listed, on the
resolved address; the sender connects to the checked address and never follows redirects."""

from __future__ import annotations

import ipaddress

import pytest

from tests.factories.alerts import Receiver
from tracker.alerts.channels import check_apprise_url, send_apprise, send_webhook
from tracker.alerts.ssrf import UnsafeUrl, check_url
from tracker.config import Settings

NONE: tuple = ()
LOOPBACK = (ipaddress.ip_network("127.0.0.1/32"),)


def resolver_for(table: dict[str, list[str]]):
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve


PUBLIC = resolver_for({"hooks.example.com": ["93.184.215.14"]})


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://127.1/hook",
        "http://localhost/hook",
        "http://10.0.0.5/hook",
        "http://10.255.255.255/",
        "http://172.16.3.4/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",  # Teredo, client 127.0.0.1
        "http://[fe80::1]/",
        "http://[fd00::1]/",
        "http://0.0.0.0/",
        "http://100.64.0.1/",  # carrier-grade NAT
        "http://metadata.google.internal/computeMetadata/v1/",
    ],
)
def test_non_public_addresses_are_refused(url):
    with pytest.raises(UnsafeUrl, match=r"non-public|metadata"):
        check_url(url, NONE)


@pytest.mark.parametrize(
    "host",
    [
        "::127.0.0.1",  # IPv4-compatible
        "::7f00:1",  # the same, spelled in hex
        "::10.0.0.5",
        "::ffff:0:7f00:1",  # IPv4-translated (SIIT)
        "64:ff9b::7f00:1",  # NAT64 well-known prefix
        "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
        "64:ff9b:1::5db8:d70e",  # local-use NAT64: where the IPv4 sits is the operator's choice
        "2002:7f00:1::",  # 6to4 of 127.0.0.1
        "2002:a00:5::1",  # 6to4 of 10.0.0.5
    ],
)
def test_ipv6_forms_carrying_a_forbidden_ipv4_are_refused(host):
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_url(f"http://[{host}]:8080/hook", NONE)
    with pytest.raises(UnsafeUrl, match=r"non-public|not a valid"):  # Apprise cannot parse dotted IPv6 hosts
        check_apprise_url(f"json://[{host}]:8080/hook", NONE)
    with pytest.raises(UnsafeUrl, match=r"v6\.example\.com"):  # the same address as a DNS answer
        check_url("https://v6.example.com/", NONE, resolver=resolver_for({"v6.example.com": [host]}))
    # Not over-blocking: the same forms carrying a public IPv4 (93.184.215.14) pass.
    for public in ("64:ff9b::5db8:d70e", "2002:5db8:d70e::1"):
        check_url(f"http://[{public}]/hook", NONE)


def test_public_address_passes_and_reports_what_was_checked():
    checked = check_url("https://hooks.example.com/x?y=1", NONE, resolver=PUBLIC)
    assert (checked.host, checked.port, [str(a) for a in checked.addresses]) == (
        "hooks.example.com",
        443,
        ["93.184.215.14"],
    )


def test_a_name_resolving_to_a_private_address_is_refused():
    resolve = resolver_for({"evil.example.com": ["10.0.0.7"], "mixed.example.com": ["93.184.215.14", "127.0.0.1"]})
    with pytest.raises(UnsafeUrl, match=r"evil.example.com \(10.0.0.7\)"):
        check_url("https://evil.example.com/", NONE, resolver=resolve)
    with pytest.raises(UnsafeUrl, match=r"127\.0\.0\.1"):  # every answer must be acceptable
        check_url("https://mixed.example.com/", NONE, resolver=resolve)


@pytest.mark.parametrize(
    ("url", "allow"),
    [
        ("http://127.0.0.1:9000/hook", "127.0.0.1/32"),
        ("http://10.1.2.3/hook", "10.0.0.0/8"),
        ("http://169.254.169.254/", "169.254.169.254/32"),
        ("http://[::ffff:127.0.0.1]/", "127.0.0.1/32"),
    ],
)
def test_allow_list_admits_exactly_its_networks(url, allow):
    settings = Settings(webhook_allow=allow)
    check_url(url, settings.allowed_networks)
    with pytest.raises(UnsafeUrl):
        check_url(
            url.replace("127.0.0.1", "127.0.0.2")
            .replace("10.1.2.3", "192.168.0.1")
            .replace("169.254.169.254", "169.254.169.253"),
            settings.allowed_networks,
        )


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://example.com/x", "http"),
        ("file:///etc/passwd", "http"),
        ("gopher://127.0.0.1:6379/", "http"),
        ("https://user:pw@hooks.example.com/", "credentials"),
        ("https:///nohost", "no host"),
        ("http://[::1/", "malformed"),
        ("https://nonexistent.invalid/", "does not resolve"),
    ],
)
def test_malformed_and_other_schemes_are_refused(url, message):
    with pytest.raises(UnsafeUrl, match=message):
        check_url(url, NONE, resolver=PUBLIC)


def test_bad_allow_list_is_a_configuration_error():
    with pytest.raises(ValueError, match="not a network"):
        Settings(webhook_allow="127.0.0.1/33")


def test_send_refuses_at_send_time_and_never_connects():
    receiver = Receiver().start()
    try:
        result = send_webhook(receiver.url, None, "msg_1", {"a": 1}, NONE, timeout_s=5)
        assert not result.ok and not result.retryable and "non-public" in (result.error or "")
        assert receiver.hits == 0
    finally:
        receiver.stop()


def test_sender_connects_to_the_checked_address_and_keeps_the_host_name():
    """DNS is consulted once, by the check; the request goes to that address with the original Host."""
    receiver = Receiver().start()
    calls: list[str] = []

    def resolve(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"]

    try:
        result = send_webhook(
            f"http://hooks.internal.test:{receiver.port}/hook?x=1",
            None,
            "msg_2",
            {"a": 1},
            LOOPBACK,
            timeout_s=5,
            resolver=resolve,
        )
        assert result.ok, result.error
        assert calls == ["hooks.internal.test"]
        (req,) = receiver.requests
        assert req.headers["host"] == f"hooks.internal.test:{receiver.port}" and req.path == "/hook?x=1"
        assert req.headers["webhook-id"] == "msg_2" and "webhook-signature" not in req.headers
    finally:
        receiver.stop()


def test_redirects_are_not_followed():
    receiver = Receiver(status=302, location="http://169.254.169.254/latest/meta-data/").start()
    try:
        result = send_webhook(receiver.url, None, "msg_3", {"a": 1}, LOOPBACK, timeout_s=5)
        assert not result.ok and not result.retryable and "redirect" in (result.error or "")
        assert receiver.hits == 1
    finally:
        receiver.stop()


def test_apprise_urls_with_hosts_are_checked_and_local_services_refused():
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_apprise_url("json://127.0.0.1:8080/hook", NONE)
    check_apprise_url("json://127.0.0.1:8080/hook", LOOPBACK)
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_apprise_url("ntfy://10.0.0.2/topic", NONE)
    with pytest.raises(UnsafeUrl, match="non-public"):
        check_apprise_url(
            "mailtos://user:pw@example.com?smtp=10.0.0.1&to=a@example.com",
            NONE,
            resolver=resolver_for({"example.com": ["93.184.215.14"]}),
        )
    with pytest.raises(UnsafeUrl, match=r"'syslog://' is not accepted"):
        check_apprise_url("syslog://", NONE)
    with pytest.raises(UnsafeUrl, match=r"'nosuchscheme://' is not accepted"):
        check_apprise_url("nosuchscheme://x", NONE)
    # Vendor services talk to their own public API whatever the URL's tokens look like.
    check_apprise_url("slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ", NONE)
    check_apprise_url("tgram://123456789:abcdefg_hijklmnop/12315544", NONE)
    check_apprise_url("ntfy://mytopic", NONE)


def test_apprise_delivers_to_an_allow_listed_json_endpoint():
    receiver = Receiver().start()
    try:
        url = f"json://127.0.0.1:{receiver.port}/hook"
        refused = send_apprise(url, "t", "b", NONE)
        assert not refused.ok and receiver.hits == 0
        sent = send_apprise(url, "[FIRING] H100", "min of H100 below 2.00", LOOPBACK)
        assert sent.ok, sent.error
        assert receiver.requests[0].json["title"] == "[FIRING] H100"
    finally:
        receiver.stop()


def test_https_is_pinned_to_the_checked_address_with_sni_and_certificate_name_kept():
    import httpx

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    result = send_webhook(
        "https://hooks.example.com/in/abc",
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        "msg_9",
        {"a": 1},
        NONE,
        timeout_s=5,
        resolver=PUBLIC,
        transport=httpx.MockTransport(handler),
    )
    assert result.ok
    (req,) = seen
    assert str(req.url) == "https://93.184.215.14/in/abc"
    assert req.headers["host"] == "hooks.example.com"
    assert req.extensions["sni_hostname"] == "hooks.example.com"  # TLS verifies the name, not the IP
    assert req.headers["webhook-signature"].startswith("v1,")
