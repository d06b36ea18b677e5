"""`--interconnect` and `--min-nodes` on `gpu-tracker offers` and `cheapest`: the fabric shown and required
as the API does; a bad value is one line and a non-zero exit."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from providers.fabric import fabric
from tests.factories.offers import batch, do_ingest, offer


def _seed(engine, settings, clock):
    clock.now = datetime.now(UTC)  # `cheapest` ranks what is fresh now
    cluster = fabric(
        gpu_link="nvswitch", network="InfiniBand", network_gbps_per_node=3200, gpus_per_node=8, cluster_nodes=4
    )
    offers = batch(offer("ib", "80", count=32, attributes=cluster), offer("box", "20", count=8))
    do_ingest(engine, settings, clock, offers, provider="lambdalabs")


def test_offers_filter_and_show_the_fabric(cli, engine, settings, clock, monkeypatch):
    from tracker.cli.output import console, real_console

    monkeypatch.setattr(real_console(console), "width", 220)  # the table's columns unwrapped
    _seed(engine, settings, clock)
    out = cli("offers", "--interconnect", "infiniband", "--min-nodes", "4", "--json")
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert [r["offer_key"] for r in rows] == ["ib"] and rows[0]["fabric"]["network_gbps_per_gpu"] == 400
    table = cli("offers")
    assert table.exit_code == 0 and "infiniband 400G/GPU" in table.output
    ranked = cli("cheapest", "--model", "llama-3.1-8b", "--tokens", "1M", "--interconnect", "rdma", "--json")
    assert ranked.exit_code == 0, ranked.output
    assert {r["offer_key"] for r in json.loads(ranked.output)} == {"ib"}


def test_a_bad_requirement_is_one_line(cli, engine, settings, clock):
    for command in (["offers"], ["cheapest", "--model", "llama-3.1-8b", "--tokens", "1M"]):
        for bad in (["--interconnect", "token-ring"], ["--min-nodes", "0"]):
            out = cli(*command, *bad)
            assert out.exit_code != 0 and ("--interconnect" in out.output or "--min-nodes" in out.output), out.output
            assert len(out.output.strip().splitlines()) == 1, out.output
