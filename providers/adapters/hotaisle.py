"""Hot Aisle: AMD Instinct virtual machines.

API: `GET https://admin.hotaisle.app/api/teams/{team}/virtual_machines/available/`, the VM shapes the team
can deploy right now (the endpoint gpuhunt's online provider reads; OpenAPI at admin.hotaisle.app/api/docs).
Auth: `Authorization: Token <key>` (`HOTAISLE_API_KEY`; missing → the run is skipped). The listing is per
team: the team handle comes from `GET /api/user/` (`teams[].handle`, as dstack's Hot Aisle backend validates
it): the one named by the optional `HOTAISLE_TEAM_HANDLE` when set (an error if the key's user is not in
it), else the user's first team. Two requests per run.

Units and shape: a JSON list (or `null` when nothing is free), each item
`{OnDemandPrice, Specs: {cpu_cores, ram_capacity, disk_capacity, cpus: {count, model}, gpus: [{count, model}]}}`.
`OnDemandPrice` is US cents per VM-hour → dollars for the whole VM; `ram_capacity`/`disk_capacity` are bytes
(→ GiB). The list carries no id, so the key is built from the shape (GPU count and model, cores, RAM), which
is what a Hot Aisle VM is. Every listed VM is deployable now: `available=True`. Hot Aisle has one site;
the API names none, so the region is the fixed `us-michigan-1` (gpuhunt does the same). On-demand only.

Rate limit: none documented; two requests per run.

Docs-built: the cassette follows the response shapes of gpuhunt's `hotaisle.py` and its test fixture
(`dstackai/gpuhunt@a6d9e1e6:src/tests/providers/test_hotaisle.py`) and of dstack's team check (`/api/user/`);
prices are illustrative.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import quote

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, require
from providers.parsing import (
    as_list,
    cents_to_dollars,
    dropping,
    gigabytes,
    slug,
    tidy_decimal,
    to_decimal,
    to_optional_decimal,
)

API = "https://admin.hotaisle.app/api"
USER_URL = f"{API}/user/"
REGION = "us-michigan-1"  # Hot Aisle's single datacenter; the API does not name it
BYTES_PER_GIB = 2**30


def url_for(team: str) -> str:
    return f"{API}/teams/{quote(team, safe='')}/virtual_machines/available/"


def team_of(user: Any, wanted: str | None) -> str:
    """The team whose VMs are listed: `wanted` when the user belongs to it, else the user's first team."""
    teams = as_list(require(user, "teams", "user"), "teams", "user")
    handles = [str(require(t, "handle", f"user.teams[{i}]")) for i, t in enumerate(teams)]
    if not handles:
        raise ProviderError("Hot Aisle user belongs to no team: there is no VM listing to read")
    if wanted is None:
        return handles[0]
    if wanted not in handles:
        raise ProviderError(f"HOTAISLE_TEAM_HANDLE is not one of the user's {len(handles)} team(s)")
    return wanted


def _vm(raw: Any, where: str) -> ScrapedOffer | str:
    """One VM shape as an offer, or the reason it cannot be one."""
    # A null price drops that shape with the reason, not the whole listing with it.
    cents = to_optional_decimal(require(raw, "OnDemandPrice", where), f"{where}.OnDemandPrice", blank_is_none=True)
    specs = require(raw, "Specs", where)
    gpus = as_list(require(specs, "gpus", f"{where}.Specs"), "gpus", f"{where}.Specs")
    if not gpus:
        return f"{where}: no GPUs in Specs.gpus (CPU-only shape)"
    if len({str(g.get("model")) for g in gpus if isinstance(g, dict)}) > 1:
        return f"{where}: mixed GPU models {[g.get('model') for g in gpus]}"
    model = str(require(gpus[0], "model", f"{where}.Specs.gpus[0]")).strip()
    count = sum(
        (to_decimal(require(g, "count", f"{where}.Specs.gpus"), f"{where}.Specs.gpus.count") for g in gpus), Decimal(0)
    )
    if not model or count <= 0:
        return f"{where}: GPU model {model!r} × {count}"
    if cents is None or cents <= 0:
        return f"{where}: {count}x {model} OnDemandPrice={cents}"
    cores = to_optional_decimal(specs.get("cpu_cores"), f"{where}.Specs.cpu_cores")
    ram = gigabytes(to_optional_decimal(specs.get("ram_capacity"), f"{where}.Specs.ram_capacity"), BYTES_PER_GIB)
    disk = gigabytes(to_optional_decimal(specs.get("disk_capacity"), f"{where}.Specs.disk_capacity"), BYTES_PER_GIB)
    attributes: dict[str, Any] = {"raw_gpu": model}
    cpus = specs.get("cpus")
    if isinstance(cpus, dict) and cpus.get("model"):
        attributes["cpu_model"] = str(cpus["model"])
    if disk is not None:
        attributes["disk_gb"] = str(disk)
    key = slug(f"{count}x", model, f"{cores}c" if cores else "", f"{tidy_decimal(ram)}g" if ram else "")
    return ScrapedOffer(
        key=key,
        gpu_name=model,
        gpu_count=count,
        price_per_hour=cents_to_dollars(cents),
        region=REGION,
        instance_type=key,
        available=True,
        vcpus=cores,
        ram_gb=ram,
        attributes=attributes,
    )


def parse(payload: Any) -> ScrapeResult:
    result = ScrapeResult()
    if payload is None:  # the API answers `null` when no VM can be deployed
        return result
    seen: set[str] = set()
    for i, raw in enumerate(as_list(payload, "available virtual machines")):
        with dropping(result, f"[{i}]"):
            offer = _vm(raw, f"[{i}]")
            if isinstance(offer, str):
                result.skipped.append(offer)
            elif offer.key in seen:
                # Identical shapes listed twice (one per host) are one offer; the cheaper price is what it costs.
                previous = next(o for o in result.offers if o.key == offer.key)
                previous.price_per_hour = min(previous.price_per_hour, offer.price_per_hour)
            else:
                seen.add(offer.key)
                result.offers.append(offer)
    return result


class HotAisle(Provider):
    name = "hotaisle"
    title = "Hot Aisle"
    kind = ProviderKind.cloud
    homepage = "https://hotaisle.xyz/pricing/"
    credentials = ("HOTAISLE_API_KEY",)
    optional_credentials = ("HOTAISLE_TEAM_HANDLE",)
    requests_per_minute = None  # none documented; one request per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        key = ctx.secret("HOTAISLE_API_KEY")
        headers = {"Authorization": f"Token {key}", "Accept": "application/json"}
        team = team_of(await get_json(ctx, USER_URL, headers=headers), ctx.credentials.get("HOTAISLE_TEAM_HANDLE"))
        return parse(await get_json(ctx, url_for(team), headers=headers))
