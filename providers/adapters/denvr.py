"""Denvr Dataworks (Denvr Cloud) virtual GPU servers.

Auth: a username and password (`DENVR_USERNAME`, `DENVR_PASSWORD`; either missing → the run is `skipped`)
exchanged for a bearer token at `POST https://api.cloud.denvrdata.com/api/TokenAuth/Authenticate`
(`{userNameOrEmailAddress, password}` → `result.accessToken`, the ABP framework's envelope). The token is
derived, so it is scrubbed from any error (`providers.http.redacting_secrets`).

Requests, each answered in the ABP envelope (`{result: …, success}`; a list may come as `result` or
`result.items`):
* `GET /api/v1/clusters/GetAll` → the clusters (`name`: "Hou1", "Msc1"), deduplicated and capped at
  `MAX_CLUSTERS`;
* `GET /api/v1/servers/virtual/GetConfigurations` → `{name ("A100_80GB_SXM_1x"), text_name, gpu_type,
  gpu_name, gpus, vcpus, memory, storage, price, compute_network ("IB 1600G"), is_gpu_platform,
  clusters[]}`;
* `GET /api/v1/servers/virtual/GetAvailability?cluster=<c>&resourcePool=on-demand` per cluster →
  `{configuration, cluster, rpool, price, available, count, maxCount}`.

UNITS: `price` is **USD per GPU-hour** (the A100 1x at 1.35 is $1.35/h, per Denvr's price page); an offer is
the configuration's `gpus` at `price × gpus` per hour, the availability row's price winning over the
configuration's. CPU-only configurations (`gpus` 0) are left out.

Offers: one per (cluster × GPU configuration) in the on-demand pool, region = the cluster lower-cased.
`available` is True only when `available` is true AND `count` (servers creatable now) is positive.
The fabric is kept: `compute_network` as `attributes["compute_network"]` and `infiniband` True when it
names InfiniBand ("IB …"). One malformed row is dropped with its reason; an envelope without `result`
fails the run. Denvr is also resold through Shadeform (`cloud: denvr`); this is the direct listing.

Evidence: SHAPE. Field names and the A100 80GB SXM 1x row (gpu_type "nvidia.com/A100SXM480GB", 24 vCPUs,
116 GB, 2125 GB, $1.35, "IB 1600G", Hou1, count 3) follow `wayneornn/public-pricing@305b3f1a:test/denvr.test.js`;
the other configurations, clusters and prices are illustrative.
"""

from __future__ import annotations

from typing import Any

from providers.contract import (
    FetchContext,
    Provider,
    ProviderError,
    ProviderKind,
    ScrapedOffer,
    ScrapeResult,
)
from providers.http import get_json, post_json, redacting_secrets, require
from providers.parsing import as_list, dropping, memory_in_name, slug, to_decimal, to_optional_decimal

API = "https://api.cloud.denvrdata.com"
AUTH_URL = f"{API}/api/TokenAuth/Authenticate"
CLUSTERS_URL = f"{API}/api/v1/clusters/GetAll"
CONFIGURATIONS_URL = f"{API}/api/v1/servers/virtual/GetConfigurations"
AVAILABILITY_URL = f"{API}/api/v1/servers/virtual/GetAvailability"
USERNAME, PASSWORD = "DENVR_USERNAME", "DENVR_PASSWORD"
POOL = "on-demand"
MAX_CLUSTERS = 20


def result_list(payload: Any, what: str) -> list[Any]:
    """The list an ABP answer carries: `result` itself or `result.items`."""
    body = require(payload, "result", what)
    if isinstance(body, dict):
        body = require(body, "items", f"{what}.result")
    return as_list(body, f"{what} result")


def gpu_name(config: dict[str, Any]) -> str:
    """ "A100 80GB SXM" from `text_name`, else the name without its count suffix ("A100_80GB_SXM_1x")."""
    text = str(config.get("text_name") or "").strip()
    if text:
        return text
    name = str(config.get("name") or "")
    return " ".join(p for p in name.split("_") if not (p.endswith("x") and p[:-1].isdigit()))


def _configurations(payload: Any, result: ScrapeResult) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for i, raw in enumerate(result_list(payload, "configurations")):
        try:
            name = str(require(raw, "name", f"configurations[{i}]"))
            gpus = to_decimal(require(raw, "gpus", name), f"{name}.gpus")
        except ProviderError as exc:
            result.skipped.append(str(exc))
            continue
        if gpus > 0:
            found[name] = raw
    return found


def parse_availability(rows: list[Any], cluster: str, configs: dict[str, dict[str, Any]], result: ScrapeResult) -> None:
    for i, row in enumerate(rows):
        where = f"availability {cluster}[{i}]"
        with dropping(result, where):  # one malformed row is dropped with its reason
            name = str(require(row, "configuration", where))
            config = configs.get(name)
            if config is None:
                continue  # a CPU configuration, or one the configuration list does not describe
            gpus = to_decimal(config["gpus"], f"{name}.gpus")
            price = to_optional_decimal(row.get("price"), f"{where}.price")
            if price is None:
                price = to_decimal(require(config, "price", name), f"{name}.price")
            if price <= 0:
                raise ProviderError(f"{where}: price {price}")
            count = to_optional_decimal(row.get("count"), f"{where}.count")
            region = slug(row.get("cluster") or cluster)
            network = str(config.get("compute_network") or "").strip()
            attributes: dict[str, Any] = {"price_per_gpu_hour": str(price), "resource_pool": row.get("rpool") or POOL}
            if network:
                attributes |= {
                    "compute_network": network,
                    "infiniband": network.upper().startswith(("IB", "INFINIBAND")),
                }
            if count is not None:
                attributes["creatable_count"] = int(count)
            if config.get("gpu_type"):
                attributes["gpu_type"] = config["gpu_type"]
            name_text = gpu_name(config)
            result.offers.append(
                ScrapedOffer(
                    key=f"{region}:{POOL}:{name}",
                    gpu_name=name_text,
                    gpu_count=gpus,
                    price_per_hour=price * gpus,
                    region=region,
                    gpu_memory_gb=memory_in_name(name_text),
                    instance_type=name,
                    available=row.get("available") is True and count is not None and count > 0,
                    vcpus=to_optional_decimal(config.get("vcpus"), f"{name}.vcpus"),
                    ram_gb=to_optional_decimal(config.get("memory"), f"{name}.memory"),
                    attributes=attributes,
                )
            )


class Denvr(Provider):
    name = "denvr"
    title = "Denvr Dataworks"
    kind = ProviderKind.cloud
    homepage = "https://www.denvrdata.com/pricing"
    credentials = (USERNAME, PASSWORD)
    parser_version = "1"
    requests_per_minute = None  # none documented; 2 + clusters requests per run

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        login = {"userNameOrEmailAddress": ctx.secret(USERNAME), "password": ctx.secret(PASSWORD)}
        auth = await post_json(ctx, AUTH_URL, json=login)
        token = str(require(require(auth, "result", "authentication"), "accessToken", "authentication.result"))
        with redacting_secrets(token):
            headers = {"authorization": f"Bearer {token}"}
            result = ScrapeResult()
            clusters: list[str] = []
            for raw in result_list(await get_json(ctx, CLUSTERS_URL, headers=headers), "clusters"):
                name = str(raw.get("name") or "").strip() if isinstance(raw, dict) else ""
                if name and name not in clusters:
                    clusters.append(name)
            if len(clusters) > MAX_CLUSTERS:
                result.skipped.append(f"{len(clusters) - MAX_CLUSTERS} clusters past the first {MAX_CLUSTERS} not read")
            configs = _configurations(await get_json(ctx, CONFIGURATIONS_URL, headers=headers), result)
            for cluster in clusters[:MAX_CLUSTERS]:
                params = {"cluster": cluster, "resourcePool": POOL}
                rows = result_list(await get_json(ctx, AVAILABILITY_URL, params=params, headers=headers), cluster)
                parse_availability(rows, cluster, configs, result)
            return result
