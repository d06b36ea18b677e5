"""`--aggregated include|exclude|dedupe` on `gpu-tracker offers` and `cheapest`: resold offers counted,
left out or counted once per machine, as the API does; a bad value is one line and a non-zero exit."""

from __future__ import annotations

import json

from providers.adapters.shadeform import Shadeform
from providers.fetching import labelled_aggregated
from tests.factories.offers import batch, do_ingest, offer


def _seed(engine, settings, clock):
    do_ingest(engine, settings, clock, batch(offer("h100", "3.00")), provider="lambdalabs")
    resold = batch(offer("lam", "3.50", upstream="lambdalabs"), offer("hyp", "2.80", upstream="hyperstack"))
    do_ingest(engine, settings, clock, labelled_aggregated(Shadeform, resold), provider="shadeform")


def test_offers_option(cli, engine, settings, clock):
    _seed(engine, settings, clock)
    counted = {}
    for mode in ("include", "exclude", "dedupe"):
        out = cli("offers", "--aggregated", mode, "--json")
        assert out.exit_code == 0, out.output
        counted[mode] = sorted((r["provider"], r["via"], r["upstream"]) for r in json.loads(out.output))
    assert counted["include"] == [
        ("lambdalabs", None, None),
        ("shadeform", "shadeform", "hyperstack"),
        ("shadeform", "shadeform", "lambdalabs"),
    ]
    assert counted["exclude"] == [("lambdalabs", None, None)]
    assert counted["dedupe"] == [("lambdalabs", None, None), ("shadeform", "shadeform", "hyperstack")]


def test_a_bad_choice_is_one_line(cli, engine, settings, clock):
    for command in (["offers"], ["cheapest", "--model", "llama-3.1-8b", "--tokens", "1M"]):
        out = cli(*command, "--aggregated", "sometimes")
        # The schema's message (tracker.market.filters), as the API gives it, naming the option.
        assert out.exit_code != 0 and "--aggregated: Input should be 'include', 'exclude' or 'dedupe'" in out.output
        assert "got 'sometimes'" in out.output, out.output
        assert len(out.output.strip().splitlines()) == 1
