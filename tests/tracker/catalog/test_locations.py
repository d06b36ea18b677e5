"""Regions people can filter by: every region a provider sends is placed (country, area, metro), and the
one filter rule reads `eu`, `de`, `paris` or a provider's own code the same way everywhere."""

from __future__ import annotations

import pytest

from providers.registry import PROVIDERS
from tests.factories.cassettes import replay
from tests.factories.real_results import REAL_RESULTS
from tracker.catalog.locations import Location, LocationTable, get_locations


def _regions() -> list[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    for cls in PROVIDERS:
        pairs |= {(cls.name, o.region) for o in replay(cls).offers if o.region}
    for name, result in REAL_RESULTS.items():
        pairs |= {(name, o.region) for o in result().offers if o.region}
    return sorted(pairs)


def test_every_region_in_every_cassette_and_real_payload_is_placed() -> None:
    table = get_locations()
    unplaced = [f"{provider}:{region}" for provider, region in _regions() if table.locate(provider, region) is None]
    assert not unplaced, f"regions with no location (add them to tracker/catalog/regions.toml): {unplaced}"


@pytest.mark.parametrize(
    ("provider", "region", "country", "area", "metro"),
    [
        ("scaleway", "fr-par-2", "fr", "eu", "paris"),
        ("verda", "fin-02", "fi", "eu", None),
        ("ovhcloud", "gra11", "fr", "eu", "gravelines"),
        ("seeweb", "it-fr2", "it", "eu", "frosinone"),
        ("runpod", "eu-ro-1", "ro", "eu", None),
        ("runpod", "cz", "cz", "eu", None),
        ("aws", "sa-east-1", "br", "americas", "sao-paulo"),
        ("lambdalabs", "us-west-2", "us", "americas", "phoenix"),  # not AWS's us-west-2 (Oregon)
        ("mithril", "us-central1-b", "us", "americas", None),  # a zone of a region
        ("vastai", "de-bavaria", "de", "eu", None),
        ("tensordock", "united-states-texas-dallas", "us", "americas", "dallas"),
        ("vultr", "nrt", "jp", "apac", "tokyo"),
    ],
)
def test_regions_are_placed_by_the_providers_table_and_rules(
    provider: str, region: str, country: str, area: str, metro: str | None
) -> None:
    assert get_locations().locate(provider, region) == Location(country=country, areas=(area,), metro=metro)


def test_a_multi_country_region_has_areas_and_no_country() -> None:
    assert get_locations().locate("gcp", "emea") == Location(areas=("eu", "mea"))


def test_an_unplaceable_region_is_unknown_not_guessed() -> None:
    table = get_locations()
    assert table.locate("vastai", "zz-nowhere") is None
    assert table.locate("somecloud", "rack-7") is None
    assert table.locate("jarvislabs", "unknown-region") == Location()  # the provider says it does not know


@pytest.mark.parametrize(
    ("wanted", "provider", "region", "expected"),
    [
        ("eu", "scaleway", "fr-par-2", True),
        ("eu", "verda", "fin-02", True),
        ("eu", "ovhcloud", "gra11", True),
        ("eu", "seeweb", "it-fr2", True),
        ("eu", "runpod", "eu-ro-1", True),
        ("eu", "aws", "us-east-1", False),
        ("europe", "azure", "westeurope", True),
        ("de", "vastai", "de-bavaria", True),
        ("germany", "tensordock", "germany-hesse-frankfurt", True),
        ("frankfurt", "vultr", "fra", True),
        ("paris", "scaleway", "fr-par-1", True),
        ("new-york", "digitalocean", "nyc2", True),
        ("us", "lium", "us-tx", True),
        ("apac", "novita", "as-sgp-02", True),
        ("emea", "gcp", "emea", True),
        ("eu-ro-1", "runpod", "eu-ro-1", True),  # a provider's own code, exactly
        ("us-east", "aws", "us-east-2", True),  # ... or as a prefix of it
        ("sa", "aws", "sa-east-1", False),  # `sa` is Saudi Arabia, not a prefix of São Paulo's code
        ("br", "aws", "sa-east-1", True),
        ("us", "aws", "", False),
        ("eu", "vastai", "zz-nowhere", False),
    ],
)
def test_the_filter_rule(wanted: str, provider: str, region: str, expected: bool) -> None:
    assert get_locations().matches(provider, region, [wanted]) is expected


def test_the_table_is_consistent() -> None:
    """Every value names a known country or area, and no country is in two areas."""
    table = get_locations()
    seen: dict[str, str] = {}
    for country, area in table.area_of.items():
        assert seen.setdefault(country, area) == area
    values = [*table.prefixes.values(), *table.metros.values()]
    values += [v for rows in table.tables.values() for v in rows.values()]
    for value in values:
        assert isinstance(table.value(value), Location), value


@pytest.mark.parametrize("value", ["xx/nowhere", "@moon"])
def test_a_bad_table_value_is_refused_at_load(value: str) -> None:
    text = f'[areas]\neu = ["de"]\n[prefixes]\n[metros]\n[provider.p]\nr1 = "{value}"\n'
    with pytest.raises(ValueError, match=r"regions\.toml"):
        LocationTable.from_toml(text)
