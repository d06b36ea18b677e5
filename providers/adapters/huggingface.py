"""Hugging Face Inference Endpoints: dedicated GPU instances that Hugging Face resells on AWS, Azure and
GCP: an aggregator of hyperscaler capacity.

API: `GET https://api.endpoints.huggingface.cloud/v2/provider`, public (its Swagger is at the API root;
public clients call it with no key); one document listing every vendor, region and instance.

Shape: `{vendors: [{name: "aws", status, regions: [{name: "us-east-1", label, status, computes: [{accelerator:
"gpu", instanceType: "nvidia-h100", instanceSize: "x8", numAccelerators, pricePerHour, memoryGb, gpuMemoryGb,
numCpus, architecture, status}]}]}]}`.

Units and rules:
* `pricePerHour` is **USD per instance-hour** for all `numAccelerators` GPUs (billed by the minute);
* only `accelerator == "gpu"` computes are read (CPU and Inferentia/Neuron computes are left out);
* `gpuMemoryGb` is the instance's **total** GPU memory → ÷ `numAccelerators` per GPU;
* the raw name is `instanceType` ("nvidia-h100" → "nvidia h100"). On AWS and GCP Hugging Face's H100,
  H200, A100 and B200 are the hyperscalers' HGX (SXM) machines (p5/p5e/p4de/p6, A3/A2: the same facts as
  the catalog's aws and gcp conventions), so "SXM" is added there; on Azure it is not said, and ingest
  assumes the slower variant and notes it;
* aggregator: `upstream` is the vendor ("aws", "azure", "gcp": our own adapters' names), so the offer is
  labelled `via=huggingface` and is not counted twice against a direct AWS price;
* region: the region's `name`; key `<vendor>:<region>:<instanceType>:<instanceSize>`;
* `available`: True when the compute, its region and its vendor are all "available", False when any
  says otherwise, None when none says.

Rate limit: none documented; one request per run.
"""

from __future__ import annotations

from typing import Any

from providers.contract import FetchContext, Provider, ProviderKind, ScrapedOffer, ScrapeResult
from providers.http import get_json, require
from providers.items import ItemParser, parse_items
from providers.parsing import as_list, dropping, slug, tidy_decimal, to_decimal, to_optional_decimal, upstream_provider

URL = "https://api.endpoints.huggingface.cloud/v2/provider"
AVAILABLE = "available"
SXM_VENDORS = frozenset({"aws", "gcp"})
SXM_MODELS = frozenset({"h100", "h200", "a100", "b200"})


def raw_gpu_name(instance_type: str, vendor: str) -> str:
    """'nvidia-h100' on aws → 'nvidia h100 SXM'; 'nvidia-l4' → 'nvidia l4'; on azure no form factor is added."""
    name = instance_type.replace("-", " ").strip()
    model = name.split()[-1].lower() if name else ""
    return f"{name} SXM" if vendor in SXM_VENDORS and model in SXM_MODELS else name


def _stock(*statuses: Any) -> bool | None:
    said = [str(s).strip().lower() for s in statuses if s is not None]
    if not said:
        return None
    return all(s == AVAILABLE for s in said)


def _compute(
    raw: dict[str, Any], where: str, vendor: str, region: dict[str, Any], vendor_status: Any
) -> ScrapedOffer | str | None:
    if raw.get("accelerator") != "gpu":
        return None
    instance_type = str(require(raw, "instanceType", where))
    size = str(raw.get("instanceSize") or "")
    region_name = slug(region.get("name"))
    key = ":".join(p for p in (vendor, region_name, instance_type, size) if p)
    count = to_decimal(require(raw, "numAccelerators", where), f"{where}.numAccelerators")
    if count <= 0:
        return f"{key}: {count} accelerators"
    price = to_decimal(require(raw, "pricePerHour", where), f"{where}.pricePerHour")
    if price <= 0:
        return f"{key}: price {raw.get('pricePerHour')!r} per hour"
    total_memory = to_optional_decimal(raw.get("gpuMemoryGb"), f"{where}.gpuMemoryGb")
    attributes: dict[str, Any] = {"instance_type": instance_type, "instance_size": size, "upstream_raw": vendor}
    if raw.get("architecture"):
        attributes["architecture"] = str(raw["architecture"])
    if region.get("label"):
        attributes["region_label"] = str(region["label"])
    return ScrapedOffer(
        key=key,
        gpu_name=raw_gpu_name(instance_type, vendor),
        gpu_count=count,
        price_per_hour=price,
        region=region_name,
        gpu_memory_gb=tidy_decimal(total_memory / count) if total_memory else None,
        instance_type=f"{instance_type}-{size}" if size else instance_type,
        available=_stock(raw.get("status"), region.get("status"), vendor_status),
        vcpus=to_optional_decimal(raw.get("numCpus"), f"{where}.numCpus"),
        ram_gb=to_optional_decimal(raw.get("memoryGb"), f"{where}.memoryGb"),
        attributes=attributes,
        upstream=upstream_provider(vendor),
    )


def parse(payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    # A malformed vendor or region is dropped with its reason (providers.parsing.dropping), a malformed
    # compute by parse_items; only the envelope (no `vendors` list) fails the run.
    for v, vendor in enumerate(as_list(require(payload, "vendors", "response"), "vendors")):
        here = f"vendors[{v}]"
        with dropping(result, here):
            name = str(require(vendor, "name", here)).strip().lower()
            for r, region in enumerate(as_list(require(vendor, "regions", here), "regions", here)):
                there = f"{here}.regions[{r}]"
                with dropping(result, there):
                    computes = as_list(require(region, "computes", there), "computes", there)
                    items = [(f"{there}.computes[{c}]", raw) for c, raw in enumerate(computes)]
                    parse_items(items, _in_region(name, region, vendor.get("status")), result)
    return result


def _in_region(vendor: str, region: dict[str, Any], vendor_status: Any) -> ItemParser:
    def one(raw: dict[str, Any], where: str) -> ScrapedOffer | str | None:
        return _compute(raw, where, vendor, region, vendor_status)

    return one


class HuggingFace(Provider):
    name = "huggingface"
    title = "Hugging Face Inference Endpoints (AWS, Azure, GCP)"
    kind = ProviderKind.cloud
    homepage = "https://huggingface.co/docs/inference-endpoints/support/pricing"
    credentials = ()
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return parse(await get_json(ctx, URL))
