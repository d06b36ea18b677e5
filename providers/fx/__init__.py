"""Exchange-rate sources: what a non-USD quote is converted to USD with.

A source of its own, beside the GPU providers and not among them (`providers.registry.PROVIDERS` lists
what sells GPUs, and is counted): its own small contract (`providers.fx.contract.RateSource`), an explicit
registry (`providers.fx.registry.RATE_SOURCES`) and the same HTTP helpers, with their byte caps. Like every
provider module it knows nothing of the database; `tracker.ingest.fx` stores and applies the rates.
"""
