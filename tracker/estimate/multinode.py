"""Communication across nodes: the bandwidth a multi-node offer's all-reduce gets from its fabric.

The step model prices communication at the card's NVLink/PCIe link (`stacks.toml [step.link_gb_s]`): right
inside one node. An offer of several nodes (`providers.fabric`: `gpus_per_node` below its GPU count) sends
every ring step across the slowest hop, the network between nodes, so its link is the lesser of the two.
The network's figure is the provider's per-GPU bandwidth at the share NCCL achieves of line rate, else a
prior by kind: an RDMA fabric (InfiniBand, RoCE) at 400 Gbit/s per GPU, the rail of an HGX node, which at
that share is the step model's own `roce` link (40 GB/s); anything else the model's default (10 GB/s).
"""

from __future__ import annotations

import math

__all__ = ["ACHIEVED_FRACTION", "inter_node_gb_s", "nodes_of", "seed_link_key"]

# nccl-tests all-reduce bus bandwidth over line rate on InfiniBand/RoCE: about 0.8 (NVIDIA's published runs
# reach 0.8-0.9); the lower end, so a multi-node estimate is not optimistic.
ACHIEVED_FRACTION = 0.8
RDMA_PRIOR_GBPS_PER_GPU = 400.0
OTHER_PRIOR_GB_S = 10.0


def inter_node_gb_s(network: str | None, gbps_per_gpu: float | None) -> float:
    """Achieved all-reduce GB/s per GPU between nodes."""
    if gbps_per_gpu is not None and math.isfinite(gbps_per_gpu) and gbps_per_gpu > 0:
        return gbps_per_gpu / 8.0 * ACHIEVED_FRACTION
    if network in ("infiniband", "roce"):
        return RDMA_PRIOR_GBPS_PER_GPU / 8.0 * ACHIEVED_FRACTION
    return OTHER_PRIOR_GB_S


def nodes_of(gpus: float, gpus_per_node: float | None) -> int:
    """Nodes an offer spans: 1 unless it says its GPUs per node and has more GPUs than one node holds."""
    if gpus_per_node is None or not math.isfinite(gpus_per_node) or gpus_per_node < 1 or gpus <= gpus_per_node:
        return 1
    return math.ceil(gpus / gpus_per_node)


def seed_link_key(gb_s: float) -> str:
    """The link kind whose scaling the seed model (per-interconnect efficiencies) applies to a network of
    `gb_s`: an RDMA-class network scales like RoCE, a slower one takes the default."""
    return "roce" if gb_s >= inter_node_gb_s("roce", None) else "default"
