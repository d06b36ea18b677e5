"""The provider registry: an explicit list of every adapter.

A hand-kept list (rather than discovery by scanning modules) makes the set of providers visible in one
place, reviewable in a diff, and free of import side effects; `tests/providers/test_registry.py` checks
that no adapter module is missing from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from providers.adapters.akash import Akash
from providers.adapters.alibaba import AlibabaCloud
from providers.adapters.atlanticnet import AtlanticNet
from providers.adapters.aws import Aws
from providers.adapters.azure import Azure
from providers.adapters.clore import Clore
from providers.adapters.cloudrift import CloudRift
from providers.adapters.coreweave import CoreWeaveRates
from providers.adapters.crusoe import CrusoeRates
from providers.adapters.cudo import Cudo
from providers.adapters.daytona import Daytona
from providers.adapters.denvr import Denvr
from providers.adapters.digitalocean import DigitalOcean
from providers.adapters.fluidstack import FluidStack
from providers.adapters.gcore import Gcore
from providers.adapters.gcp import Gcp
from providers.adapters.hetzner import Hetzner
from providers.adapters.hivenet import Hivenet
from providers.adapters.hotaisle import HotAisle
from providers.adapters.huggingface import HuggingFace
from providers.adapters.hyperbolic import Hyperbolic
from providers.adapters.hyperstack import Hyperstack
from providers.adapters.ionet import IoNet
from providers.adapters.ionos import Ionos
from providers.adapters.jarvislabs import JarvisLabs
from providers.adapters.koyeb import Koyeb
from providers.adapters.lambdalabs import LambdaLabs
from providers.adapters.latitude import Latitude
from providers.adapters.linode import Linode
from providers.adapters.lium import Lium
from providers.adapters.massedcompute import MassedCompute
from providers.adapters.mithril import Mithril
from providers.adapters.modal import ModalRates
from providers.adapters.nebius import NebiusRates
from providers.adapters.nebulablock import NebulaBlock
from providers.adapters.novita import Novita
from providers.adapters.oblivus import Oblivus
from providers.adapters.oci import Oci
from providers.adapters.ovhcloud import OvhCloud
from providers.adapters.packetai import PacketAiRates
from providers.adapters.paperspace import PaperspaceRates
from providers.adapters.ppio import Ppio
from providers.adapters.primeintellect import PrimeIntellect
from providers.adapters.quantacloud import QuantaCloud
from providers.adapters.reference import ReferenceRates
from providers.adapters.replicate import ReplicateRates
from providers.adapters.runpod import RunPod
from providers.adapters.sakura import Sakura
from providers.adapters.salad import Salad
from providers.adapters.scaleway import Scaleway
from providers.adapters.seeweb import Seeweb
from providers.adapters.sfcompute import SfCompute
from providers.adapters.shadeform import Shadeform
from providers.adapters.spheron import Spheron
from providers.adapters.tencent import TencentCloud
from providers.adapters.tensordock import TensorDock
from providers.adapters.thundercompute import ThunderCompute
from providers.adapters.vastai import VastAi
from providers.adapters.verda import Verda
from providers.adapters.voltagepark import VoltagePark
from providers.adapters.vultr import Vultr
from providers.contract import Provider, ProviderKind

__all__ = ["PROVIDERS", "UnknownProvider", "all_providers", "get_provider", "reference_providers"]

PROVIDERS: tuple[type[Provider], ...] = (
    Akash,
    AlibabaCloud,
    AtlanticNet,
    Aws,
    Azure,
    Clore,
    CloudRift,
    CoreWeaveRates,
    CrusoeRates,
    Cudo,
    Daytona,
    Denvr,
    DigitalOcean,
    FluidStack,
    Gcore,
    Gcp,
    Hetzner,
    Hivenet,
    HotAisle,
    HuggingFace,
    Hyperbolic,
    Hyperstack,
    IoNet,
    Ionos,
    JarvisLabs,
    Koyeb,
    LambdaLabs,
    Latitude,
    Linode,
    Lium,
    MassedCompute,
    Mithril,
    ModalRates,
    NebiusRates,
    NebulaBlock,
    Novita,
    Oblivus,
    Oci,
    OvhCloud,
    PacketAiRates,
    PaperspaceRates,
    Ppio,
    PrimeIntellect,
    QuantaCloud,
    ReferenceRates,
    ReplicateRates,
    RunPod,
    Sakura,
    Salad,
    Scaleway,
    Seeweb,
    SfCompute,
    Shadeform,
    Spheron,
    TencentCloud,
    TensorDock,
    ThunderCompute,
    VastAi,
    Verda,
    VoltagePark,
    Vultr,
)


class UnknownProvider(KeyError):
    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(name)
        self.name, self.known = name, known

    def __str__(self) -> str:
        # The nearest names, not all fifty: one line a person reads (`gpu-tracker providers` lists them all).
        near = near_names(self.name, self.known)
        hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(sorted(self.known)[:8])}, …"
        return f"unknown provider {self.name!r}; {hint} ({len(self.known)} providers: `gpu-tracker providers`)"


def near_names(name: str, known: Sequence[str]) -> list[str]:
    """Known names close to a mistyped one: close spellings, and names it begins or is part of ("lambda")."""
    import difflib

    wanted = name.strip().lower()
    close = difflib.get_close_matches(wanted, known, n=3, cutoff=0.6)
    partial = [k for k in known if wanted and (k.startswith(wanted) or wanted in k or k in wanted)]
    return list(dict.fromkeys([*close, *partial]))[:4]


@lru_cache(maxsize=1)
def _by_name() -> dict[str, type[Provider]]:
    found: dict[str, type[Provider]] = {}
    for provider in PROVIDERS:
        if provider.name in found:
            raise RuntimeError(f"two providers named {provider.name!r}")
        found[provider.name] = provider
    return dict(sorted(found.items()))


def all_providers() -> dict[str, type[Provider]]:
    return dict(_by_name())


def get_provider(name: str) -> type[Provider]:
    known = _by_name()
    if name not in known:
        raise UnknownProvider(name, list(known))
    return known[name]


def reference_providers() -> frozenset[str]:
    """Providers whose prices are static published sheets (reference data, not a live market)."""
    return frozenset(name for name, p in _by_name().items() if p.kind == ProviderKind.static_sheet)
