"""gpu-price-tracker domain core: catalog, storage, ingest, estimate model, market statistics.

Nothing in this package knows about HTTP frameworks; `api/` and `tracker.cli` are thin shells over it.
"""

__version__ = "0.1.0"
