"""Checks every price-page sheet (a provider's public pricing page transcribed as a dated static sheet)
must pass: labelled reference data with its page, its date and `source_type = "price_page"`."""

from __future__ import annotations

from datetime import date

from providers.contract import ProviderKind, ScrapeResult
from providers.sheet import StaticSheetProvider, load_sheet

__all__ = ["assert_price_page"]


def assert_price_page(provider: type[StaticSheetProvider], result: ScrapeResult, *, url: str, as_of: str) -> None:
    assert provider.kind is ProviderKind.static_sheet and provider.credentials == ()
    sheet = load_sheet(provider.sheet)
    assert sheet["url"] == url and sheet["source_type"] == "price_page"
    assert url in sheet["source"] and as_of in sheet["source"]  # the source names the page and the date read
    assert date.fromisoformat(str(sheet["as_of"])) == date.fromisoformat(as_of)
    described = provider.describe()
    assert described["reference"] is True and described["as_of"] == as_of
    assert described["source_type"] == "price_page"
    for offer in result.offers:
        assert offer.attributes["reference"] is True and offer.attributes["source_type"] == "price_page"
        assert offer.attributes["as_of"] == as_of and offer.attributes["url"] == url
        assert offer.price_per_hour > 0 and offer.gpu_count > 0
