"""Where a provider's region is: its country, area and metro, so that `--region eu` means Europe.

Region codes are each provider's own spelling (`fr-par-2`, `gra11`, `eastus`, `de-bavaria`): a string
prefix cannot say that all of them are in Europe. `regions.toml` holds a table per provider and the rules
for open-ended codes (a marketplace host's country); this module reads it and answers two questions:
where a (provider, region) is (`locate`), and whether it matches what a user asked for (`matches`).

What a user may write in a region filter, one rule everywhere (offers, rank, availability, plan, alerts):
- a provider region, exactly (`eu-ro-1`) or as a prefix of the code (`us-east` matches `us-east-2`);
- a country, ISO 3166-1 alpha-2 (`de`), or its name (`germany`);
- an area: `eu` (Europe), `americas`, `apac`, `mea`, with the aliases `europe`, `asia`, `emea` ...;
- a metro (`paris`, `frankfurt`, `new-york`).
A code that names a place is read as that place only: `sa` is Saudi Arabia, never a prefix of AWS's
`sa-east-1` (São Paulo).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import pycountry

__all__ = ["AREAS", "UNKNOWN_TO_PROVIDER", "Location", "LocationTable", "get_locations", "location_row", "slug"]

AREAS = ("eu", "americas", "apac", "mea")
_AREA_ALIASES = {
    "europe": ("eu",),
    "eur": ("eu",),
    "asia": ("apac",),
    "asia-pacific": ("apac",),
    "america": ("americas",),
    "north-america": ("americas",),
    "south-america": ("americas",),
    "latam": ("americas",),
    "emea": ("eu", "mea"),
    "middle-east": ("mea",),
    "africa": ("mea",),
}
# Common names pycountry spells otherwise ("Korea, Republic of", "Russian Federation" ...).
_COUNTRY_ALIASES = {
    "usa": "us",
    "united-states": "us",
    "america": "us",
    "uk": "gb",
    "united-kingdom": "gb",
    "britain": "gb",
    "england": "gb",
    "south-korea": "kr",
    "korea": "kr",
    "the-netherlands": "nl",
    "holland": "nl",
    "russia": "ru",
    "vietnam": "vn",
    "taiwan": "tw",
    "iran": "ir",
    "czech-republic": "cz",
    "turkey": "tr",
    "uae": "ae",
    "united-arab-emirates": "ae",
    "hong-kong": "hk",
}
_SUFFIX = (re.compile(r"-[a-z]$"), re.compile(r"-?\d+$"))


def slug(text: str) -> str:
    """A name in the one region form: lower case, words joined by '-' ('New York' → 'new-york')."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


@dataclass(frozen=True)
class Location:
    """Where a region is. A multi-country region (GCP's `emea`) has areas but no country."""

    country: str | None = None
    areas: tuple[str, ...] = ()
    metro: str | None = None

    @property
    def words(self) -> frozenset[str]:
        """What a filter may name to match this place."""
        return frozenset(w for w in (self.country, self.metro, *self.areas) if w)

    def as_dict(self) -> dict[str, Any]:
        return {"country": self.country, "areas": list(self.areas), "metro": self.metro}


UNKNOWN_TO_PROVIDER = Location()  # the provider says it does not know ("?" in the table)


@dataclass(frozen=True)
class LocationTable:
    area_of: Mapping[str, str]  # country → area
    prefixes: Mapping[str, str]  # geographic prefix → value
    metros: Mapping[str, str]  # metro word (no dashes) → value
    schemes: Mapping[str, str]
    tables: Mapping[str, Mapping[str, str]]
    _names: dict[str, str] = field(default_factory=dict)  # country/state word (no dashes) → value

    def __post_init__(self) -> None:
        names = self._names
        for country in pycountry.countries:
            code = country.alpha_2.lower()
            for attr in ("name", "common_name", "official_name"):
                if (name := getattr(country, attr, None)) is not None:
                    names.setdefault(slug(name).replace("-", ""), code)
        for alias, code in _COUNTRY_ALIASES.items():
            names[alias.replace("-", "")] = code
        # A US state in a region code means the US (Vast "us-texas", TensorDock "united-states-texas-dallas").
        for state in pycountry.subdivisions:
            if state.country_code == "US":
                names.setdefault(slug(state.name).replace("-", ""), "us")

    @classmethod
    def from_toml(cls, text: str) -> LocationTable:
        data = tomllib.loads(text)
        area_of = {c: area for area, countries in data["areas"].items() for c in countries}
        table = cls(
            area_of=area_of,
            prefixes=data["prefixes"],
            metros=data["metros"],
            schemes=data.get("schemes", {}),
            tables=data.get("provider", {}),
        )
        table.check()
        return table

    def check(self) -> None:
        """Every value names a known country or area: a typo in the table fails at load, not in a filter."""
        values = [*self.prefixes.values(), *self.metros.values()]
        values += [v for rows in self.tables.values() for v in rows.values()]
        for text in values:
            country, _, _ = text.partition("/")
            areas = text[1:].split("+") if text.startswith("@") else []
            if text != "?" and not areas and country not in self.area_of:
                raise ValueError(f"regions.toml: {text!r} names no country of any area")
            if any(a not in AREAS for a in areas):
                raise ValueError(f"regions.toml: {text!r} names an unknown area")

    def value(self, text: str) -> Location:
        """A table value ("de", "fr/paris", "@eu+mea", "?") as a location."""
        if text == "?":
            return UNKNOWN_TO_PROVIDER
        if text.startswith("@"):
            return Location(areas=tuple(text[1:].split("+")))
        country, _, metro = text.partition("/")
        return Location(country=country, areas=(self.area_of[country],), metro=metro or None)

    def locate(self, provider: str, region: str | None) -> Location | None:
        """Where `provider`'s `region` is, or None when nothing places it (reported, never guessed)."""
        if not region:
            return None
        code = slug(region)
        if (place := self._from_table(provider, code)) is not None:
            return place
        scheme = self.schemes.get(provider, "words")
        if scheme.startswith("tables:"):
            upstreams = scheme.removeprefix("tables:").split(",")
            found = (self._from_table(u, code) for u in upstreams)
            return next((place for place in found if place is not None), None)
        if scheme == "country-prefix":
            return self._country_prefix(code)
        return self._words(code)

    def _from_table(self, provider: str, code: str) -> Location | None:
        table = self.tables.get(provider, {})
        return next((self.value(table[c]) for c in _candidates(code) if c in table), None)

    def _country_prefix(self, code: str) -> Location | None:
        first, *rest = code.split("-")
        if first not in self.area_of:
            return None
        metro = self._metro_in(rest, country=first)
        return Location(country=first, areas=(self.area_of[first],), metro=metro)

    def _words(self, code: str) -> Location | None:
        parts = [p for p in code.split("-") if p]
        metro = self._metro_in(parts)
        if metro is not None:
            return self.value(self.metros[metro.replace("-", "")])
        first = parts[0]
        if len(parts) == 1 and first in self.area_of and first not in self.prefixes:
            return self.value(first)  # a bare country code (RunPod "cz")
        if first in self.prefixes:
            place = self.value(self.prefixes[first])
            if place.country is None and len(parts) > 1 and parts[1] in self.area_of:
                return self.value(parts[1])  # a continent, then the country: RunPod "eu-ro-1"
            return place
        country = _alpha3(first)
        if country is not None and country in self.area_of:
            return self.value(country)
        for word in _windows(parts):
            if (found := self._names.get(word)) is not None and found in self.area_of:
                return self.value(found)
        return None

    def _metro_in(self, parts: Sequence[str], *, country: str | None = None) -> str | None:
        for word in _windows([p for p in parts if not p.isdigit()]):
            value = self.metros.get(word)
            if value is not None and (country is None or value.startswith(f"{country}/")):
                return value.partition("/")[2]
        return None

    def query_words(self, wanted: str) -> frozenset[str]:
        """The location words a filter term names (empty when it names no place: then it is a code prefix)."""
        term = slug(wanted)
        if term in AREAS:
            return frozenset({term})
        if term in _AREA_ALIASES:
            return frozenset(_AREA_ALIASES[term])
        if term in self.area_of:
            return frozenset({term})
        joined = term.replace("-", "")
        if (country := self._names.get(joined)) is not None and country in self.area_of:
            return frozenset({country})
        if (metro := self.metros.get(joined)) is not None:
            return frozenset({metro.partition("/")[2]})
        metros = {value.partition("/")[2] for value in self.metros.values()}
        return frozenset({term}) if term in metros else frozenset()

    def matches(self, provider: str, region: str | None, wanted: Iterable[str]) -> bool:
        """The region filter's one rule (module docstring)."""
        if not region:
            return False
        place = self.locate(provider, region)
        for term in wanted:
            if region == term:  # a provider's code, as written ("us_east" is no "us-east")
                return True
            words = self.query_words(term)
            if words and place is not None and words & place.words:
                return True
            # A code prefix; for a place name only where nothing places the region ("sa" is Saudi Arabia,
            # not a prefix of AWS's São Paulo "sa-east-1"; "us" still finds an unplaced "us-x-1").
            if region.startswith(f"{term}-") and not (words and place is not None):
                return True
        return False


def _candidates(code: str) -> list[str]:
    """The code, then without a zone letter or an index ('us-central1-b' → 'us-central1', 'gra11' → 'gra')."""
    out = [code]
    for pattern in _SUFFIX:
        for existing in list(out):
            stripped = pattern.sub("", existing)
            if stripped and stripped not in out:
                out.append(stripped)
    return out


def _windows(parts: Sequence[str]) -> list[str]:
    """Runs of up to three adjacent parts, longest first, joined without dashes ('new', 'york' → 'newyork')."""
    out: list[str] = []
    for size in (3, 2, 1):
        out += ["".join(parts[i : i + size]) for i in range(len(parts) - size + 1)]
    return out


def _alpha3(word: str) -> str | None:
    if len(word) != 3:
        return None
    country = pycountry.countries.get(alpha_3=word.upper())
    return None if country is None else str(country.alpha_2).lower()


def location_row(table: LocationTable, provider: str, region: str) -> dict[str, Any]:
    """A `region_locations` row (tracker.storage.tables.RegionLocation) for `provider`'s `region`."""
    place = table.locate(provider, region)
    areas = "".join(f"+{a}" for a in place.areas) + "+" if place is not None and place.areas else ""
    return {
        "provider": provider,
        "region": region,
        "located": place is not None,
        "country": None if place is None else place.country,
        "areas": areas,
        "metro": None if place is None else place.metro,
    }


@cache
def get_locations() -> LocationTable:
    """The shipped region table, loaded once per process."""
    text = (resources.files("tracker.catalog") / "regions.toml").read_text(encoding="utf-8")
    return LocationTable.from_toml(text)
