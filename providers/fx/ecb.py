"""The European Central Bank's euro foreign exchange reference rates (public, no key).

`eurofxref-daily.xml` holds one working day's rates, as units of each currency per EUR, published around
16:00 CET on TARGET working days (none on weekends and TARGET holidays). The shape read here::

    <gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01"
                     xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">
      <Cube><Cube time='2026-03-13'><Cube currency='USD' rate='1.1476'/>…</Cube></Cube>
    </gesmes:Envelope>

USD per X is USD-per-EUR ÷ X-per-EUR; EUR's own rate is the USD-per-EUR figure as published. The whole
answer is refused, with the reason, when anything in it is unusable (not XML, a DTD, no dated day, no USD
rate, a rate that is not a positive decimal, a code that is not three letters, a currency or day twice):
ingest then keeps converting at the rates already stored, which it dates, so a broken feed is visible as
rates growing old instead of as wrong prices.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import ClassVar
from xml.etree import ElementTree

import defusedxml.ElementTree as DefusedET
from defusedxml import DefusedXmlException

from providers.contract import FetchContext
from providers.fx.contract import MAX_USD_PER_UNIT, DailyRates, RateSource, RateSourceError, usd_per_unit
from providers.http import request

__all__ = ["ECB_DAILY_URL", "EcbRates", "parse_eurofxref"]

ECB_DAILY_URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"
_NS = "{http://www.ecb.int/vocabulary/2002-08-01/eurofxref}"
_CODE = re.compile(r"[A-Z]{3}")
# The first day the ECB published reference rates; a day before it (or after tomorrow, see `_day`) is no rate.
FIRST_DAY = date(1999, 1, 4)
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# The ECB writes plain decimals with a point ("1.1476", "19395.07"); anything else (a decimal comma, an
# exponent, a sign) is a changed or edited file, not a rate to guess at.
# ASCII digits only: `\d` would also take fullwidth or Arabic-Indic digits, which Decimal reads as numbers.
_RATE = re.compile(r"[0-9]{1,9}(\.[0-9]{1,9})?")


def parse_eurofxref(body: bytes, source: str = "ecb") -> list[DailyRates]:
    """Every dated day in an ECB eurofxref file, oldest first, as USD per unit. Raises RateSourceError."""
    # The file declares no DTD. The parser refuses any (and every entity and external reference), whatever
    # the body's encoding: a byte search for "<!DOCTYPE" is blind to a UTF-16 body that declares one.
    try:
        root = DefusedET.fromstring(body, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise RateSourceError(
            "ECB rates: the answer declares a DTD or entities, which the ECB file never does; refused"
        ) from None
    except ElementTree.ParseError as exc:
        raise RateSourceError(f"ECB rates: the answer is not well-formed XML ({exc})") from None
    days = [cube for cube in root.iter(f"{_NS}Cube") if "time" in cube.attrib]
    if not days:
        raise RateSourceError("ECB rates: no dated <Cube time='…'> in the eurofxref namespace (format changed?)")
    out: dict[date, DailyRates] = {}
    for cube in days:
        day = _day(cube.attrib["time"])
        if day in out:
            raise RateSourceError(f"ECB rates: {day} is listed twice")
        out[day] = DailyRates(source, day, _rates(cube, day))
    return [out[d] for d in sorted(out)]


def _day(raw: str) -> date:
    text = raw.strip()
    try:
        if not _DATE.fullmatch(text):
            raise ValueError(text)
        day = date.fromisoformat(text)
    except ValueError:
        raise RateSourceError(f"ECB rates: time {raw!r} is not a date (YYYY-MM-DD)") from None
    # A day still to come is no reference rate (one dated 2999 would be "latest" for ever); tomorrow is
    # allowed, as the publishing day in CET may be tomorrow in a UTC-behind clock's terms.
    latest = datetime.now(UTC).date() + timedelta(days=1)
    if not FIRST_DAY <= day <= latest:
        raise RateSourceError(f"ECB rates: day {day} is outside {FIRST_DAY}..{latest}")
    return day


def _rates(cube: ElementTree.Element, day: date) -> dict[str, Decimal]:
    per_eur: dict[str, Decimal] = {}
    for item in cube.findall(f"{_NS}Cube"):
        code, raw = (item.get("currency") or "").strip(), (item.get("rate") or "").strip()
        if not _CODE.fullmatch(code):
            raise RateSourceError(f"ECB rates for {day}: currency {code!r} is not a three-letter ISO 4217 code")
        if code in per_eur:
            raise RateSourceError(f"ECB rates for {day}: {code} is listed twice")
        if not _RATE.fullmatch(raw):
            raise RateSourceError(f"ECB rates for {day}: {code} rate {raw!r} is not a decimal number")
        rate = Decimal(raw)
        if rate <= 0:
            raise RateSourceError(f"ECB rates for {day}: {code} rate {raw!r} is not positive")
        per_eur[code] = rate
    usd = per_eur.pop("USD", None)
    if usd is None:
        raise RateSourceError(f"ECB rates for {day}: no USD rate, so no currency can be converted to USD")
    if "EUR" in per_eur:
        raise RateSourceError(f"ECB rates for {day}: a rate for EUR itself (the base) makes no sense")
    out = {"EUR": usd}
    for code, rate in per_eur.items():
        # Bounded before it is quantized (past 28 digits that raises): the stored `Rate` has twelve digits
        # before the point and twelve after; a rate that rounds to 0 there would make every quote $0.
        if usd / rate >= MAX_USD_PER_UNIT or (converted := usd_per_unit(usd, rate)) <= 0:
            raise RateSourceError(
                f"ECB rates for {day}: USD per {code} ({float(usd / rate):.3g}) is outside (1e-12, 1e12)"
            )
        out[code] = converted
    return out


class EcbRates(RateSource):
    name: ClassVar[str] = "ecb"
    title: ClassVar[str] = "European Central Bank euro reference rates"
    url: ClassVar[str] = ECB_DAILY_URL
    homepage: ClassVar[str] = (
        "https://www.ecb.europa.eu/stats/policy_and_exchange_rates/euro_reference_exchange_rates/html/index.en.html"
    )
    # Published once per TARGET working day: a daily fetch has every rate by the next day.
    default_interval: ClassVar[timedelta] = timedelta(days=1)

    async def fetch(self, ctx: FetchContext) -> list[DailyRates]:
        response = await request(ctx, "GET", self.url, headers={"accept": "application/xml, text/xml"})
        return parse_eurofxref(response.content, self.name)
