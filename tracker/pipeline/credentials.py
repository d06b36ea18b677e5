"""Which credentials a live fetch of a provider gets: the one rule for scrape, record and doctor."""

from __future__ import annotations

from providers.contract import Provider
from tracker.config import Settings

__all__ = ["credentials_of"]


def credentials_of(provider: type[Provider], settings: Settings) -> tuple[dict[str, str], list[str]]:
    """What a live fetch of `provider` gets: its required credentials (and which are missing, which
    skips the run) plus any optional ones that are set. Every live fetch — scrape, record, doctor — asks
    here, so an optional key is never honoured by one and ignored by another."""
    values, missing = settings.credentials_for(provider.credentials)
    optional, _ = settings.credentials_for(provider.optional_credentials)
    return values | optional, missing
