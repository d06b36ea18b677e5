"""The pipeline: the only code that runs provider adapters — one scrape cycle (`scraping`), the
scheduled worker (`worker`, `slots`), the claim protocol every run follows (`claims`), the outage
backlog of runs not yet in the ledger (`backlog`), which credentials a fetch gets (`credentials`),
the exchange rates (`rates`), and the schema drift check (`drift`, behind `gpu-tracker doctor` and
every run)."""

__all__ = ["backlog", "claims", "credentials", "drift", "rates", "scraping", "slots", "worker"]
