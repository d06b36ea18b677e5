"""The ECB source: its bundled cassette parses to USD per unit, and every unusable answer is refused whole,
with a reason that says what was wrong (the caller then keeps the rates it has)."""

from __future__ import annotations

import asyncio
import re
from datetime import date
from decimal import Decimal

import httpx
import pytest

from providers.cassette import Cassette, ReplayTransport, bundled_cassette
from providers.contract import FetchContext, ProviderError
from providers.fx.contract import RATE_PLACES, RateSourceError, fetch_rates, usd_per_unit
from providers.fx.ecb import ECB_DAILY_URL, EcbRates, parse_eurofxref
from providers.fx.registry import RATE_SOURCES, UnknownRateSource, get_rate_source
from providers.http import ResponseTooLarge
from providers.registry import PROVIDERS

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01"'
    ' xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref"><gesmes:subject>Reference rates</gesmes:subject>'
)


def xml(*days: tuple[str, dict[str, str]]) -> bytes:
    cubes = "".join(
        f"<Cube time='{day}'>" + "".join(f"<Cube currency='{c}' rate='{r}'/>" for c, r in rates.items()) + "</Cube>"
        for day, rates in days
    )
    return f"{HEAD}<Cube>{cubes}</Cube></gesmes:Envelope>".encode()


def fetch(transport: httpx.AsyncBaseTransport) -> list:
    async def go() -> list:
        async with httpx.AsyncClient(transport=transport) as client:
            return await fetch_rates(EcbRates, FetchContext(client=client, retries=1, backoff_base_s=0.0))

    return asyncio.run(go())


def test_bundled_cassette_gives_usd_per_unit_with_eur_as_published():
    cassette = Cassette.load(bundled_cassette("fx_ecb"))
    assert cassette.source.startswith("docs-built") and "bosorior/microsoftFabric" in cassette.source
    (daily,) = fetch(ReplayTransport(cassette))
    assert (daily.source, daily.day) == ("ecb", date(2026, 3, 13))
    rates = daily.usd_per_unit
    assert len(rates) == 29 and "USD" not in rates
    assert rates["EUR"] == Decimal("1.1476")  # USD per EUR, as published
    # USD per X = USD-per-EUR / X-per-EUR, at twelve places.
    assert (
        rates["JPY"]
        == Decimal("0.006276182663")
        == (Decimal("1.1476") / Decimal("182.85")).quantize(Decimal(1).scaleb(-RATE_PLACES))
    )
    assert rates["CAD"] == Decimal("0.729746915935")
    assert rates["GBP"] * Decimal("0.86503") == pytest.approx(Decimal("1.1476"), abs=Decimal("1e-11"))


def test_the_source_is_not_a_gpu_provider_and_has_a_registry_of_its_own():
    assert [s.name for s in RATE_SOURCES] == ["ecb"] and get_rate_source("ecb") is EcbRates
    assert "ecb" not in {p.name for p in PROVIDERS} and "fx_ecb" not in {p.name for p in PROVIDERS}
    with pytest.raises(UnknownRateSource, match="known: ecb"):
        get_rate_source("boc")
    assert EcbRates.url == ECB_DAILY_URL and EcbRates.default_interval.days == 1


def test_several_days_come_back_oldest_first():
    out = parse_eurofxref(xml(("2026-11-30", {"USD": "1.05", "CAD": "1.47"}), ("2026-11-27", {"USD": "1.04"})))
    assert [d.day for d in out] == [date(2026, 11, 27), date(2026, 11, 30)]
    assert out[1].usd_per_unit == {"EUR": Decimal("1.05"), "CAD": usd_per_unit(Decimal("1.05"), Decimal("1.47"))}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>Service unavailable</html", "not well-formed XML"),
        (b"", "not well-formed XML"),
        (HEAD.encode() + b"<Cube></Cube></gesmes:Envelope>", "no dated <Cube"),
        (xml(("2026-11-30", {"JPY": "160.5", "GBP": "0.87"})), "no USD rate"),
        (xml(("2026-11-30", {"USD": "1.05", "JPY": "0"})), "JPY rate '0' is not positive"),
        (xml(("2026-11-30", {"USD": "0.0000"})), "USD rate '0.0000' is not positive"),
        (xml(("2026-11-30", {"USD": "1,1476"})), "USD rate '1,1476' is not a decimal number"),
        (xml(("2026-11-30", {"USD": "-1.05"})), "not a decimal number"),
        (xml(("2026-11-30", {"USD": "1e3"})), "not a decimal number"),
        (xml(("2026-11-30", {"USD": "1.05", "usd": "1.05"})), "'usd' is not a three-letter"),
        (xml(("2026-11-30", {"USD": "1.05", "EUR": "1"})), "EUR itself"),
        (xml(("30.11.2026", {"USD": "1.05"})), "is not a date"),
        (xml(("2026-11-30", {"USD": "1.05"}), ("2026-11-30", {"USD": "1.06"})), "listed twice"),
        (
            b'<?xml version="1.0"?><!DOCTYPE lol [<!ENTITY a "aaaa">]><Envelope>&a;</Envelope>',
            "declares a DTD",
        ),
    ],
)
def test_unusable_answers_are_refused_whole_with_a_reason(body, reason):
    with pytest.raises(RateSourceError, match=re.escape(reason)):
        parse_eurofxref(body)


def test_a_duplicated_currency_is_refused():
    body = (
        HEAD + "<Cube><Cube time='2026-11-30'><Cube currency='USD' rate='1.05'/>"
        "<Cube currency='USD' rate='1.06'/></Cube></Cube></gesmes:Envelope>"
    ).encode()
    with pytest.raises(RateSourceError, match="USD is listed twice"):
        parse_eurofxref(body)


def test_http_errors_and_oversized_bodies_fail_the_fetch():
    down = httpx.MockTransport(lambda request: httpx.Response(503, text="maintenance"))
    with pytest.raises(ProviderError, match="gave up after 2 attempts: HTTP 503"):
        fetch(down)
    huge = httpx.MockTransport(lambda request: httpx.Response(200, content=b"<a>" + b" " * (2 * 2**20) + b"</a>"))
    with pytest.raises(ResponseTooLarge, match="exceeds 1 MiB"):
        fetch(huge)


def test_the_request_goes_to_the_daily_file():
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=xml(("2026-11-30", {"USD": "1.0500"})))

    (daily,) = fetch(httpx.MockTransport(answer))
    assert str(seen[0].url) == ECB_DAILY_URL and "xml" in seen[0].headers["accept"]
    assert daily.usd_per_unit == {"EUR": Decimal("1.0500")}


# --------------------------------------------------------------- second hardening pass: encodings, digits, days


def test_a_dtd_is_refused_in_any_encoding():
    doc = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE lol [<!ENTITY a "aaaa">]><Envelope>&a;</Envelope>'
    body = doc.encode("utf-16")
    assert b"<!DOCTYPE" not in body  # the old byte search let this through to the parser
    with pytest.raises(RateSourceError, match="declares a DTD"):
        parse_eurofxref(body)


@pytest.mark.parametrize("rate", ["１.０５", "١٫٠٥", "١.٠٥", "1.0５"])
def test_only_ascii_digits_are_a_rate(rate):
    with pytest.raises(RateSourceError, match="is not a decimal number"):
        parse_eurofxref(xml(("2026-11-30", {"USD": rate})))


@pytest.mark.parametrize("day", ["2999-01-01", "1998-12-31", "２０２６-11-30", "0001-01-01"])
def test_a_day_outside_the_service_range_is_refused(day):
    with pytest.raises(RateSourceError, match=r"outside|is not a date"):
        parse_eurofxref(xml((day, {"USD": "1.05"})))


@pytest.mark.parametrize(
    ("rates", "reason"),
    [
        ({"USD": "999999999", "XAU": "0.000000001"}, "USD per XAU (1e+18) is outside"),  # before: a crash
        ({"USD": "0.000000001", "IDR": "999999999"}, "USD per IDR (1e-18) is outside"),  # before: stored as 0
    ],
)
def test_a_rate_the_database_cannot_hold_or_that_rounds_to_zero_is_refused(rates, reason):
    with pytest.raises(RateSourceError, match=re.escape(reason)):
        parse_eurofxref(xml(("2026-11-30", rates)))


def test_the_smallest_and_largest_storable_rates_are_kept():
    (daily,) = parse_eurofxref(xml(("2026-11-30", {"USD": "1", "IDR": "999999999", "XAU": "0.000000002"})))
    assert daily.usd_per_unit["IDR"] == Decimal("1.000E-9") and daily.usd_per_unit["XAU"] == Decimal("5E+8")
