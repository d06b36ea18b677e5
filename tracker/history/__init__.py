"""History as a dataset: export the change-only history as an open dataset, and import real histories.

`export` writes (or streams) the price and availability history with the offers and runs it refers to,
one file per UTC day, under a manifest (`tracker.history.dataset` holds the schema, defined once).
`imports` reads published histories: our own export, a provider's dated raw responses, a third party's
market aggregates. Observations replay through ingest (`tracker.ingest.batch.ingest`) as scrapes at their
timestamps; see `tracker.history.imports` for the rule that keeps imports from rewriting live history.
"""

__all__ = ["dataset", "export", "imports"]
