"""Native currency: store reference rates, and convert a quote to USD at the rate of its observation's day.

Design (README "Native currency"): a price row keeps the amount as quoted, its currency and the rate its
USD figure was made with (copied from `fx_rates` when the row is written). Nothing ever recomputes a stored
USD figure, so re-fetching or revising rates moves no history. The rate of an observation is the latest
stored rate on or before the observation's (UTC) day, and no older than `MAX_RATE_AGE` for a live scrape;
without one the offer is invalid with the reason — never taken as USD. Offline runs (demo, replay) replay
recorded prices at whatever recorded rate is latest, and say its date on the row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from providers.fx.contract import MAX_USD_PER_UNIT, DailyRates
from tracker.money import to_money
from tracker.storage.bulk import upsert_rows
from tracker.storage.tables import FxRate

__all__ = [
    "MAX_RATE_AGE",
    "USD",
    "AppliedRate",
    "Conversion",
    "CurrencyError",
    "RateBook",
    "StoredRates",
    "convert",
    "currency_code",
    "latest_rates",
    "rate_problem",
    "store_rates",
]

USD = "USD"
# Reference rates are published on working days only: the longest regular gap is Easter (Thursday's rate
# is still the latest on Tuesday morning, five days on). A week leaves room for a day or two of failed
# fetches on top, and is still short enough that a EUR price is not converted at a rate the market has
# left behind (EUR/USD moves about 1 % in a typical week).
MAX_RATE_AGE = timedelta(days=7)
_CODE = re.compile(r"[A-Z]{3}")


class CurrencyError(ValueError):
    """A currency the tracker cannot convert: not an ISO 4217 code, or one without a usable rate."""


def currency_code(raw: object) -> str:
    """The ISO 4217 code a provider stated (case and spaces forgiven). Symbols and names are refused: "$"
    is USD, CAD, AUD, ... and "€"/"euro" are not what the contract asks for; guessing would be silent."""
    code = raw.strip().upper() if isinstance(raw, str) else ""
    if not _CODE.fullmatch(code):
        shown = raw if isinstance(raw, str) and raw.strip() else "(none)"
        raise CurrencyError(f"currency {shown!r} is not an ISO 4217 code (ambiguous or unknown)")
    return code


@dataclass(frozen=True, slots=True)
class AppliedRate:
    """The rate one observation is converted at, as copied onto the price row."""

    currency: str
    usd_per_unit: Decimal
    day: date
    source: str


@dataclass(frozen=True, slots=True)
class Conversion:
    """One quote in native units and in USD, each per hour (the whole offer) and per GPU-hour."""

    currency: str
    native_per_hour: Decimal
    native_per_gpu_hour: Decimal
    usd_per_hour: Decimal
    usd_per_gpu_hour: Decimal
    rate: AppliedRate | None  # None: quoted in USD

    def row_values(self) -> dict[str, Any]:
        """The native-currency columns of `offers` and `offer_prices`."""
        return dict(zip(NATIVE_COLUMNS, self.row_tuple(), strict=True))

    def row_tuple(self) -> tuple[Any, ...]:
        """`row_values`' values in `NATIVE_COLUMNS` order (for rows COPYed without a dict per row)."""
        rate = self.rate
        if rate is None:
            return (self.currency, self.native_per_hour, self.native_per_gpu_hour, None, None, None)
        return (self.currency, self.native_per_hour, self.native_per_gpu_hour, rate.usd_per_unit, rate.day, rate.source)


# The native-currency columns of `offers` and `offer_prices`, in `Conversion.row_tuple` order.
NATIVE_COLUMNS = ("currency", "price_native_per_hour", "price_native_per_gpu_hour", "fx_rate", "fx_date", "fx_source")


def convert(price_per_hour: Decimal, gpu_count: Decimal, rate: AppliedRate | None) -> Conversion:
    """Every figure rounded once, by `tracker.money`, from the exact inputs (the quote, the count, the rate).
    Native amounts follow the same six-place rule as USD ones."""
    if rate is None:
        usd, per_gpu = to_money(price_per_hour), to_money(price_per_hour / gpu_count)
        return Conversion(USD, usd, per_gpu, usd, per_gpu, None)
    return Conversion(
        currency=rate.currency,
        native_per_hour=to_money(price_per_hour),
        native_per_gpu_hour=to_money(price_per_hour / gpu_count),
        usd_per_hour=to_money(price_per_hour * rate.usd_per_unit),
        usd_per_gpu_hour=to_money(price_per_hour * rate.usd_per_unit / gpu_count),
        rate=rate,
    )


@dataclass
class RateBook:
    """The rates one batch is converted at, looked up once per currency for the observation's day."""

    day: date
    max_age: timedelta | None
    rates: dict[str, AppliedRate | str] = field(default_factory=dict)  # code → rate, or why there is none
    _memo: dict[str, AppliedRate | CurrencyError | None] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls, session: Session, currencies: Iterable[object], at: datetime, *, max_age: timedelta | None = MAX_RATE_AGE
    ) -> RateBook:
        book = cls(day=at.date(), max_age=max_age)
        for raw in currencies:
            try:
                code = currency_code(raw)
            except CurrencyError:
                continue  # `rate_for` gives the reason per offer
            if code != USD and code not in book.rates:
                book.rates[code] = book._lookup(session, code)
        return book

    @classmethod
    def empty(cls, day: date) -> RateBook:
        """No rates at all (validation without a database): only USD quotes are valid."""
        return cls(day=day, max_age=None)

    def _lookup(self, session: Session, code: str) -> AppliedRate | str:
        row = session.execute(
            select(FxRate.usd_per_unit, FxRate.rate_date, FxRate.source)
            .where(FxRate.currency == code, FxRate.rate_date <= self.day)
            .order_by(FxRate.rate_date.desc(), FxRate.source)
            .limit(1)
        ).first()
        if row is None:
            if session.scalar(select(func.count()).select_from(FxRate).where(FxRate.currency == code)):
                return f"no {code} rate on or before {self.day} is stored"
            return (
                f"no exchange rate for {code} is stored"
                " (an unknown currency, or rates never fetched: gpu-tracker fx update)"
            )
        usd_per_unit, day, source = row
        if self.max_age is not None and self.day - day > self.max_age:
            return (
                f"the latest {code} rate ({source}, {day}) is {(self.day - day).days} days older than the"
                f" observation; at most {self.max_age.days} are accepted"
            )
        return AppliedRate(code, usd_per_unit, day, source)

    def rate_for(self, raw: object) -> AppliedRate | None:
        """The rate for a stated currency (None for USD). Raises CurrencyError with the reason."""
        # A batch states one or two currencies over thousands of offers: each is checked once.
        key = raw if isinstance(raw, str) else repr(raw)
        if key not in self._memo:
            try:
                self._memo[key] = self._rate_for(raw)
            except CurrencyError as exc:
                self._memo[key] = exc
        found = self._memo[key]
        if isinstance(found, CurrencyError):
            raise CurrencyError(str(found))
        return found

    def _rate_for(self, raw: object) -> AppliedRate | None:
        code = currency_code(raw)
        if code == USD:
            return None
        found = self.rates.get(code, f"no exchange rate for {code} was looked up for this batch")
        if isinstance(found, str):
            raise CurrencyError(found)
        return found


# A reference rate that moves more than this in one step (against the latest stored rate of the previous
# 30 days) is held, not stored: the previous rate stays in use, the run reports the held one. The largest
# one-day moves of the currencies the ECB lists are ~15% (TRY, 2021); a ×1000 EUR/USD is an edited file.
MAX_RATE_MOVE = Decimal("0.25")
RATE_MOVE_LOOKBACK = timedelta(days=30)


@dataclass
class StoredRates:
    """What one fetch changed in `fx_rates`."""

    source: str
    days: list[date] = field(default_factory=list)
    inserted: int = 0
    revised: int = 0  # a day's rate the source changed since we stored it (a correction)
    unchanged: int = 0
    held: list[str] = field(default_factory=list)  # rates not stored, with the reason (the previous one is kept)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "days": [d.isoformat() for d in self.days],
            "inserted": self.inserted,
            "revised": self.revised,
            "unchanged": self.unchanged,
            "held": self.held,
        }


def rate_problem(code: str, rate: Decimal, day: date, previous: tuple[date, Decimal] | None, today: date) -> str | None:
    """Why a fetched rate is not stored: outside what the Rate column holds, dated in the future, or a
    move past MAX_RATE_MOVE from the previous stored rate. None: store it."""
    if not (rate.is_finite() and 0 < rate < MAX_USD_PER_UNIT):
        return f"{code} {day}: USD per unit {rate:.6g} is outside (0, {MAX_USD_PER_UNIT:.0e})"
    if day > today + timedelta(days=1):
        return f"{code} {day}: dated after tomorrow ({today})"
    if previous is not None and day - previous[0] <= RATE_MOVE_LOOKBACK and previous[0] < day:
        move = rate / previous[1] - 1
        if abs(move) > MAX_RATE_MOVE:
            return (
                f"{code} {day}: {rate} is a {move:+.0%} move from {previous[1]} ({previous[0]}); held, "
                f"the previous rate stays in use (more than ±{MAX_RATE_MOVE:.0%} in one step)"
            )
    return None


def _previous(session: Session, source: str, before: date) -> dict[str, tuple[date, Decimal]]:
    """Per currency, the latest stored rate of `source` dated before `before`."""
    latest = (
        select(FxRate.currency, func.max(FxRate.rate_date).label("day"))
        .where(FxRate.source == source, FxRate.rate_date < before)
        .group_by(FxRate.currency)
        .subquery()
    )
    rows = session.execute(
        select(FxRate.currency, FxRate.rate_date, FxRate.usd_per_unit)
        .join(latest, (FxRate.currency == latest.c.currency) & (FxRate.rate_date == latest.c.day))
        .where(FxRate.source == source)
    )
    return {code: (day, rate) for code, day, rate in rows}


def store_rates(session: Session, fetched: Iterable[DailyRates], fetched_at: datetime) -> list[StoredRates]:
    """Upsert each day's rates (one row per currency, day and source). A re-fetch of the same figures writes
    nothing; a corrected figure updates that day's row. No price row reads `fx_rates` again, so neither
    moves any stored USD figure: the correction applies from the next observation converted at it.

    Rates are checked first (`rate_problem`): one the column cannot hold, dated in the future or that
    jumps past the band is held with its reason and the previous rate stays. The write is an upsert, so
    two concurrent updates of one day both succeed (the later figure wins) instead of one raising."""
    out: dict[str, StoredRates] = {}
    previous: dict[str, dict[str, tuple[date, Decimal]]] = {}
    for daily in sorted(fetched, key=lambda d: d.day):
        report = out.setdefault(daily.source, StoredRates(daily.source))
        report.days.append(daily.day)
        if daily.source not in previous:
            previous[daily.source] = _previous(session, daily.source, daily.day)
        last = previous[daily.source]
        stored = {
            r.currency: r.usd_per_unit
            for r in session.scalars(select(FxRate).where(FxRate.source == daily.source, FxRate.rate_date == daily.day))
        }
        rows = []
        for code, rate in sorted(daily.usd_per_unit.items()):
            if problem := rate_problem(code, rate, daily.day, last.get(code), fetched_at.date()):
                report.held.append(problem)
                continue
            last[code] = (daily.day, rate)
            if stored.get(code) == rate:
                report.unchanged += 1
                continue
            if code in stored:
                report.revised += 1
            else:
                report.inserted += 1
            rows.append(
                {
                    "currency": code,
                    "rate_date": daily.day,
                    "usd_per_unit": rate,
                    "source": daily.source,
                    "fetched_at": fetched_at,
                }
            )
        upsert_rows(session, FxRate, rows, ("currency", "rate_date", "source"), ("usd_per_unit", "fetched_at"))
    session.flush()
    return list(out.values())


def latest_rates(session: Session, on: date | None = None, source: str | None = None) -> list[dict[str, Any]]:
    """Per currency, the latest stored rate (on or before `on`), for people and scripts (`gpu-tracker fx rates`)."""
    stmt = select(FxRate).order_by(FxRate.currency, FxRate.rate_date.desc(), FxRate.source)
    if on is not None:
        stmt = stmt.where(FxRate.rate_date <= on)
    if source is not None:
        stmt = stmt.where(FxRate.source == source)
    seen: dict[str, FxRate] = {}
    for row in session.scalars(stmt):
        seen.setdefault(row.currency, row)
    return [
        {
            "currency": r.currency,
            "usd_per_unit": r.usd_per_unit,
            "date": r.rate_date,
            "source": r.source,
            "fetched_at": r.fetched_at,
        }
        for r in seen.values()
    ]
