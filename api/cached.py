"""Answers served as memoised, already-encoded JSON, invalidated by every ingest.

A cached endpoint reads the data version — bumped by every ingest inside its transaction, so any
process sees the invalidation (`tracker.market.live`) — with one primary-key SELECT on an autocommit connection
(no ORM session, no BEGIN/COMMIT, no pre-ping), then looks the encoded body up in the app's live table
(`request.app.state.live`, a `tracker.market.live.LiveOffers` injected by `create_app`) under
(database, version, endpoint, normalised parameters[, minute]). Only a miss opens a session and computes,
in the threadpool; a hit runs on the event loop without a thread hop, neither validating nor encoding:
FastAPI gets a ready `Response`. Bodies are encoded exactly as FastAPI's `jsonable_encoder` +
`JSONResponse` would (Decimal as a JSON number, datetimes in ISO 8601, compact separators).

Version reads are coalesced: a request waits for a read that *starts after it arrived* — so it sees every
ingest committed before it, exactly as a read of its own would — and shares that read with every request
that arrived before it started. Under load that is one round trip per batch of requests, not per request.

Answers that depend on "now" (freshness, ages, ranges ending now) carry the minute in their key, as the
market snapshot always has; a request's own `as_of` is spliced into the cached bytes, so it stays exact.
`market_answer` is that whole pattern, once, for the routes that answer from the live market.

While a large table is rebuilt in the background after an ingest (`LiveOffers.served` answers from the
previous version), a miss would compute on the old table at a new minute, competing with the rebuild for
the interpreter (seconds at 200,000 offers). Instead the newest answer to the same route and parameters,
computed at most `STAND_IN_S` ago, stands in for it (stale-while-revalidate, the revalidation being the
rebuild itself: the first request after the swap computes on the new table). A stand-in is never newer
data than the table being served, names the data version it comes from like every answer, and is only
used while a rebuild is in flight: with a table the database matches, a request always gets its own
minute's answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time as clock
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any, Literal

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.encoders import decimal_encoder, jsonable_encoder
from fastapi.responses import Response
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session

from tracker import money
from tracker.market import freshness
from tracker.storage.engine import session_scope
from tracker.storage.versions import VersionReads, data_version

# How old an answer may be to stand in while the table is rebuilt. Freshness is measured in hours (an
# offer is stale after 6 h unscraped), so five minutes moves an answer's ages, rarely its rows; a rebuild
# takes seconds, and with requests arriving the stand-in is this minute's answer or the last one.
STAND_IN_S = 300.0
STAND_IN_ENTRIES = 512
STAND_IN_BYTES = 64 * 1024 * 1024  # bodies are a few KB to a few hundred KB (a market snapshot)


class StandIns:
    """The newest encoded answer per route and parameters (time left out of the key), bounded (LRU) in
    entries and bytes."""

    def __init__(
        self, entries: int = STAND_IN_ENTRIES, max_bytes: int = STAND_IN_BYTES, max_age_s: float = STAND_IN_S
    ) -> None:
        self.entries, self.max_bytes, self.max_age_s = entries, max_bytes, max_age_s
        self.bytes = 0
        self.served = 0  # answers served as stand-ins (tests and metrics read it)
        self._answers: OrderedDict[Hashable, tuple[int, float, bytes]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, family: Hashable, version: int, body: bytes) -> None:
        with self._lock:
            previous = self._answers.get(family)
            if previous is not None and previous[0] > version:
                return  # never replace an answer by one from an older table
            if previous is not None:
                self.bytes -= len(previous[2])
            self._answers[family] = (version, clock.monotonic(), body)
            self._answers.move_to_end(family)
            self.bytes += len(body)
            while len(self._answers) > self.entries or self.bytes > self.max_bytes:
                self.bytes -= len(self._answers.popitem(last=False)[1][2])

    def get(self, family: Hashable, version: int) -> bytes | None:
        """An answer from `version` or older, computed at most `max_age_s` ago."""
        with self._lock:
            found = self._answers.get(family)
            if found is None or found[0] > version or clock.monotonic() - found[1] > self.max_age_s:
                return None
            self.served += 1
            return found[2]


# Answers computed at once, per process: the computing threads share one interpreter lock and the cores,
# so many more at once only interleave them (every request slower) and multiply their working memory (a
# ranking of 200,000 offers holds tens of MB of arrays: 40 threadpool threads at once held 2 GiB). Twice
# the cores, so a slow answer (a year of history) does not hold up every other. Requests past it wait on
# the event loop, in arrival order, holding no thread and no memory.
COMPUTE_SLOTS = max(4, 2 * (os.cpu_count() or 2))


async def computed(request: Request, work: Callable[[], bytes]) -> bytes:
    """`work()` in the threadpool, once one of the process's compute slots is free (`COMPUTE_SLOTS`, or the
    settings' `api_compute_slots`)."""
    state, loop = request.app.state, asyncio.get_running_loop()
    slots: tuple[asyncio.AbstractEventLoop, asyncio.Semaphore] | None = getattr(state, "compute_slots", None)
    if slots is None or slots[0] is not loop:  # one per event loop (a test client starts its own)
        slots = state.compute_slots = (loop, asyncio.Semaphore(state.settings.api_compute_slots or COMPUTE_SLOTS))
    async with slots[1]:
        body: bytes = await run_in_threadpool(work)
    return body


def stand_ins(request: Request) -> StandIns:
    state = request.app.state
    found: StandIns | None = getattr(state, "stand_ins", None)
    if found is None:
        found = state.stand_ins = StandIns()
    return found


# Every reader, so disposing of an engine closes its readers' connections too.
_open_reads: weakref.WeakSet[VersionReads] = weakref.WeakSet()


def _close_reads(engine: Engine) -> None:
    for reads in list(_open_reads):
        if reads.engine is engine:
            reads.close()


def version_reads(request: Request) -> VersionReads:
    state, loop = request.app.state, asyncio.get_running_loop()
    reads: VersionReads | None = getattr(state, "version_reads", None)
    if reads is None or reads.loop is not loop or reads.engine is not state.engine:
        if reads is not None:
            reads.close()
        reads = state.version_reads = VersionReads(state.engine, loop, run_in_threadpool)
        _open_reads.add(reads)
        if not event.contains(state.engine, "engine_disposed", _close_reads):
            event.listen(state.engine, "engine_disposed", _close_reads)
    return reads


def _default(value: Any) -> Any:
    if isinstance(value, Decimal):
        # Most Decimals of an answer are money at six places: a float, as decimal_encoder makes any
        # Decimal with a negative exponent; tested here in ~0.1 µs instead of decimal_encoder's ~1 µs
        # `as_tuple` (a ranking's answer holds ~850 of them).
        return float(value) if value.same_quantum(money.QUANTUM) else decimal_encoder(value)
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return jsonable_encoder(value)


def encode(content: Any) -> bytes:
    """The bytes `JSONResponse(jsonable_encoder(content))` would send."""
    return json.dumps(
        content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"), default=_default
    ).encode("utf-8")


def minute(now: datetime) -> datetime:
    """The key part of answers that depend on the time: they are recomputed at most once a minute."""
    return now.replace(second=0, microsecond=0)


async def cached_body(
    request: Request,
    key: tuple[Hashable, ...],
    compute: Callable[[], Any],
    *,
    family: Hashable | None = None,
) -> bytes:
    """Encoded JSON (or the bytes `compute` returns) for `key` at the current data version.

    `compute` runs in the threadpool, once per key however many requests miss together; its errors
    propagate and are never cached. `family` is `key` without what makes it time-dependent (the minute):
    with it, a miss while the table is rebuilt is answered by the family's newest answer (module doc)."""
    engine, live = request.app.state.engine, request.app.state.live
    current = await version_reads(request).current()
    # The version the answer comes from: the database's, or while a large table is rebuilt in the
    # background, the previous one's (tracker.market.live), whose memoised answers stay valid meanwhile.
    version = live.served(engine, current)
    params = ("api", *key)
    peeked = live.peek(engine, version, params)
    if isinstance(peeked, bytes):
        return peeked

    def encoded() -> bytes:
        content = compute()
        return content if isinstance(content, bytes) else encode(content)

    if family is None:
        # Not memoised yet: computed once, whoever asks at the same time waits for that computation.
        return await computed(request, lambda: live.memo(engine, version, params, encoded))
    answers = stand_ins(request)

    def remembered() -> bytes:
        value: bytes = live.memo(engine, version, params, encoded)
        answers.put(family, version, value)
        return value

    if version != current and (stand_in := answers.get(family, version)) is not None:
        # Not recomputed now: an answer from the table being replaced would be dropped at the swap, and
        # computing it would slow the rebuild. If the rebuild fails, the stand-in ages out and the next
        # request computes on the served table again.
        return stand_in
    return await computed(request, remembered)


async def market_answer(
    request: Request,
    key: tuple[Hashable, ...],
    compute: Callable[[Session], Any],
    now: datetime,
    *,
    as_of: Literal["first", "last"] | None = None,
) -> bytes:
    """The encoded answer of a route that reads the live market at `now`.

    `compute` gets a session of its own; its answer is memoised under `key` plus the freshness rules and
    the minute (what makes it depend on the time). With `as_of`, the answer's own `as_of` is replaced by
    this request's, spliced in as the first or the last key: one cached answer serves the whole minute,
    each request stating the instant it was answered for."""
    engine = request.app.state.engine
    settings = request.app.state.settings

    def run() -> Any:
        with session_scope(engine) as session:
            result = compute(session)
        if as_of is not None and isinstance(result, dict):
            result.pop("as_of", None)  # the request's own, added below
        return result

    family = (*key, freshness.signature(settings))
    body = await cached_body(request, (*family, minute(now)), run, family=family)
    return body if as_of is None else with_field(body, "as_of", now, first=as_of == "first")


def with_field(body: bytes, name: str, value: Any, *, first: bool) -> bytes:
    """Add one field to an encoded JSON object, as the first or the last key."""
    field = encode(name) + b":" + encode(value)
    if body == b"{}":
        return b"{" + field + b"}"
    return b"{" + field + b"," + body[1:] if first else body[:-1] + b"," + field + b"}"


def json_response(body: bytes, status_code: int = 200) -> Response:
    return Response(content=body, status_code=status_code, media_type="application/json")


def answer(content: Any, status_code: int = 200) -> Response:
    """`content` encoded as FastAPI would (`encode`), sent as it is: a route's `response_model` documents
    the answer without re-serialising it, so datetimes and Decimals keep the encoding every route uses."""
    return json_response(encode(content), status_code)


__all__ = [
    "STAND_IN_S",
    "StandIns",
    "VersionReads",
    "answer",
    "cached_body",
    "data_version",
    "encode",
    "json_response",
    "market_answer",
    "minute",
    "with_field",
]
