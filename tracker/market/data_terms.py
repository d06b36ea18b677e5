"""Whose prices this install may republish: each source's declared terms (providers.terms) under the
operator's setting (`TRACKER_REPUBLISH`, `TRACKER_REPUBLISH_CLEARED`; docs/configuration.md).

One rule, `may_republish`, for every published artefact (the export, `/v1/export`, the index):

* terms that say **yes**, or a source the operator lists in `TRACKER_REPUBLISH_CLEARED` (they hold
  permission): republished under every setting;
* terms that are **unknown** (no clause could be read; see providers/terms.toml): conservative, never
  taken for a yes — left out under "cleared"; under "labelled" (the default) republished but labelled
  "terms unknown, not cleared" wherever they appear (the export's manifest); under "private" kept;
* terms that say **no**: left out, except under "private", the operator's own install, whose export is
  marked not for publication.

Scraping and storing are never gated here: a private install scrapes every source for its own use.
A provider that declares no terms at all (not a registered provider: a test's, an import's) counts as
unknown.
"""

from __future__ import annotations

from typing import Any

from providers.terms import Permission, terms_for
from tracker.config import Settings

__all__ = ["Permission", "may_republish", "republication", "source_terms"]


def republication(provider: str) -> Permission:
    """What `provider`'s terms say of republishing its prices, as read (unknown when it declares none)."""
    terms = terms_for(provider)
    return terms.republish if terms is not None else Permission.unknown


def may_republish(provider: str, settings: Settings) -> bool:
    """Whether this install's published artefacts (export, index) include `provider` (module docstring)."""
    said = republication(provider)
    if said is Permission.yes or provider in settings.cleared_sources:
        return True
    if said is Permission.unknown:
        return settings.republish != "cleared"
    return settings.republish == "private"


def source_terms(provider: str, settings: Settings) -> dict[str, Any]:
    """The terms row every surface shows for a source (`gpu-tracker providers`, the export's manifest):
    the declaration as read, whether this install republishes it, and why."""
    terms = terms_for(provider)
    declared = (
        terms.as_dict()
        if terms is not None
        else {"url": None, "store": "unknown", "republish": "unknown", "read_on": None, "attribution": provider}
        | {"note": "declares no terms (not a registered provider)"}
    )
    said = republication(provider)
    included = may_republish(provider, settings)
    if provider in settings.cleared_sources and said is not Permission.yes:
        why = "cleared by the operator (TRACKER_REPUBLISH_CLEARED)"
    elif said is Permission.yes:
        why = "its terms permit republication"
    elif said is Permission.unknown:
        why = "terms unknown, not cleared: " + ("labelled" if included else "left out (TRACKER_REPUBLISH=cleared)")
    else:
        why = "its terms forbid republication: " + ("kept for private use only" if included else "left out")
    return declared | {"republished": included, "why": why}
