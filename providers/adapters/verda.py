"""Verda (formerly DataCrunch): OAuth2 client credentials, then `/instance-types`, `/locations` and
`/instance-availability`.

Quirks handled here:
* auth: `POST {base}/oauth2/token` with the client id/secret (grant_type=client_credentials) returns an
  `access_token` used as a Bearer token. Neither the secret nor the token may reach an error message:
  every ProviderError raised from `fetch` is scrubbed of them;
* `price_per_hour` (on-demand) and `spot_price` are decimal strings, USD per INSTANCE-hour; a missing or
  zero spot_price means no spot offer;
* `gpu.description` reads "8x H100 SXM5 80GB": the count prefix is dropped and the rest ("H100 SXM5
  80GB", which carries form factor and memory) is the raw GPU name; `gpu_memory.size_in_gigabytes` is
  the TOTAL across the instance's GPUs, so per-GPU memory is total ÷ count;
* availability: gpuhunt lists every type in every location; we do the same (so prices are tracked while
  sold out) but set `available` from `/instance-availability?is_spot=false|true`, which lists, per
  location code, the instance types that can be deployed right now;
* CPU-only types (`gpu.number_of_gpus == 0`) are skipped.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, post_json, redacting_secrets, require
from providers.parsing import as_list, dropping, slug, tidy_decimal, to_decimal, to_optional_decimal

BASE = "https://api.verda.com/v1"
_COUNT_PREFIX = re.compile(r"^\s*\d+\s*x\s*", re.IGNORECASE)


def _opt_dec(value: Any, where: str) -> Decimal | None:
    return to_optional_decimal(value, where, blank_is_none=True)


def parse_availability(payload: Any, what: str, result: ScrapeResult | None = None) -> dict[str, set[str]]:
    """`[{location_code, availabilities: [instance_type…]}]` → {location code (lower): {instance types}}; a
    malformed entry is left out with its reason in `result`."""
    result = result if result is not None else ScrapeResult()
    found: dict[str, set[str]] = {}
    for i, entry in enumerate(as_list(payload, what)):
        with dropping(result, f"{what}[{i}]"):
            where = f"{what}[{i}]"
            code = slug(require(entry, "location_code", where))  # the same normalisation as /locations
            types = as_list(require(entry, "availabilities", where), f"{where}.availabilities")
            found.setdefault(code, set()).update(str(t) for t in types)
    return found


def parse(instance_types: Any, locations: Any, on_demand_availability: Any, spot_availability: Any) -> ScrapeResult:
    result = ScrapeResult()
    codes: list[str] = []
    for i, location in enumerate(as_list(locations, "/locations response")):
        with dropping(result, f"locations[{i}]"):
            code = slug(require(location, "code", f"locations[{i}]"))  # always a well-formed code: "FIN-01" → "fin-01"
            if code and code not in codes:
                codes.append(code)
    if not codes:
        raise ProviderError("/locations returned no locations")
    free = {
        Pricing.on_demand: parse_availability(on_demand_availability, "instance-availability?is_spot=false", result),
        Pricing.spot: parse_availability(spot_availability, "instance-availability?is_spot=true", result),
    }
    for i, item in enumerate(as_list(instance_types, "/instance-types response")):
        with dropping(result, f"instance_types[{i}]"):
            where = f"instance-types[{i}]"
            instance_type = str(require(item, "instance_type", where))
            where = f"instance type {instance_type}"
            gpu = require(item, "gpu", where)
            count = to_decimal(require(gpu, "number_of_gpus", f"{where}.gpu"), f"{where}.gpu.number_of_gpus")
            if count <= 0:
                continue  # CPU-only instance type
            currency = str(item.get("currency") or "usd").lower()
            if currency != "usd":
                result.skipped.append(f"{instance_type}: priced in {currency}")
                continue
            description = str(gpu.get("description") or "")
            gpu_name = _COUNT_PREFIX.sub("", description).strip() or str(item.get("name") or "").strip()
            if not gpu_name:
                result.skipped.append(f"{instance_type}: no GPU description or name")
                continue
            total_memory = None
            if isinstance(item.get("gpu_memory"), dict):
                total_memory = _opt_dec(item["gpu_memory"].get("size_in_gigabytes"), f"{where}.gpu_memory")
            on_demand_price = _opt_dec(require(item, "price_per_hour", where), f"{where}.price_per_hour")
            prices = {
                Pricing.on_demand: on_demand_price,
                Pricing.spot: _opt_dec(item.get("spot_price"), f"{where}.spot_price"),
            }
            cpu, memory = item.get("cpu"), item.get("memory")
            # Read before the price check below, so a malformed cpu/memory fails the run even on a skipped row.
            gpu_memory = tidy_decimal(total_memory / count) if total_memory else None
            vcpus = _opt_dec(cpu.get("number_of_cores"), f"{where}.cpu") if isinstance(cpu, dict) else None
            ram = _opt_dec(memory.get("size_in_gigabytes"), f"{where}.memory") if isinstance(memory, dict) else None
            attributes = {k: item[k] for k in ("model", "name", "manufacturer") if item.get(k) is not None}
            if on_demand_price is None or on_demand_price <= 0:
                result.skipped.append(f"{instance_type}: price_per_hour={on_demand_price}")
                continue
            for pricing, price in prices.items():
                if price is None or price <= 0:
                    continue
                suffix = "" if pricing is Pricing.on_demand else ":spot"
                for code in codes:
                    result.offers.append(
                        ScrapedOffer(
                            key=f"{instance_type}:{code}{suffix}",
                            gpu_name=gpu_name,
                            gpu_count=count,
                            price_per_hour=price,
                            pricing=pricing,
                            region=code,
                            gpu_memory_gb=gpu_memory,
                            instance_type=instance_type,
                            available=instance_type in free[pricing].get(code, set()),
                            vcpus=vcpus,
                            ram_gb=ram,
                            attributes=dict(attributes),
                        )
                    )
    return result


class Verda(Provider):
    name = "verda"
    title = "Verda (formerly DataCrunch)"
    kind = ProviderKind.cloud
    homepage = "https://verda.com"
    credentials = ("VERDA_CLIENT_ID", "VERDA_CLIENT_SECRET")
    parser_version = "2"  # 2: location codes normalised with slug() (well formed whatever the API sends)

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        client_id = ctx.secret("VERDA_CLIENT_ID")
        client_secret = ctx.secret("VERDA_CLIENT_SECRET")
        with redacting_secrets(client_secret, client_id):
            grant = await post_json(
                ctx,
                f"{BASE}/oauth2/token",
                json={
                    "grant_type": "client_credentials",
                    "client_id": client_id,
                    "client_secret": client_secret,
                },
            )
            token = require(grant, "access_token", "oauth2/token response")
            if not isinstance(token, str) or not token.strip():
                raise ProviderError("oauth2/token returned no usable access_token")
            with redacting_secrets(token):
                headers = {"Authorization": f"Bearer {token}"}
                instance_types = await get_json(ctx, f"{BASE}/instance-types", headers=headers)
                locations = await get_json(ctx, f"{BASE}/locations", headers=headers)
                availability = f"{BASE}/instance-availability"
                on_demand = await get_json(ctx, availability, params={"is_spot": "false"}, headers=headers)
                spot = await get_json(ctx, availability, params={"is_spot": "true"}, headers=headers)
                return parse(instance_types, locations, on_demand, spot)
