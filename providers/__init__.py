"""Provider adapters: each turns one provider's API responses into `ScrapedOffer`s.

Public surface, by module: `contract` (the provider → ingest contract: `Provider`, `ScrapedOffer`,
`ScrapeResult`, `FetchContext`, errors), `registry` (every adapter, by name), `fetching` (how every
caller runs a fetch: under the provider's response-size limit, credentials scrubbed from its errors),
`cassette` (recorded responses, so every provider runs offline), `sheet` (static rate sheets), and the
adapters' shared helpers `http` and `parsing`. Adapters live in `providers.adapters` and are reached
through the registry.

This package knows nothing of the database and imports nothing from `tracker` or `api`;
`tests/providers/test_registry.py` checks that.
"""

# Submodule names: nothing is imported here, so importing `providers` has no side effects.
__all__ = ["cassette", "contract", "fetching", "http", "parsing", "registry", "sheet"]
