"""The terms note the export's manifest carries for each source: who published the numbers, on what terms."""

from __future__ import annotations

from providers.registry import get_provider

# Import kind → the terms of the history it reads (kept with every dataset re-published from it).
IMPORT_TERMS = {
    "export": "An export of another gpu-price-tracker install: the terms its manifest states for each source.",
    "snapshots": "Dated raw responses of the provider's public API recorded by a third party; reuse follows the "
    "recorder's licence (none stated for some public captures) and the provider's terms of use.",
    "aggregates": "Market statistics published by a third party; kept apart from offers, under its licence.",
}


def terms_note(provider: str, kind: str) -> str:
    """A note for rows of `provider` observed by `kind` (live, demo, replay or import:<kind>)."""
    try:
        title = get_provider(provider).title
    except KeyError:
        title = provider
    if kind.startswith("import:"):
        return f"{title}: " + IMPORT_TERMS.get(
            kind.removeprefix("import:"), "imported history; terms of its publisher."
        )
    if kind == "demo":
        return f"{title}: demo data replayed from a bundled recording; not an observation of current prices."
    return (
        f"{title}: prices as the provider publishes them, observed by this tracker ({kind}); the provider's "
        "terms of use govern the prices themselves."
    )
