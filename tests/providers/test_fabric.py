"""providers.fabric: the one reader of what an API says of interconnect and cluster shape, and the adapters
that fill it (from their bundled cassettes and a real captured Vast response)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from providers.adapters import vastai
from providers.adapters.ionet import IoNet
from providers.adapters.primeintellect import parse_page
from providers.adapters.sfcompute import SfCompute
from providers.adapters.shadeform import Shadeform
from providers.fabric import Fabric, fabric, gpu_link_of, network_of, read_fabric
from tests.factories.cassettes import by_key, replay
from tests.factories.real_payloads import real_payload


@pytest.fixture(scope="module")
def shadeform():
    return replay(Shadeform)


@pytest.fixture(scope="module")
def ionet():
    return replay(IoNet)


@pytest.fixture(scope="module")
def sfcompute():
    return replay(SfCompute)


@pytest.mark.parametrize(
    ("raw", "network"),
    [
        ("InfiniBand", "infiniband"),
        ("IB", "infiniband"),
        ("infiniband_ndr", "infiniband"),
        ("NDR", "infiniband"),
        ("RoCEv2", "roce"),
        ("Ethernet", "ethernet"),
        ("carrier pigeon", None),
        (None, None),
        (400, None),
    ],
)
def test_network_words(raw, network):
    assert network_of(raw) == network


def test_gpu_link_words():
    assert gpu_link_of("sxm5", gpus=8) == "nvswitch"  # an 8-GPU SXM board is an HGX NVSwitch board
    assert gpu_link_of("SXM4", gpus=Decimal(4)) == "nvlink"
    assert gpu_link_of("PCIe") == "pcie" and gpu_link_of("infinity_fabric") == "xgmi"
    assert gpu_link_of("warp drive") is None


def test_fabric_validates_and_derives_per_gpu_bandwidth():
    got = fabric(network="InfiniBand", network_gbps_per_node=3200, gpus_per_node=8, cluster_nodes=4, nodes_available=0)
    assert got == {
        "network": "infiniband",
        "network_gbps_per_gpu": "400",
        "gpus_per_node": 8,
        "cluster_nodes": 4,
        "nodes_available": 0,
    }
    # Nonsense is not said: no key at all.
    assert fabric(network="x", network_gbps_per_gpu=-1, gpus_per_node=1.5, cluster_nodes=True) == {}
    back = read_fabric(got | {"gpu_link": "nvswitch"})
    assert back == Fabric("nvswitch", "infiniband", Decimal(400), 8, 4, 0) and back.rdma is True
    # Stored attributes are data: bad values read as not said.
    assert read_fabric({"network": "INFINIBAND", "gpus_per_node": "eight", "nodes_available": -2}) == Fabric()


def test_shadeform_interconnect_and_nvlink_fill_the_gpu_link(shadeform):
    links = {
        (o.attributes.get("interconnect"), o.attributes.get("nvlink"), int(o.gpu_count)): o.attributes.get("gpu_link")
        for o in shadeform.offers
    }
    assert links[("sxm5", True, 8)] == "nvswitch"
    assert all(v == "pcie" for (ic, nv, _), v in links.items() if ic == "pcie" and nv is False)
    assert {v for (ic, _, _), v in links.items() if ic == "infinity_fabric"} == {"xgmi"}
    assert all(o.attributes["gpus_per_node"] == int(o.gpu_count) for o in shadeform.offers)


def test_ionet_sxm_configs_are_nvlink(ionet):
    for o in ionet.offers:
        if str(o.attributes.get("interconnect", "")).startswith("sxm"):
            assert o.attributes["gpu_link"] in ("nvlink", "nvswitch"), o.key


def test_sfcompute_blocks_are_infiniband_clusters(sfcompute):
    block = by_key(sfcompute)["h100i:1d"]
    assert (block.attributes["network"], block.attributes["gpu_link"]) == ("infiniband", "nvswitch")
    assert (block.attributes["gpus_per_node"], block.attributes["cluster_nodes"]) == (8, 1)
    assert "network" not in by_key(sfcompute)["h100v:1d"].attributes  # the VM type's network is not said


def test_prime_intellect_interconnect_fields():
    item = {
        "cloudId": "c",
        "gpuType": "H100_80GB",
        "socket": "SXM5",
        "provider": "dc_roan",
        "gpuCount": 8,
        "prices": {"onDemand": 20, "currency": "USD"},
        "interconnect": 3200,
        "interconnectType": "infiniband",
    }
    offer = parse_page({"items": [item]}).offers[0]
    assert read_fabric(offer.attributes) == Fabric(None, "infiniband", Decimal(400), 8)
    unsaid = parse_page({"items": [item | {"interconnect": None, "interconnectType": None}]}).offers[0]
    assert read_fabric(unsaid.attributes).network is None


def test_vast_measured_nvlink_bandwidth_marks_the_gpu_link():
    rows = real_payload("vastai/vast-cli_11ecdfa_search_trimmed.json")  # 221 real bundles
    result = vastai.parse({"offers": rows})
    by_id = {str(r.get("id")): r for r in rows}
    marked = [o for o in result.offers if o.attributes.get("gpu_link") == "nvlink"]
    assert marked, "the real response has hosts with a measured NVLink bandwidth"
    for o in result.offers:
        row = next((r for k, r in by_id.items() if o.key.startswith(k)), None)
        if row is not None and not row.get("bw_nvlink"):
            assert "gpu_link" not in o.attributes


def test_a_cluster_sheet_lists_its_price_per_cluster_size():
    from providers.contract import ProviderError
    from providers.sheet import parse_sheet

    shape = {"gpu_link": "nvswitch", "network": "infiniband", "network_gbps_per_node": 3200, "gpus_per_node": 8}
    rows = [
        {
            "gpu": "H100-SXM-80GB",
            "gpu_count": 8 * n,
            "price_per_gpu_hour": price,
            "fabric": shape | {"cluster_nodes": n},
        }
        for n, price in ((1, "2.40"), (16, "2.10"))
    ]
    result = parse_sheet({"title": "t", "source": "a cluster page", "as_of": "2026-11-01", "rates": rows})
    small, big = result.offers
    assert (small.attributes["cluster_nodes"], big.attributes["cluster_nodes"]) == (1, 16)
    assert big.attributes["network_gbps_per_gpu"] == "400" and big.price_per_gpu_hour == Decimal("2.10")
    for bad in ({"network": "pigeon"}, {"nodes": 3}):
        with pytest.raises(ProviderError, match="fabric"):
            parse_sheet({"rates": [rows[0] | {"fabric": bad}]})


def test_cloudrift_free_nodes_are_the_nodes_available():
    from providers.adapters.cloudrift import CloudRift

    placed = [o for o in replay(CloudRift).offers if "free_nodes" in o.attributes]
    assert placed and all(o.attributes["nodes_available"] == o.attributes["free_nodes"] for o in placed)
