"""Cassettes: recorded request/response pairs that let any provider run offline.

Format (JSON)::

    {
      "provider": "vastai",
      "recorded_at": "2026-11-29T00:00:00Z",
      "source": "recorded" | "schema-faithful sample from <public source>",
      "interactions": [
        {"request":  {"method": "POST", "url": "https://…/path?a=1", "body": {…} | null},
         "response": {"status": 200, "headers": {"content-type": "application/json"},
                      "json": {…}  |  "text": "raw body"}}
      ]
    }

A request matches an interaction with the same method, scheme/host/path, query parameters (as a
multiset; a recorded value of "<redacted>" matches anything) and, when the recorded body is not null,
the same JSON body. Identical requests consume matching interactions in order (so a 429 followed by a
200 replays as a retry), and the last match repeats once all are used.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import NotRequired, TypeAlias, TypedDict
from urllib.parse import parse_qsl, urlsplit

import httpx

__all__ = [
    "REDACTED",
    "SECRET_HEADERS",
    "SECRET_PARAMS",
    "Cassette",
    "CassetteError",
    "CassetteJSON",
    "CassetteMiss",
    "Interaction",
    "InteractionJSON",
    "JSONValue",
    "RecordingTransport",
    "ReplayTransport",
    "RequestJSON",
    "ResponseJSON",
    "bundled_cassette",
]

JSONValue: TypeAlias = "dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None"


class RequestJSON(TypedDict):
    method: str
    url: str
    body: JSONValue


class ResponseJSON(TypedDict):
    status: int
    headers: dict[str, str]
    json: NotRequired[JSONValue]  # exactly one of json / text
    text: NotRequired[str]


class InteractionJSON(TypedDict):
    request: RequestJSON
    response: ResponseJSON


class CassetteJSON(TypedDict):
    """A cassette file as written by `Cassette.save` (see the module docstring)."""

    provider: str
    recorded_at: str
    source: str
    interactions: list[InteractionJSON]


REDACTED = "<redacted>"
SECRET_HEADERS = {
    "authorization",
    "api-key",
    "api_key",
    "x-api-key",
    "x-apitoken",
    "cookie",
    "x-crusoe-timestamp",
}
SECRET_PARAMS = {
    "key",
    "api_key",
    "apikey",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "password",
    "accesstoken",
    "encryptedaccesstoken",  # ABP logins (Denvr) answer a camelCase token
}


class CassetteError(Exception):
    pass


class CassetteMiss(CassetteError):
    """The provider sent a request the cassette has no answer for."""


def _split(url: str) -> tuple[str, list[tuple[str, str]]]:
    parts = urlsplit(url)
    base = f"{parts.scheme}://{parts.netloc}{parts.path}".rstrip("/")
    return base, sorted(parse_qsl(parts.query, keep_blank_values=True))


def _params_match(recorded: list[tuple[str, str]], actual: list[tuple[str, str]]) -> bool:
    if len(recorded) != len(actual):
        return False
    return all(rk == ak and rv in (REDACTED, av) for (rk, rv), (ak, av) in zip(recorded, actual, strict=True))


def _same(recorded: JSONValue, actual: JSONValue) -> bool:
    """Equal JSON, where a recorded "<redacted>" (a scrubbed secret) matches any value."""
    if recorded == REDACTED:
        return True
    if isinstance(recorded, dict) and isinstance(actual, dict):
        return recorded.keys() == actual.keys() and all(_same(v, actual[k]) for k, v in recorded.items())
    if isinstance(recorded, list) and isinstance(actual, list):
        return len(recorded) == len(actual) and all(_same(r, a) for r, a in zip(recorded, actual, strict=True))
    return recorded == actual


def _body_of(request: httpx.Request) -> JSONValue:
    raw = request.content
    if not raw:
        return None
    try:
        body: JSONValue = json.loads(raw)  # json.loads only ever builds JSONValue shapes
        return body
    except ValueError:
        return raw.decode("utf-8", "replace")


class _Pieces(httpx.AsyncByteStream, httpx.SyncByteStream):
    """A recorded body served in pieces of the size a network read brings, as a live answer streams in. Served
    whole, a replayed marketplace answer reached the streaming parser (providers.http.stream_json_items) as
    one piece, so every one of its items was decoded before the first was handed on: a transient of ~1.3 GB
    at 200,000 offers that no live scrape has."""

    PIECE = 64 * 1024

    def __init__(self, body: bytes) -> None:
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self._body), self.PIECE):
            yield self._body[start : start + self.PIECE]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self:
            yield piece


@dataclass(init=False)
class Interaction:
    """One recorded exchange. A JSON response is held either as decoded values (`json_body`) or, once
    `compact` has run, only as the bytes it is served as: a replayed marketplace answer (~77 MB of JSON at
    200,000 offers) costs several times that as Python objects, held for the whole scrape."""

    method: str
    url: str
    body: JSONValue
    status: int
    headers: dict[str, str]
    text: str | None
    uses: int

    def __init__(
        self,
        method: str,
        url: str,
        body: JSONValue,
        status: int,
        headers: dict[str, str],
        json_body: JSONValue = None,
        text: str | None = None,
        uses: int = 0,
    ) -> None:
        self.method, self.url, self.body, self.status, self.headers = method, url, body, status, headers
        self.text, self.uses = text, uses
        self._json: JSONValue = json_body
        self._encoded: bytes | None = None

    @property
    def json_body(self) -> JSONValue:
        """The recorded JSON response (decoded again from its bytes after `compact`)."""
        if self._json is None and self._encoded is not None:
            decoded: JSONValue = json.loads(self._encoded)
            return decoded
        return self._json

    @json_body.setter
    def json_body(self, value: JSONValue) -> None:
        self._json, self._encoded = value, None

    def encoded(self) -> bytes:
        """The JSON response as served (encoded once, then kept)."""
        if self._encoded is None:
            self._encoded = json.dumps(self._json).encode()
        return self._encoded

    def compact(self) -> None:
        """Keep a JSON response only as its bytes."""
        if self.text is None:
            self.encoded()
            self._json = None

    def matches(self, request: httpx.Request) -> bool:
        if request.method.upper() != self.method.upper():
            return False
        rec_base, rec_params = _split(self.url)
        act_base, act_params = _split(str(request.url))
        if rec_base != act_base or not _params_match(rec_params, act_params):
            return False
        return self.body is None or _same(self.body, _body_of(request))

    def response(self, request: httpx.Request) -> httpx.Response:
        headers = dict(self.headers)
        if self.text is not None:
            return httpx.Response(self.status, headers=headers, text=self.text, request=request)
        content = self.encoded()
        headers.setdefault("content-type", "application/json")
        headers["content-length"] = str(len(content))
        return httpx.Response(self.status, headers=headers, stream=_Pieces(content), request=request)

    def to_json(self) -> InteractionJSON:
        response: ResponseJSON = {"status": self.status, "headers": self.headers}
        if self.text is not None:
            response["text"] = self.text
        else:
            response["json"] = self.json_body
        return {"request": {"method": self.method, "url": self.url, "body": self.body}, "response": response}


@dataclass
class Cassette:
    provider: str
    interactions: list[Interaction]
    recorded_at: str = ""
    source: str = ""
    path: Path | None = None

    @classmethod
    def load(cls, path: str | Path) -> Cassette:
        path = Path(path)
        try:
            raw = json.loads(path.read_text())
        except FileNotFoundError:
            raise CassetteError(f"cassette not found: {path}") from None
        except ValueError as exc:
            raise CassetteError(f"cassette {path} is not valid JSON: {exc}") from None
        cassette = cls.from_json(raw, path)
        del raw  # the decoded tree goes before the scrape that replays it allocates its offers
        for interaction in cassette.interactions:
            interaction.compact()
        return cassette

    @classmethod
    def from_json(cls, raw: object, path: Path | None = None) -> Cassette:
        where = str(path) if path else "cassette"
        if not isinstance(raw, dict) or not isinstance(raw.get("interactions"), list):
            raise CassetteError(f"{where}: expected an object with an 'interactions' list")
        interactions = []
        for i, item in enumerate(raw["interactions"]):
            try:
                req, resp = item["request"], item["response"]
                interactions.append(
                    Interaction(
                        method=req["method"],
                        url=req["url"],
                        body=req.get("body"),
                        status=int(resp.get("status", 200)),
                        headers={k.lower(): str(v) for k, v in (resp.get("headers") or {}).items()},
                        json_body=resp.get("json"),
                        text=resp.get("text"),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise CassetteError(f"{where}: interaction {i} is malformed ({exc})") from None
        return cls(
            provider=str(raw.get("provider", "")),
            interactions=interactions,
            recorded_at=str(raw.get("recorded_at", "")),
            source=str(raw.get("source", "")),
            path=path,
        )

    def to_json(self) -> CassetteJSON:
        return {
            "provider": self.provider,
            "recorded_at": self.recorded_at,
            "source": self.source,
            "interactions": [i.to_json() for i in self.interactions],
        }

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2) + "\n")


class ReplayTransport(httpx.AsyncBaseTransport):
    """Serves a cassette; a request it cannot answer fails the run with a readable reason."""

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        for interaction in cassette.interactions:
            interaction.uses = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        matches = [i for i in self.cassette.interactions if i.matches(request)]
        if not matches:
            raise CassetteMiss(
                f"no recorded response for {request.method} {str(request.url).split('?', 1)[0]}"
                f" in {self.cassette.path or 'cassette'}"
            )
        unused = [i for i in matches if i.uses == 0]
        chosen = unused[0] if unused else matches[-1]
        chosen.uses += 1
        return chosen.response(request)


_BODY_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


@dataclass
class RecordingTransport(httpx.AsyncBaseTransport):
    """Passes requests to the network and keeps scrubbed copies of each exchange."""

    inner: httpx.AsyncBaseTransport = field(default_factory=httpx.AsyncHTTPTransport)
    interactions: list[Interaction] = field(default_factory=list)
    secrets: Iterable[str] = ()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        text = body.decode("utf-8", "replace")
        json_body: JSONValue = None
        is_json = "json" in response.headers.get("content-type", "")
        if is_json:
            try:
                json_body = json.loads(text)
            except ValueError:
                is_json = False
        self.interactions.append(
            Interaction(
                method=request.method,
                url=self._scrub_url(str(request.url)),
                body=self._scrub(_body_of(request)),
                status=response.status_code,
                headers={"content-type": response.headers.get("content-type", "")},
                json_body=self._scrub(json_body) if is_json else None,
                text=None if is_json else self._scrub_text(text),
            )
        )
        # `body` is already decoded: pass it on without the encoding headers, or the client decodes twice.
        headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in _BODY_HEADERS]
        return httpx.Response(response.status_code, headers=headers, content=body, request=request)

    def _scrub_url(self, url: str) -> str:
        parts = urlsplit(url)
        params = [(k, REDACTED if k.lower() in SECRET_PARAMS else v) for k, v in parse_qsl(parts.query, True)]
        query = "&".join(f"{k}={v}" for k, v in params)
        return f"{parts.scheme}://{parts.netloc}{parts.path}" + (f"?{query}" if query else "")

    def _scrub_text(self, text: str) -> str:
        for secret in self.secrets:
            if secret:
                text = text.replace(secret, REDACTED)
        return text

    def _scrub(self, value: JSONValue) -> JSONValue:
        if isinstance(value, str):
            return self._scrub_text(value)
        if isinstance(value, dict):
            return {k: REDACTED if k.lower() in SECRET_PARAMS else self._scrub(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._scrub(v) for v in value]
        return value

    def cassette(self, provider: str) -> Cassette:
        return Cassette(
            provider=provider,
            interactions=self.interactions,
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
            source="recorded",
        )


def bundled_cassette(provider: str) -> Path:
    """The cassette shipped inside the package for `--demo` and the tests."""
    return Path(str(resources.files("providers") / "cassettes" / f"{provider}.json"))
