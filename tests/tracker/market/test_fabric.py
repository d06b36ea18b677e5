"""A fabric requirement (tracker.market.fabric): the same offers pass it in the ranking (numpy), the offer
list (SQL), /v1/offers and /v1/rank, and an offer that does not say its fabric never passes for one that does."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import get_args

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from providers.fabric import fabric as fabric_attrs
from tests.factories.offers import batch, do_ingest, offer
from tracker.market import fabric
from tracker.market.live import LIVE, fresh_mask
from tracker.market.offers import OfferFilters, current_offers, offer_row
from tracker.market.rank import RankFilters, filter_mask
from tracker.plan.mix import Constraints
from tracker.storage.engine import session_scope

NOW = datetime(2026, 11, 3, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_cache():
    LIVE.clear()
    yield
    LIVE.clear()


def _market(engine, settings, clock):
    """Four 8x H100 offers: an InfiniBand cluster of 4 nodes, an InfiniBand single node with 2 free, a RoCE
    node, one that says nothing; and a PCIe H100 and an 8x A100 SXM whose boards say nothing either."""
    clock.now = NOW
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer(
                "ib4",
                "80",
                count=32,
                attributes=fabric_attrs(
                    gpu_link="nvswitch",
                    network="InfiniBand",
                    network_gbps_per_node=3200,
                    gpus_per_node=8,
                    cluster_nodes=4,
                ),
            ),
            offer(
                "ib1",
                "24",
                count=8,
                attributes=fabric_attrs(gpu_link="sxm5", network="IB", gpus_per_node=8, gpus=8, nodes_available=2),
            ),
            offer("roce", "22", count=8, attributes=fabric_attrs(network="RoCEv2", gpus_per_node=8)),
            offer("plain", "20", count=8),
            offer("pcie", "2", gpu="H100 PCIe", gpu_memory_gb=Decimal(80)),
            offer("a100", "12", gpu="A100 SXM4 80GB", count=8),
        ),
        provider="lambdalabs",
    )


CASES = [
    ("infiniband", None, {"ib4", "ib1"}),
    ("rdma", None, {"ib4", "ib1", "roce"}),
    ("roce", None, {"roce"}),
    ("ethernet", None, set()),
    ("nvswitch", None, {"ib4", "ib1"}),  # only where stated
    ("nvlink", None, {"ib4", "ib1", "roce", "plain", "a100"}),  # stated, or an SXM board
    ("pcie", None, {"pcie"}),
    (None, 2, {"ib4", "ib1"}),
    ("infiniband", 4, {"ib4"}),
    (None, 1, {"ib4", "ib1", "roce", "plain", "pcie", "a100"}),  # one node: every offer is one
]


@pytest.mark.parametrize(("interconnect", "min_nodes", "expected"), CASES)
def test_ranking_and_offer_list_agree(engine, settings, clock, interconnect, min_nodes, expected):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        _, table = LIVE.frame(engine, s)
        kept = filter_mask(
            table, fresh_mask(table, NOW, settings), RankFilters(interconnect=interconnect, min_nodes=min_nodes)
        )
        ranked = set(table["offer_key"][kept].tolist())
        listed = {o.offer_key for o in current_offers(s, OfferFilters(interconnect=interconnect, min_nodes=min_nodes))}
    assert ranked == listed == expected


def test_offer_rows_show_the_fabric(engine, settings, clock):
    _market(engine, settings, clock)
    with session_scope(engine) as s:
        rows = {r["offer_key"]: r for r in map(offer_row, current_offers(s, OfferFilters()))}
    assert rows["ib4"]["fabric"] == {
        "gpu_link": "nvswitch",
        "network": "infiniband",
        "network_gbps_per_gpu": 400.0,
        "gpus_per_node": 8,
        "cluster_nodes": 4,
    }
    assert rows["ib1"]["fabric"]["gpu_link"] == "nvswitch" and rows["ib1"]["fabric"]["nodes_available"] == 2
    assert rows["plain"]["fabric"] is None
    assert fabric.label(rows["ib4"]["fabric"]) == "nvswitch · infiniband 400G/GPU · 8/node · 4 nodes"


def test_api_offers_and_rank_filter_and_show_it(engine, settings, clock):
    _market(engine, settings, clock)
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as client:
        body = client.get("/v1/offers", params={"interconnect": "infiniband", "min_nodes": 4}).json()
        assert [o["offer_key"] for o in body["offers"]] == ["ib4"]
        assert body["offers"][0]["fabric"]["network"] == "infiniband"
        bad = client.get("/v1/offers", params={"interconnect": "carrier-pigeon"})
        assert bad.status_code == 422 and "interconnect" in bad.text
        assert client.get("/v1/offers", params={"min_nodes": 0}).status_code == 422
        job = {
            "model": "llama-3.1-8b",
            "method": "qlora",
            "examples": 5000,
            "tokens_per_example": 1500,
            "epochs": 1,
            "assumptions": "seed",
            "interconnect": "rdma",
            "max_age_hours": 24 * 365,
        }
        ranked = client.post("/v1/rank", json=job)
        assert ranked.status_code == 200, ranked.text
        rows = ranked.json()["rows"]
        assert {r["offer_key"] for r in rows} == {"ib4", "ib1", "roce"}
        assert all(r["fabric"]["network"] in ("infiniband", "roce") for r in rows)
        assert client.post("/v1/rank", json=job | {"interconnect": "x"}).status_code == 422


def test_the_choices_are_one_list_and_bad_ones_are_refused():
    assert set(get_args(fabric.Interconnect)) == set(fabric.INTERCONNECTS)
    with pytest.raises(ValueError, match=r"interconnect\n  Input should be 'nvswitch'"):  # the schema's message
        RankFilters(interconnect="token-ring")
    with pytest.raises(ValueError, match="min_nodes"):
        OfferFilters(min_nodes=0)
    assert Constraints(interconnect="infiniband", min_nodes=4).min_nodes == 4


def test_plan_constraints_carry_the_requirement():
    from tracker.plan.mix import Workload
    from tracker.plan.planner import _filters

    fields = Workload.model_fields
    assert "constraints" in fields
    c = Constraints(interconnect="infiniband", min_nodes=2)
    # Only the constraints and the kind (which sets the default pricing) matter here.
    w = Workload.model_construct(kind="fine-tune", constraints=c)  # type: ignore[call-arg]
    f = _filters(w)
    assert (f.interconnect, f.min_nodes) == ("infiniband", 2)


def test_rank_estimates_a_multi_node_offer_on_its_network(engine, settings, clock):
    clock.now = NOW
    cluster = fabric_attrs(
        gpu_link="nvswitch", network="infiniband", network_gbps_per_gpu=400, gpus_per_node=8, cluster_nodes=4
    )
    do_ingest(
        engine,
        settings,
        clock,
        batch(
            offer("ib", "80", count=32, attributes=cluster),
            offer("eth", "80", count=32, attributes=cluster | {"network": "ethernet", "network_gbps_per_gpu": "50"}),
            offer("unsaid", "80", count=32),  # one 32-GPU machine, as far as anyone said
        ),
        provider="lambdalabs",
    )
    job = {
        "model": "llama-3.1-8b",
        "method": "full",
        "tokens": "50M",
        "assumptions": "hf-peft",
        "max_age_hours": 24 * 365,
    }
    with TestClient(create_app(settings, engine), raise_server_exceptions=False) as client:
        response = client.post("/v1/rank", json=job)
    assert response.status_code == 200, response.text
    tps = {r["offer_key"]: r["tokens_per_second"] for r in response.json()["rows"]}
    assert tps["unsaid"] > tps["ib"] > tps["eth"]  # the ring crosses the nodes' network, slower the slower it is
