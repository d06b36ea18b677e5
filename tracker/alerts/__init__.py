"""Price alerts: stored rules, a per-rule state machine evaluated after ingest, and an outbox delivered
at least once to signed webhooks and Apprise channels.

Modules: rules (validation, the one entry for CLI and API), observe (the rule's value or no_data),
states (the pure state machine), evaluate (apply it, with events and outbox rows in one transaction;
`evaluate_after_ingest` is the post-scrape hook), outbox / deliver (claiming, sending with backoff,
attempt log), channels (webhook signing, Apprise), ssrf (address checks), job_cost (the estimate model
behind an interface), history (events and deliveries for display). The tables are in
`tracker.storage.alert_tables`.
"""

__all__ = [
    "channels",
    "deliver",
    "egress",
    "evaluate",
    "history",
    "job_cost",
    "observe",
    "outbox",
    "rules",
    "ssrf",
    "states",
]
