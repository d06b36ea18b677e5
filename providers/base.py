"""The provider interface every adapter implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import ClassVar

import httpx

from tracker.offers import ScrapeResult


class ProviderKind(StrEnum):
    cloud = "cloud"
    marketplace = "marketplace"
    static_sheet = "static_sheet"


class ProviderError(Exception):
    """A provider answered something we cannot use (HTTP error, bad JSON, changed schema).

    The message is shown to operators as the run's error: keep it readable and free of secrets.
    """


class MissingCredentials(ProviderError):
    pass


@dataclass(slots=True)
class FetchContext:
    client: httpx.AsyncClient
    credentials: Mapping[str, str] = field(default_factory=dict)
    retries: int = 3
    backoff_base_s: float = 0.5  # 0 in replay: recorded 429s need no real waiting

    def secret(self, name: str) -> str:
        try:
            return self.credentials[name]
        except KeyError:
            raise MissingCredentials(f"credential {name} is not configured") from None


class Provider(ABC):
    name: ClassVar[str]
    title: ClassVar[str]
    kind: ClassVar[ProviderKind]
    homepage: ClassVar[str] = ""
    credentials: ClassVar[tuple[str, ...]] = ()  # setting names, read as TRACKER_<NAME>
    default_interval: ClassVar[timedelta] = timedelta(hours=1)
    parser_version: ClassVar[str] = "1"
    demo_credentials: ClassVar[Mapping[str, str]] = {}

    @abstractmethod
    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        """Fetch every page and parse it into offers. Raise ProviderError on unusable responses."""

    @classmethod
    def describe(cls) -> dict[str, object]:
        return {
            "name": cls.name,
            "title": cls.title,
            "kind": cls.kind.value,
            "credentials": list(cls.credentials),
            "default_interval_s": int(cls.default_interval.total_seconds()),
            "parser_version": cls.parser_version,
        }


def default_interval_for(kind: ProviderKind) -> timedelta:
    """Marketplaces move by the minute, clouds by the hour, static sheets by the day."""
    return {
        ProviderKind.marketplace: timedelta(minutes=10),
        ProviderKind.cloud: timedelta(hours=1),
        ProviderKind.static_sheet: timedelta(days=1),
    }[kind]
