"""FluidStack: `GET https://platform.fluidstack.io/list_available_configurations` lists what can be
deployed now, per GPU type.

Quirks handled here:
* auth is an `api-key: <key>` header (not Bearer);
* `price_per_gpu_hr` is per GPU: an offer for N GPUs costs N × that rate, one offer per entry of
  `gpu_counts` and per region in `regions`;
* `gpu_type` packs model, form factor and memory into one token ("H100_SXM5_80GB",
  "Tesla_V100_SXM2_16GB", "RTX_A6000_48GB"): it is passed on unchanged as the raw name (the GPU catalog
  reads these tokens) and its "<n>GB" suffix gives the per-GPU memory;
* every listed configuration is deployable, so offers are available=True; a configuration with no
  regions yields a single region-less offer whose availability is unknown (None);
* the API gives no vCPU/RAM figures (SkyPilot hard-codes them); we leave them empty.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, redacting_secrets, require
from providers.parsing import dropping, memory_in_name, region_codes, to_decimal

URL = "https://platform.fluidstack.io/list_available_configurations"


def parse(payload: Any) -> ScrapeResult:
    if not isinstance(payload, list):
        raise ProviderError(f"schema changed: expected a list of configurations, got {type(payload).__name__}")
    result = ScrapeResult()
    for i, config in enumerate(payload):
        with dropping(result, f"configurations[{i}]"):
            where = f"configurations[{i}]"
            gpu_type = require(config, "gpu_type", where)
            counts = require(config, "gpu_counts", where)
            rate = require(config, "price_per_gpu_hr", where)
            regions = config.get("regions") or []
            if not isinstance(counts, list) or not isinstance(regions, list):
                raise ProviderError(f"schema changed: gpu_counts/regions are not lists at {where}")
            if not gpu_type or not str(gpu_type).strip():
                result.skipped.append(f"{where}: no gpu_type")
                continue
            gpu_type = str(gpu_type).strip()
            if rate is None:
                result.skipped.append(f"{gpu_type}: no price_per_gpu_hr")
                continue
            per_gpu = to_decimal(rate, f"{where}.price_per_gpu_hr")
            if per_gpu <= 0:
                result.skipped.append(f"{gpu_type}: price_per_gpu_hr={per_gpu}")
                continue
            memory = memory_in_name(gpu_type)
            codes = region_codes(r for r in regions if r is not None)
            for raw_count in counts:
                count = to_decimal(raw_count, f"{where}.gpu_counts")
                if count == count.to_integral_value():
                    count = count.quantize(Decimal(1))  # 8.0 → 8, so keys stay stable
                if count <= 0:
                    result.skipped.append(f"{gpu_type}: gpu count {count}")
                    continue
                places: list[tuple[str, bool | None]] = [(code, True) for code in codes] or [("", None)]
                for code, available in places:
                    result.offers.append(
                        ScrapedOffer(
                            key=f"{gpu_type}:{count}" + (f":{code}" if code else ""),
                            gpu_name=gpu_type,
                            gpu_count=count,
                            price_per_hour=per_gpu * count,
                            region=code,
                            gpu_memory_gb=memory,
                            instance_type=f"{gpu_type}x{count}",
                            available=available,
                            attributes={"price_per_gpu_hr": str(per_gpu)},
                        )
                    )
    return result


class FluidStack(Provider):
    name = "fluidstack"
    title = "FluidStack"
    kind = ProviderKind.cloud
    homepage = "https://www.fluidstack.io"
    credentials = ("FLUIDSTACK_API_KEY",)
    parser_version = "2"  # 2: region codes in the one region form (slug)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("FLUIDSTACK_API_KEY")
        with redacting_secrets(key):
            return parse(await get_json(ctx, URL, headers={"api-key": key}))
