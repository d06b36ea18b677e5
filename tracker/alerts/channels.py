"""Notification channels: signed webhooks (Standard Webhooks) and Apprise URLs, behind one `send`.

Webhooks: the JSON body is signed with HMAC-SHA256 as Standard Webhooks specifies (headers
`webhook-id` = the message's idempotency key, `webhook-timestamp` = Unix seconds of this attempt,
`webhook-signature` = `v1,<base64 HMAC(secret, id.timestamp.body)>`), so a receiver can verify it
and drop duplicates. The request goes to the address the SSRF check approved (Host header and TLS
SNI keep the name), never follows redirects, and times out quickly.

Apprise (Slack, Discord, Telegram, ntfy, e-mail, …): only the schemes in `APPRISE_SCHEMES` are
accepted, because for those we know every connection the plugin makes is one the egress
(`tracker.alerts.egress`) pins: HTTP(S) through `requests`, or SMTP through `smtplib`. Every other
scheme (XMPP, MQTT, IRC, syslog, desktop notifications, websocket services, …) is refused when the
rule is saved (error on `channels[i].url`) and again at send time. The accepted schemes, by where
they connect:

- the URL names the server; its host is checked when the rule is saved, and every connection is
  checked again when sending: `json(s)`, `form(s)`, `xml(s)` (custom HTTP), `ntfy(s)`
  (`ntfy://topic` without a host is ntfy.sh), `gotify(s)`, `matrix(s)` (.well-known discovery
  included: the homeserver it names is checked when connected to), `mmost(s)` (Mattermost),
  `rocket(s)` (Rocket.Chat), `apprise(s)` (Apprise API), `workflow(s)` (Power Automate / Teams
  workflows: the host is the user's, not a fixed Microsoft endpoint);
- the URL holds tokens and the plugin talks to the vendor's public API, checked when sending like
  any other connection: `slack`, `discord`, `tgram` (Telegram), `pover` (Pushover), `pbul`
  (Pushbullet), `pagerduty`, `opsgenie`, `pushed`, `join`, `twilio`, `spush` (SimplePush), `line`;
- e-mail over SMTP; the SMTP server is checked when the rule is saved, and its connection
  (STARTTLS and SMTPS included) is pinned when sending: `mailto`, `mailtos`.

Every send, webhook or Apprise, runs inside one `Egress`: each name is resolved once, every address
is judged, sockets go to a judged address only, and redirects are not followed.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import hmac
import ipaddress
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from tracker.alerts.egress import Egress
from tracker.alerts.ssrf import Resolver, UnsafeUrl, check_host, check_url, system_resolver
from tracker.config import Network

CHANNEL_KINDS = ("webhook", "apprise")
USER_AGENT = "gpu-price-tracker-alerts/0.1"
SECRET_PREFIX = "whsec_"

# Where an accepted Apprise scheme connects (see the module docstring).
URL_HOST = "url-host"  # the URL's host is the server
VENDOR = "vendor"  # the vendor's public API; the URL carries tokens
SMTP = "smtp"  # an SMTP server (`?smtp=` or the address's domain)
APPRISE_SCHEMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "json",
            "jsons",
            "form",
            "forms",
            "xml",
            "xmls",
            "ntfy",
            "ntfys",
            "gotify",
            "gotifys",
            "matrix",
            "matrixs",
            "mmost",
            "mmosts",
            "rocket",
            "rockets",
            "apprise",
            "apprises",
            "workflow",
            "workflows",
        ),
        URL_HOST,
    ),
    **dict.fromkeys(
        (
            "slack",
            "discord",
            "tgram",
            "pover",
            "pbul",
            "pagerduty",
            "opsgenie",
            "pushed",
            "join",
            "twilio",
            "spush",
            "line",
        ),
        VENDOR,
    ),
    "mailto": SMTP,
    "mailtos": SMTP,
}
# ntfy without a host is the public ntfy.sh service.
_HOST_OPTIONAL = {"ntfy", "ntfys"}


@dataclass(frozen=True)
class SendResult:
    ok: bool
    retryable: bool = False
    status_code: int | None = None
    error: str | None = None


def new_webhook_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a `whsec_<base64>` secret. Raises ValueError naming what is wrong."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"webhook secret must start with {SECRET_PREFIX!r}")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error:
        raise ValueError("webhook secret must be whsec_ followed by base64") from None
    if not 16 <= len(key) <= 64:
        raise ValueError("webhook secret must decode to 16-64 bytes")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(
    secret: str, headers: dict[str, str], body: bytes, *, now: float | None = None, tolerance_s: int = 300
) -> bool:
    """A receiver's check (used by tests and documented for users)."""
    lower = {k.lower(): v for k, v in headers.items()}
    msg_id, ts = lower.get("webhook-id", ""), lower.get("webhook-timestamp", "")
    if not msg_id or not ts.isdigit():
        return False
    if abs((now if now is not None else time.time()) - int(ts)) > tolerance_s:
        return False
    expected = sign(secret, msg_id, int(ts), body).split(",", 1)[1]
    given = [s.split(",", 1)[1] for s in lower.get("webhook-signature", "").split() if s.startswith("v1,")]
    return any(hmac.compare_digest(expected, g) for g in given)


def body_bytes(payload: dict[str, Any]) -> bytes:
    # Deterministic bytes: a retry of the same message signs and sends the same body.
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# ---------------------------------------------------------------------------------------------- checks


def apprise_scheme(url: str) -> str:
    """The URL's scheme if it is one of `APPRISE_SCHEMES`. Raises UnsafeUrl listing the accepted ones."""
    text = url.strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else ""
    if scheme not in APPRISE_SCHEMES:
        shown = f"{scheme}://" if scheme else text[:40]
        raise UnsafeUrl(
            f"Apprise service {shown!r} is not accepted as an alert channel (only services whose connections "
            f"the server can check and pin are); accepted: {', '.join(sorted(APPRISE_SCHEMES))}"
        )
    return scheme


def check_apprise_url(url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver) -> Any:
    """Validate an Apprise URL; returns the instantiated plugin. Raises UnsafeUrl.

    Checks the server the URL names. Connections a plugin makes on its own (a vendor's API, a
    Matrix homeserver found by discovery) are checked by the egress when it makes them.
    """
    import apprise

    scheme = apprise_scheme(url)
    plugin = apprise.Apprise.instantiate(url.strip(), suppress_exceptions=True)
    if plugin is None:
        raise UnsafeUrl(f"not a valid {scheme}:// notification URL (see https://github.com/caronc/apprise)")
    kind = APPRISE_SCHEMES[scheme]
    if kind == VENDOR:
        return plugin
    host = getattr(plugin, "smtp_host" if kind == SMTP else "host", None) or getattr(plugin, "host", None)
    if not isinstance(host, str) or not host:
        if scheme in _HOST_OPTIONAL:
            return plugin
        raise UnsafeUrl(f"Apprise URL {scheme}:// names no server")
    port = getattr(plugin, "port", None) or (443 if getattr(plugin, "secure", False) else 80)
    check_host(host, int(port), allow, resolver=resolver, what="Apprise URL")
    return plugin


def check_channel(kind: str, url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver) -> None:
    if kind == "webhook":
        check_url(url, allow, resolver=resolver)
    elif kind == "apprise":
        check_apprise_url(url, allow, resolver=resolver)
    else:
        raise UnsafeUrl(f"channel type must be one of {', '.join(CHANNEL_KINDS)}, got {kind!r}")


def needed_networks(
    kind: str, url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver
) -> str | None:
    """The networks of `allow` an accepted channel needs (None for a public one), as stored with the channel:
    the deliverer allows exactly these for it, whatever its own TRACKER_WEBHOOK_ALLOW says. One network if
    one suffices, else the whole list the channel was accepted under."""
    try:
        check_channel(kind, url, (), resolver=resolver)
        return None
    except UnsafeUrl:
        pass
    for network in allow:
        try:
            check_channel(kind, url, (network,), resolver=resolver)
            return str(network)
        except UnsafeUrl:
            continue
    return ",".join(str(n) for n in allow) or None


def stored_networks(text: str | None) -> tuple[Network, ...]:
    """The networks a channel stored (`needed_networks`); an unreadable entry allows nothing."""
    out: list[Network] = []
    for part in (text or "").split(","):
        with contextlib.suppress(ValueError):
            if part.strip():
                out.append(ipaddress.ip_network(part.strip(), strict=False))
    return tuple(out)


def _refused(exc: UnsafeUrl) -> SendResult:
    # A name that stopped resolving may come back; a refused address will not.
    return SendResult(ok=False, retryable="does not resolve" in str(exc), error=str(exc))


# ---------------------------------------------------------------------------------------------- sending


def send_webhook(
    url: str,
    secret: str | None,
    msg_id: str,
    payload: dict[str, Any],
    allow: Sequence[Network],
    *,
    timeout_s: float,
    resolver: Resolver = system_resolver,
    now: datetime | None = None,
    transport: httpx.BaseTransport | None = None,
) -> SendResult:
    egress = Egress(allow, resolver=resolver, timeout_s=timeout_s)
    try:
        checked = egress.check_url(url)
    except UnsafeUrl as exc:
        return _refused(exc)
    body = body_bytes(payload)
    timestamp = int(now.timestamp() if now else time.time())
    headers = {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
    }
    if secret:
        headers["webhook-signature"] = sign(secret, msg_id, timestamp, body)
    # Connect to the approved address, not to whatever the name resolves to a moment later.
    ip = checked.addresses[0]
    default_port = 443 if checked.scheme == "https" else 80
    parts = urlsplit(checked.url)
    ip_host = f"[{ip}]" if ip.version == 6 else str(ip)
    target = urlunsplit((checked.scheme, f"{ip_host}:{checked.port}", parts.path or "/", parts.query, ""))
    headers["host"] = checked.host if checked.port == default_port else f"{checked.host}:{checked.port}"
    extensions = {"sni_hostname": checked.host} if checked.scheme == "https" else {}
    try:
        # Inside the egress, a socket to anything but the checked address is refused.
        with (
            egress.active(),
            httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False, transport=transport) as client,
        ):
            response = client.post(target, content=body, headers=headers, extensions=extensions)
    except httpx.HTTPError as exc:
        return SendResult(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    code = response.status_code
    if 200 <= code < 300:
        return SendResult(ok=True, status_code=code)
    if 300 <= code < 400:
        location = response.headers.get("location")
        return SendResult(
            ok=False,
            retryable=False,
            status_code=code,
            error=f"HTTP {code}: redirects are not followed (Location: {location})",
        )
    retryable = code >= 500 or code in (408, 409, 425, 429)
    return SendResult(ok=False, retryable=retryable, status_code=code, error=f"HTTP {code}: {response.text[:200]}")


def send_apprise(
    url: str,
    title: str,
    body: str,
    allow: Sequence[Network],
    *,
    resolver: Resolver = system_resolver,
    notify_type: str = "info",
    timeout_s: float = 10.0,
) -> SendResult:
    """Send one Apprise notification with every connection going through one `Egress`."""
    import apprise

    egress = Egress(allow, resolver=resolver, timeout_s=timeout_s)
    try:
        # Resolves through the egress, so the connections below reuse these very answers.
        plugin = check_apprise_url(url, allow, resolver=egress.resolve)
    except UnsafeUrl as exc:
        return _refused(exc)
    if hasattr(plugin, "redirects"):
        plugin.redirects = False  # the egress refuses them anyway; this keeps the plugin from trying
    notifier = apprise.Apprise()
    notifier.add(plugin)
    try:
        with egress.active():
            sent = notifier.notify(title=title, body=body, notify_type=notify_type)
    except Exception as exc:  # a plugin bug must not kill the deliverer
        return SendResult(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    if sent:
        return SendResult(ok=True)
    refusals = egress.refusals
    if refusals:
        # Refused by policy (an address, a redirect): retrying cannot help, unless a name did not resolve.
        return SendResult(
            ok=False, retryable=all("does not resolve" in r for r in refusals), error="; ".join(refusals)[:500]
        )
    return SendResult(ok=False, retryable=True, error="Apprise reported the notification as not sent")
