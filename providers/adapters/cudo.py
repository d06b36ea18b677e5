"""CUDO Compute: `GET https://rest.compute.cudo.org/v1/vms/machine-types`.

API and auth: the machine-type listing is public (gpuhunt's REST reader sent no key,
`dstackai/gpuhunt@064e1d6^:src/gpuhunt/providers/cudo.py`); CUDO's API key is for the account endpoints,
so none is declared here. One request per run, no pagination (the listing is one `machineTypes` array).
No rate limit is documented (`requests_per_minute` None); a 429 is retried with backoff by `providers.http`.

Units: every rate is a decimal STRING of USD per hour in an object `{"value": "…"}`, per unit of resource:
`gpuPriceHr` per GPU, `vcpuPriceHr` per vCPU, `memoryGibPriceHr` per GiB, `minStorageGibPriceHr` per GiB of
disk, `ipv4PriceHr` per address. A VM costs the sum of its parts, so an offer is priced for a representative
shape: per GPU, 4 vCPUs (kept within the type's `minVcpuPerGpu`…`maxVcpuPerGpu` when it states them) and
2 GiB of memory per vCPU (the ratio of the shapes SkyPilot prices for CUDO, so our 1- and 2-GPU prices can be
checked against its published catalog). Disk and the IPv4 address are optional extras, not included; all rates are kept
in attributes so any other shape can be re-priced.

Offers: one per (data center `dataCenterId`, `machineType`, GPU count). The 1-GPU offer is always listed
(its history survives a sold-out spell, `available` false when `maxGpuFree` is 0); 2, 4 and 8 GPUs are
listed while that many are free (`maxGpuFree`), and are available then. CPU-only machine types (no
`gpuModel`) are ignored; a GPU type without a positive GPU rate is dropped with a reason.

GPU names: `gpuModel` ("H100 SXM", "A100 80GB PCIe", "L40S (compute mode)") passes on with the
"(compute mode)" / "(graphics mode)" suffix moved to attributes. The listing gives no memory: a name
whose family has one common variant ("RTX 3080": the 10 GB card) is resolved to it by the catalog's
variant rules (`tracker/catalog/variants.toml`), which mark the offer `variant_assumed`; names more open
than that stay unknown rather than guessed.

Docs-built: the bundled cassette uses the field names of gpuhunt's fixture and reader; machine types, data
centers and GPU rates are solved from SkyPilot's published CUDO catalog (built from the live API).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require
from providers.parsing import as_list, dropping, memory_in_name, slug, to_optional_decimal

URL = "https://rest.compute.cudo.org/v1/vms/machine-types"
GPU_COUNTS = (1, 2, 4, 8)
VCPUS_PER_GPU = 4
MEMORY_GIB_PER_VCPU = 2
_MODE = re.compile(r"\s*\((compute|graphics) mode\)\s*$", re.IGNORECASE)


def _rate(raw: dict[str, Any], field: str, where: str, *, required: bool = True) -> Decimal | None:
    """A `{"value": "0.123"}` rate; a missing optional one is None."""
    block = require(raw, field, where) if required else raw.get(field)
    if block is None:
        return None
    value = require(block, "value", f"{where}.{field}")
    return to_optional_decimal(value, f"{where}.{field}.value", blank_is_none=True)


def _vcpus_per_gpu(raw: dict[str, Any], where: str) -> int:
    low = to_optional_decimal(raw.get("minVcpuPerGpu"), f"{where}.minVcpuPerGpu")
    high = to_optional_decimal(raw.get("maxVcpuPerGpu"), f"{where}.maxVcpuPerGpu")
    vcpus = Decimal(VCPUS_PER_GPU)
    if low is not None and low > vcpus:
        vcpus = low
    if high is not None and 0 < high < vcpus:
        vcpus = high
    return max(1, int(vcpus))


def gpu_name(model: str) -> tuple[str, str | None]:
    """'L40S (compute mode)' → ('L40S', 'compute'); 'H100 SXM' → ('H100 SXM', None)."""
    match = _MODE.search(model)
    if match is None:
        return model.strip(), None
    return model[: match.start()].strip(), match.group(1).lower()


def parse(payload: Any) -> ScrapeResult:
    rows = as_list(require(payload, "machineTypes", "response"), "machineTypes")
    result = ScrapeResult()
    seen: set[str] = set()
    for i, raw in enumerate(rows):
        with dropping(result, f"machineTypes[{i}]"):
            where = f"machineTypes[{i}]"
            model = raw.get("gpuModel") if isinstance(raw, dict) else None
            if not model:
                continue  # CPU-only machine type
            machine = str(require(raw, "machineType", where))
            region = slug(require(raw, "dataCenterId", where))
            base = f"{region}:{machine}"
            gpu_rate = _rate(raw, "gpuPriceHr", where)
            vcpu_rate = _rate(raw, "vcpuPriceHr", where) or Decimal(0)
            mem_rate = _rate(raw, "memoryGibPriceHr", where) or Decimal(0)
            if gpu_rate is None or gpu_rate <= 0:
                result.skipped.append(f"{base}: no GPU price")
                continue
            if not region:
                result.skipped.append(f"{machine}: no data center")
                continue
            if base in seen:
                result.skipped.append(f"{base}: listed twice")
                continue
            seen.add(base)
            free = to_optional_decimal(raw.get("maxGpuFree"), f"{where}.maxGpuFree")
            name, mode = gpu_name(str(model))
            per_gpu_vcpus = _vcpus_per_gpu(raw, where)
            attributes: dict[str, Any] = {
                "raw_gpu": str(model),
                "gpu_price_per_hour": str(gpu_rate),
                "vcpu_price_per_hour": str(vcpu_rate),
                "memory_gib_price_per_hour": str(mem_rate),
                "shape": "representative",  # GPU + vCPU + RAM; disk and IPv4 extra
            }
            for field, attr in (
                ("minStorageGibPriceHr", "storage_gib_price_per_hour"),
                ("ipv4PriceHr", "ipv4_price_per_hour"),
            ):
                extra = _rate(raw, field, where, required=False)
                if extra is not None:
                    attributes[attr] = str(extra)
            if mode:
                attributes["gpu_mode"] = mode
            if raw.get("gpuModelId"):
                attributes["gpu_model_id"] = raw["gpuModelId"]
            for count in GPU_COUNTS:
                if count > 1 and (free is None or count > free):
                    continue  # larger shapes only while that many GPUs are free
                vcpus = per_gpu_vcpus * count
                ram = vcpus * MEMORY_GIB_PER_VCPU
                result.offers.append(
                    ScrapedOffer(
                        key=f"{base}:{count}",
                        gpu_name=name,
                        gpu_count=Decimal(count),
                        price_per_hour=gpu_rate * count + vcpu_rate * vcpus + mem_rate * ram,
                        region=region,
                        gpu_memory_gb=memory_in_name(name),
                        instance_type=machine,
                        available=None if free is None else count <= free,
                        vcpus=Decimal(vcpus),
                        ram_gb=Decimal(ram),
                        attributes=dict(attributes),
                    )
                )
    return result


class Cudo(Provider):
    name = "cudo"
    title = "CUDO Compute"
    kind = ProviderKind.cloud
    homepage = "https://www.cudocompute.com/pricing"
    credentials = ()
    parser_version = "1"
    requests_per_minute = None  # no limit documented (see the module docstring); 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL))
