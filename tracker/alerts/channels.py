"""Notification channels: signed webhooks (Standard Webhooks) and Apprise URLs, behind one `send`.

Webhooks: the JSON body is signed with HMAC-SHA256 as Standard Webhooks specifies (headers
`webhook-id` = the message's idempotency key, `webhook-timestamp` = Unix seconds of this attempt,
`webhook-signature` = `v1,<base64 HMAC(secret, id.timestamp.body)>`), so a receiver can verify it
and drop duplicates. The request goes to the address the SSRF check approved (Host header and TLS
SNI keep the name), never follows redirects, and times out quickly.

Apprise (Slack, Discord, Telegram, ntfy, e-mail, …) uses `requests` underneath, so the address cannot
be pinned: its URL is checked when saved and again before every send, and redirects are disabled.
Services whose endpoint is the vendor's fixed public API are accepted as they are; any service whose
URL names a host is checked like a webhook; local-only services (syslog, dbus, desktop) are refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from tracker.alerts.ssrf import Resolver, UnsafeUrl, check_host, check_url, system_resolver
from tracker.config import Network

CHANNEL_KINDS = ("webhook", "apprise")
USER_AGENT = "gpu-price-tracker-alerts/0.1"
SECRET_PREFIX = "whsec_"
# Apprise services that only ever talk to the vendor's own public API (the URL's "host" is a token).
FIXED_ENDPOINT_SCHEMES = {
    "slack", "discord", "tgram", "msteams", "workflow", "workflows", "pover", "pbul", "pagerduty",
    "opsgenie", "pushed", "join", "twilio", "signal_cloud", "spush", "line", "mastodon_cloud",
}
# Hosts an Apprise plugin may carry; each non-empty one is checked.
_APPRISE_HOST_ATTRS = ("host", "smtp_host")


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
        key = base64.b64decode(secret[len(SECRET_PREFIX):], validate=True)
    except binascii.Error:
        raise ValueError("webhook secret must be whsec_ followed by base64") from None
    if not 16 <= len(key) <= 64:
        raise ValueError("webhook secret must decode to 16-64 bytes")
    return key


def sign(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(secret: str, headers: dict[str, str], body: bytes, *, now: float | None = None,
           tolerance_s: int = 300) -> bool:
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


def check_apprise_url(url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver) -> Any:
    """Validate an Apprise URL; returns the instantiated plugin. Raises UnsafeUrl."""
    import apprise

    plugin = apprise.Apprise.instantiate(url.strip(), suppress_exceptions=True)
    if plugin is None:
        raise UnsafeUrl("not a notification URL Apprise understands (see https://github.com/caronc/apprise)")
    schemes = {s for attr in ("protocol", "secure_protocol") for s in _as_set(getattr(plugin, attr, None))}
    if schemes & FIXED_ENDPOINT_SCHEMES:
        return plugin
    if "ntfy" in schemes and not getattr(plugin, "host", ""):
        return plugin  # ntfy://topic is the public ntfy.sh
    hosts = [h for h in (getattr(plugin, a, None) for a in _APPRISE_HOST_ATTRS) if isinstance(h, str) and h]
    if not hosts:
        raise UnsafeUrl(f"Apprise service {sorted(schemes)[0] if schemes else url!r} is local-only or names no "
                        "host; it cannot be used as an alert channel")
    port = getattr(plugin, "port", None) or (443 if getattr(plugin, "secure", False) else 80)
    for host in dict.fromkeys(hosts):
        check_host(host, int(port), allow, resolver=resolver, what="Apprise URL")
    return plugin


def check_channel(kind: str, url: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver) -> None:
    if kind == "webhook":
        check_url(url, allow, resolver=resolver)
    elif kind == "apprise":
        check_apprise_url(url, allow, resolver=resolver)
    else:
        raise UnsafeUrl(f"channel type must be one of {', '.join(CHANNEL_KINDS)}, got {kind!r}")


def _as_set(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, list | tuple | set):
        return {v for v in value if isinstance(v, str)}
    return set()


# ---------------------------------------------------------------------------------------------- sending


def send_webhook(
    url: str, secret: str | None, msg_id: str, payload: dict[str, Any], allow: Sequence[Network], *,
    timeout_s: float, resolver: Resolver = system_resolver, now: datetime | None = None,
    transport: httpx.BaseTransport | None = None,
) -> SendResult:
    try:
        checked = check_url(url, allow, resolver=resolver)
    except UnsafeUrl as exc:
        # A name that stopped resolving may come back; a refused address will not.
        return SendResult(ok=False, retryable="does not resolve" in str(exc), error=str(exc))
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
        with httpx.Client(timeout=timeout_s, follow_redirects=False, trust_env=False, transport=transport) as client:
            response = client.post(target, content=body, headers=headers, extensions=extensions)
    except httpx.HTTPError as exc:
        return SendResult(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    code = response.status_code
    if 200 <= code < 300:
        return SendResult(ok=True, status_code=code)
    if 300 <= code < 400:
        location = response.headers.get("location")
        return SendResult(ok=False, retryable=False, status_code=code,
                          error=f"HTTP {code}: redirects are not followed (Location: {location})")
    retryable = code >= 500 or code in (408, 409, 425, 429)
    return SendResult(ok=False, retryable=retryable, status_code=code, error=f"HTTP {code}: {response.text[:200]}")


def send_apprise(
    url: str, title: str, body: str, allow: Sequence[Network], *, resolver: Resolver = system_resolver,
    notify_type: str = "info",
) -> SendResult:
    import apprise

    try:
        plugin = check_apprise_url(url, allow, resolver=resolver)
    except UnsafeUrl as exc:
        return SendResult(ok=False, retryable="does not resolve" in str(exc), error=str(exc))
    if hasattr(plugin, "redirects"):
        plugin.redirects = False
    notifier = apprise.Apprise()
    notifier.add(plugin)
    try:
        sent = notifier.notify(title=title, body=body, notify_type=notify_type)
    except Exception as exc:  # a plugin bug must not kill the deliverer
        return SendResult(ok=False, retryable=True, error=f"{type(exc).__name__}: {exc}"[:500])
    if sent:
        return SendResult(ok=True)
    return SendResult(ok=False, retryable=True, error="Apprise reported the notification as not sent")
