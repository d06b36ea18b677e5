"""The pipeline: the only code that runs provider adapters — one scrape cycle (`scraping`), the
scheduled worker with its slot claims (`worker`, `slots`), which credentials a fetch gets
(`credentials`), and the schema drift check (`drift`, behind `gpu-tracker doctor` and every run)."""

__all__ = ["credentials", "drift", "scraping", "slots", "worker"]
