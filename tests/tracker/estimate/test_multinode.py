"""Multi-node communication (tracker.estimate.multinode): an offer spanning nodes is bounded by its network,
and a ranking estimates it from the fabric the offer states."""

from __future__ import annotations

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import make_job, prepare
from tracker.estimate.multinode import inter_node_gb_s, nodes_of, seed_link_key

H100 = get_catalog().get("H100-SXM-80GB")


def test_network_figures():
    assert inter_node_gb_s("infiniband", 400.0) == pytest.approx(40.0)  # 400 Gbit/s at 80 % of line rate
    assert inter_node_gb_s("infiniband", None) == inter_node_gb_s("roce", None) == pytest.approx(40.0)
    assert inter_node_gb_s("ethernet", None) == inter_node_gb_s(None, None) == 10.0
    assert inter_node_gb_s(None, 100.0) == pytest.approx(10.0)
    assert (nodes_of(32, 8), nodes_of(8, 8), nodes_of(32, None), nodes_of(9, 8)) == (4, 1, 1, 2)
    assert (seed_link_key(40.0), seed_link_key(10.0)) == ("roce", "default")


@pytest.mark.parametrize("assumptions", ["hf-peft", "seed"])
def test_a_slower_network_never_speeds_a_multi_node_run(assumptions):
    prepared = prepare(make_job("llama-3.1-8b", "full", tokens="50M"), assumptions)
    one_box = prepared.on(H100, 32)
    fast = prepared.on(H100, 32, inter_node_gb_s=inter_node_gb_s("infiniband", 400.0))
    slow = prepared.on(H100, 32, inter_node_gb_s=inter_node_gb_s("ethernet", None))
    assert one_box.tokens_per_second >= fast.tokens_per_second >= slow.tokens_per_second
    assert slow.tokens_per_second < one_box.tokens_per_second  # 10 GB/s across nodes costs a full fine-tune
    if fast.step_time_breakdown is not None:
        assert slow.step_time_breakdown is not None
        assert slow.step_time_breakdown["communication"] > fast.step_time_breakdown["communication"]
