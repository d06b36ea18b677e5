"""A fabric requirement (`--interconnect infiniband --min-nodes 4`): the one rule for which offers meet it.

The fabric an offer runs on is what its API said (`providers.fabric`: flat attribute keys). A requirement
names one interconnect and/or a least number of nodes:

* `nvswitch`, `nvlink`, `xgmi`, `pcie`: the GPU link inside a node. Stated by the offer, or else read from
  the card's form factor, which fixes it (an SXM module sits on an NVLink board, an NVL card has its
  NVLink bridge, an OAM module has Infinity Fabric, a PCIe or consumer card talks over PCIe). `nvlink` is
  met by `nvswitch` too (NVSwitch is all-to-all NVLink); `nvswitch` only when stated: an SXM4 board of 4
  GPUs is a direct mesh.
* `infiniband`, `roce`, `ethernet`: the network between nodes, as stated; `rdma` is InfiniBand or RoCE.
* `min_nodes`: the offer rents at least that many nodes together (`cluster_nodes`) or says that many can
  be had now (`nodes_available`).

An offer that does not say what a requirement asks is left out: "not said" never passes for "yes".
`mask()` is the rule over the live table (rank, plan, market), `conditions()` the same rule as SQL (the
offer list), `columns()` what the live table extracts for it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import numpy as np
from sqlalchemy import ColumnElement, and_, false, or_

from providers.fabric import GPU_LINKS, NETWORKS, read_fabric
from tracker.catalog.gpus import get_catalog
from tracker.estimate.multinode import inter_node_gb_s, nodes_of
from tracker.storage.sql import json_number, json_text
from tracker.storage.tables import Offer

if TYPE_CHECKING:
    import numpy.typing as npt

    from tracker.market.table import OfferTable

    Mask: TypeAlias = npt.NDArray[np.bool_]

__all__ = [
    "FIELDS",
    "INTERCONNECTS",
    "INTERCONNECT_HELP",
    "MAX_NODES",
    "MIN_NODES_HELP",
    "Interconnect",
    "active",
    "check",
    "columns",
    "conditions",
    "inter_node_links",
    "link_of_form_factor",
    "mask",
    "row_fabric",
]

INTERCONNECTS = (*GPU_LINKS, *NETWORKS, "rdma")
# The same choices as a type, for the API's and the CLI's validation (kept equal to INTERCONNECTS by a test).
Interconnect = Literal["nvswitch", "nvlink", "xgmi", "pcie", "infiniband", "roce", "ethernet", "rdma"]
INTERCONNECT_HELP = (
    "Only offers on this fabric: a GPU link inside the node (nvswitch, nvlink, xgmi, pcie; stated, or fixed "
    "by the card's form factor) or a network between nodes (infiniband, roce, ethernet; rdma = either of the "
    "first two), as the provider states it."
)
MIN_NODES_HELP = "Only offers of at least this many nodes rented together, or with that many available now."
FIELDS = ("gpu_link", "network", "network_gbps_per_gpu", "gpus_per_node", "cluster_nodes", "nodes_available")
_NUMBERS = ("network_gbps_per_gpu", "gpus_per_node", "cluster_nodes", "nodes_available")
MAX_NODES = 100_000

# The GPU link a card's form factor fixes, when an offer does not state it.
_FORM_FACTOR_LINK = {
    "SXM": "nvlink",
    "NVL": "nvlink",
    "superchip": "nvlink",
    "OAM": "xgmi",
    "PCIe": "pcie",
    "consumer": "pcie",
}


def link_of_form_factor(form_factor: str | None) -> str | None:
    return _FORM_FACTOR_LINK.get(form_factor or "")


def check(interconnect: str | None, min_nodes: int | None) -> None:
    """ValueError naming the field when a requirement is not one we can apply."""
    if interconnect is not None and interconnect not in INTERCONNECTS:
        raise ValueError(f"interconnect must be one of {', '.join(INTERCONNECTS)}, got {interconnect!r}")
    if min_nodes is not None and (isinstance(min_nodes, bool) or not 1 <= min_nodes <= MAX_NODES):
        raise ValueError(f"min_nodes must be a whole number from 1 to {MAX_NODES}, got {min_nodes!r}")


def active(interconnect: str | None, min_nodes: int | None) -> bool:
    return interconnect is not None or (min_nodes is not None and min_nodes > 1)


def columns() -> dict[str, ColumnElement[Any]]:
    """The fabric keys of each offer's attributes, for the live table (None where not said)."""
    texts = {name: json_text(Offer.attributes, name) for name in ("gpu_link", "network")}
    return texts | {name: json_number(Offer.attributes, name) for name in _NUMBERS}


def _floats(values: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    try:  # numbers and None (NaN) convert in one C pass, as every ranking needs them
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.array([math.nan if v is None else float(v) for v in values], dtype=np.float64)


def _wanted_links(interconnect: str) -> tuple[str, ...]:
    return ("nvlink", "nvswitch") if interconnect == "nvlink" else (interconnect,)


def mask(table: OfferTable, interconnect: str | None, min_nodes: int | None) -> Mask:
    """Offers of `table` that meet the requirement (all True when there is none)."""
    check(interconnect, min_nodes)
    out = np.ones(len(table), dtype=bool)
    if not len(table) or not active(interconnect, min_nodes):
        return out
    if interconnect in GPU_LINKS:
        stated = table["gpu_link"] if "gpu_link" in table else np.full(len(table), None, dtype=object)
        catalog = get_catalog()
        by_card: dict[object, str | None] = {}
        for gpu_id in set(table["gpu_id"].tolist()):
            try:
                by_card[gpu_id] = link_of_form_factor(catalog.get(str(gpu_id)).form_factor)
            except KeyError:
                by_card[gpu_id] = None
        wanted = set(_wanted_links(interconnect))
        inferable = interconnect != "nvswitch"
        out &= np.fromiter(
            (
                s in wanted if isinstance(s, str) else inferable and by_card.get(g) in wanted
                for s, g in zip(stated, table["gpu_id"], strict=True)
            ),
            dtype=bool,
            count=len(table),
        )
    elif interconnect is not None:
        networks = ("infiniband", "roce") if interconnect == "rdma" else (interconnect,)
        stated = table["network"] if "network" in table else np.full(len(table), None, dtype=object)
        out &= np.fromiter((s in networks for s in stated), dtype=bool, count=len(table))
    if min_nodes is not None and min_nodes > 1:
        nodes = np.fmax(
            *(
                _floats(table[c]) if c in table else np.full(len(table), np.nan)
                for c in ("cluster_nodes", "nodes_available")
            )
        )
        with np.errstate(invalid="ignore"):
            out &= nodes >= min_nodes
    return out


def conditions(interconnect: str | None, min_nodes: int | None) -> list[ColumnElement[bool]]:
    """`mask` as SQL conditions on `offers` (the offer list filters in the database)."""
    check(interconnect, min_nodes)
    out: list[ColumnElement[bool]] = []
    if interconnect in GPU_LINKS:
        link = json_text(Offer.attributes, "gpu_link")
        wanted = _wanted_links(interconnect)
        forms = [f for f, v in _FORM_FACTOR_LINK.items() if v in wanted] if interconnect != "nvswitch" else []
        inferred = and_(link.is_(None), Offer.form_factor.in_(forms)) if forms else false()
        out.append(or_(link.in_(wanted), inferred))
    elif interconnect is not None:
        networks = ("infiniband", "roce") if interconnect == "rdma" else (interconnect,)
        out.append(json_text(Offer.attributes, "network").in_(networks))
    if min_nodes is not None and min_nodes > 1:
        out.append(or_(*(json_number(Offer.attributes, c) >= min_nodes for c in ("cluster_nodes", "nodes_available"))))
    return out


def row_fabric(values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The fabric part of a row (rank, offers), read by the one reader (`providers.fabric.read_fabric`):
    the keys the offer states, None when it says nothing of its fabric."""
    said = {k: v for k, v in read_fabric(values).as_dict().items() if v is not None}
    return said or None


def label(said: Mapping[str, Any] | None) -> str:
    """A short text of a row's fabric for tables: "nvswitch · infiniband 400G/GPU · 8/node · 4 nodes"."""
    if not said:
        return "-"
    parts = [str(said["gpu_link"])] if said.get("gpu_link") else []
    if said.get("network"):
        bw = said.get("network_gbps_per_gpu")
        parts.append(str(said["network"]) + (f" {bw:g}G/GPU" if bw else ""))
    if said.get("gpus_per_node"):
        parts.append(f"{said['gpus_per_node']}/node")
    if said.get("cluster_nodes", 1) > 1:
        parts.append(f"{said['cluster_nodes']} nodes")
    if said.get("nodes_available") is not None:
        parts.append(f"{said['nodes_available']} free")
    return " · ".join(parts) or "-"


def inter_node_links(table: OfferTable, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """Per offer of `rows`: the achieved inter-node GB/s per GPU (tracker.estimate.multinode) of an offer
    that spans several nodes by its stated GPUs per node, NaN for one within a node or that says nothing."""
    out = np.full(len(rows), np.nan)
    if "gpus_per_node" not in table or not len(rows):
        return out
    per_node = _floats(table["gpus_per_node"][rows])
    gpus = table["gpu_count_f"][rows]
    networks = table["network"][rows] if "network" in table else np.full(len(rows), None, dtype=object)
    has_gbps = "network_gbps_per_gpu" in table
    gbps = _floats(table["network_gbps_per_gpu"][rows]) if has_gbps else np.full(len(rows), np.nan)
    for i in np.flatnonzero(np.isfinite(per_node)):
        if nodes_of(float(gpus[i]), float(per_node[i])) > 1:
            network = networks[i] if networks[i] in NETWORKS else None
            out[i] = inter_node_gb_s(network, None if math.isnan(gbps[i]) else float(gbps[i]))
    return out
