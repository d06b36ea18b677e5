"""The fabric an offer runs on: how its GPUs talk inside a node and between nodes, and the cluster's shape.

What an API says of it, an adapter puts in `ScrapedOffer.attributes` under the keys of `FIELDS` (flat
keys, so the database can filter on them), built by `fabric(...)`, the one validator: a value the API
gives in its own words ("InfiniBand", "IB", "sxm5", "RoCEv2", 3200 Gbit/s per node) is normalised here,
and a value that means nothing is left out rather than guessed. A key is present only when the API said
it (or the provider's documentation says it of that instance type, noted in the adapter): absence means
"not said". `read_fabric()` reads the keys back, validated again (stored attributes are data).

* `gpu_link`: GPU to GPU inside a node: `nvswitch` (every GPU to every other at full NVLink speed, HGX
  boards), `nvlink` (NVLink, bridges or a partial mesh), `xgmi` (AMD Infinity Fabric), `pcie`.
* `network`: between nodes: `infiniband`, `roce` (RDMA over Ethernet), `ethernet` (no RDMA).
* `network_gbps_per_gpu`: the inter-node bandwidth per GPU, Gbit/s (a 3.2 Tbit/s node of 8 GPUs: 400).
* `gpus_per_node`: GPUs in one node; `cluster_nodes`: nodes this offer rents together at its price (a
  cluster sold as a block: the price per cluster size is one offer per size); `nodes_available`: how many
  such nodes the provider says can be had now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "FIELDS",
    "GPU_LINKS",
    "NETWORKS",
    "Fabric",
    "fabric",
    "gpu_link_of",
    "network_of",
    "read_fabric",
]

FIELDS: dict[str, str] = {
    "gpu_link": "GPU-to-GPU link inside a node: nvswitch, nvlink, xgmi or pcie",
    "network": "network between nodes: infiniband, roce or ethernet",
    "network_gbps_per_gpu": "inter-node bandwidth per GPU, Gbit/s",
    "gpus_per_node": "GPUs in one node",
    "cluster_nodes": "nodes this offer rents together at its price",
    "nodes_available": "nodes of this shape the provider says can be had now",
}
GPU_LINKS = ("nvswitch", "nvlink", "xgmi", "pcie")
NETWORKS = ("infiniband", "roce", "ethernet")

# Provider words → our values. Compared lower-case with spaces, dashes and underscores removed.
_LINK_WORDS = {
    "nvswitch": "nvswitch",
    "hgx": "nvswitch",
    "dgx": "nvswitch",
    "nvlink": "nvlink",
    "sxm": "nvlink",
    "sxm2": "nvlink",
    "sxm3": "nvlink",
    "sxm4": "nvlink",
    "sxm5": "nvlink",
    "sxm6": "nvlink",
    "nvl": "nvlink",
    "xgmi": "xgmi",
    "infinityfabric": "xgmi",
    "oam": "xgmi",
    "pcie": "pcie",
    "pci": "pcie",
}
_NETWORK_WORDS = {
    "infiniband": "infiniband",
    "ib": "infiniband",
    "ndr": "infiniband",
    "hdr": "infiniband",
    "xdr": "infiniband",
    "quantum2": "infiniband",
    "roce": "roce",
    "rocev2": "roce",
    "rdma": "roce",
    "efa": "roce",
    "spectrumx": "roce",
    "ethernet": "ethernet",
    "eth": "ethernet",
    "tcp": "ethernet",
}


def _word(raw: object) -> str:
    return "".join(ch for ch in str(raw).lower() if ch.isalnum()) if isinstance(raw, str) else ""


def gpu_link_of(raw: object, *, gpus: object = None) -> str | None:
    """'sxm5' → 'nvlink' ('nvswitch' on an 8-GPU board: HGX SXM boards switch all 8); 'PCIe' → 'pcie'."""
    link = _LINK_WORDS.get(_word(raw))
    if link == "nvlink" and _word(raw).startswith("sxm") and _count(gpus) == 8:
        return "nvswitch"
    return link


def network_of(raw: object) -> str | None:
    """'InfiniBand' / 'IB' / 'NDR' → 'infiniband'; 'RoCEv2' → 'roce'; 'Ethernet' → 'ethernet'."""
    word = _word(raw)
    if word in _NETWORK_WORDS:
        return _NETWORK_WORDS[word]
    for prefix, value in (("infiniband", "infiniband"), ("roce", "roce")):  # "InfiniBand NDR 400G"
        if word.startswith(prefix):
            return value
    return None


def _count(raw: object, *, zero: bool = False) -> int | None:
    """A whole, positive count (0 too with `zero`: "no node free now" is news); else None."""
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        value = Decimal(str(raw))
    except (InvalidOperation, ValueError):
        return None
    if not value.is_finite() or value != value.to_integral_value() or not (0 if zero else 1) <= value < 100_000:
        return None
    return int(value)


def _gbps(raw: object) -> Decimal | None:
    if isinstance(raw, bool) or raw is None:
        return None
    try:
        value = Decimal(str(raw))
    except (InvalidOperation, ValueError):
        return None
    return value.normalize() if value.is_finite() and 0 < value <= 100_000 else None


@dataclass(frozen=True, slots=True)
class Fabric:
    gpu_link: str | None = None
    network: str | None = None
    network_gbps_per_gpu: Decimal | None = None
    gpus_per_node: int | None = None
    cluster_nodes: int | None = None
    nodes_available: int | None = None

    @property
    def rdma(self) -> bool | None:
        """Whether nodes reach each other by RDMA (InfiniBand or RoCE); None: not said."""
        return None if self.network is None else self.network in ("infiniband", "roce")

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu_link": self.gpu_link,
            "network": self.network,
            "network_gbps_per_gpu": None if self.network_gbps_per_gpu is None else float(self.network_gbps_per_gpu),
            "gpus_per_node": self.gpus_per_node,
            "cluster_nodes": self.cluster_nodes,
            "nodes_available": self.nodes_available,
        }


def fabric(
    *,
    gpu_link: object = None,
    network: object = None,
    network_gbps_per_gpu: object = None,
    network_gbps_per_node: object = None,
    gpus_per_node: object = None,
    cluster_nodes: object = None,
    nodes_available: object = None,
    gpus: object = None,
) -> dict[str, Any]:
    """The attribute keys for what an API said (None: not said, left out). Provider words are normalised
    (`gpu_link_of`, `network_of`); a per-node bandwidth is divided by the GPUs per node (`gpus_per_node`,
    else `gpus`, the offer's count); a value that means nothing is left out."""
    per_node = _count(gpus_per_node) or _count(gpus)
    per_gpu = _gbps(network_gbps_per_gpu)
    node_bw = _gbps(network_gbps_per_node)
    if per_gpu is None and node_bw is not None and per_node:
        per_gpu = (node_bw / per_node).normalize()
    values: dict[str, Any] = {
        "gpu_link": gpu_link if gpu_link in GPU_LINKS else gpu_link_of(gpu_link, gpus=per_node),
        "network": network if network in NETWORKS else network_of(network),
        "network_gbps_per_gpu": None if per_gpu is None else format(per_gpu, "f"),
        "gpus_per_node": _count(gpus_per_node),
        "cluster_nodes": _count(cluster_nodes),
        "nodes_available": _count(nodes_available, zero=True),
    }
    return {k: v for k, v in values.items() if v is not None}


def read_fabric(attributes: Mapping[str, Any] | None) -> Fabric:
    """The fabric stored in an offer's attributes; a key whose value is not valid is read as not said."""
    a = attributes or {}
    link, network = a.get("gpu_link"), a.get("network")
    return Fabric(
        gpu_link=link if link in GPU_LINKS else None,
        network=network if network in NETWORKS else None,
        network_gbps_per_gpu=_gbps(a.get("network_gbps_per_gpu")),
        gpus_per_node=_count(a.get("gpus_per_node")),
        cluster_nodes=_count(a.get("cluster_nodes")),
        nodes_available=_count(a.get("nodes_available"), zero=True),
    )
