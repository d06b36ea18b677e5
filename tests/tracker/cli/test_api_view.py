"""`gpu-tracker cheapest --kind inference` prints the serverless APIs beside self-hosting; a fine-tuning
ranking does not (there is no per-token alternative to a training run)."""

from __future__ import annotations

from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.clock import utcnow


def test_serving_shows_the_apis_and_the_break_even(cli, engine, settings):
    do_ingest(engine, settings, FakeClock(utcnow()), batch(offer("h100", "2.00")), provider="lambdalabs")
    out = cli(
        "cheapest",
        "--kind",
        "inference",
        "--model",
        "llama-3.1-8b",
        "--prompt-tokens",
        "1000",
        "--output-tokens",
        "200",
    )
    assert out.exit_code == 0, out.output
    text = " ".join(out.output.split())
    assert "serverless APIs for llama-3.1-8b" in text and "H100-SXM-80GB at lambdalabs, $2.00/h = $1,460/month" in text
    # The table's cells shrink with the terminal; its title and footnote wrap but stay whole.
    assert "renting wins from: output tokens a month (machine utilisation there)" in text


def test_fine_tuning_shows_no_apis(cli, engine, settings):
    do_ingest(engine, settings, FakeClock(utcnow()), batch(offer("h100", "2.00")), provider="lambdalabs")
    out = cli("cheapest", "--model", "llama-3.1-8b", "--tokens", "1M")
    assert out.exit_code == 0, out.output
    assert "serverless APIs" not in out.output
