"""PPIO (派欧云, Novita AI's sibling on the same backend) GPU instances:
`GET https://api.ppinfra.com/gpu-instance/openapi/v1/products`.

The products API is Novita's, field for field, so the parse is Novita's (`providers.adapters.novita.parse`),
not a copy of it: see that module for the shape, the one-offer-per-region rule and spot offers. What PPIO
adds is read there too: `canBuy: false` makes a product unavailable, `activityProduct: true` (a campaign
price) is marked `promotional` in attributes. As for Novita, one malformed product is dropped with its
reason, so a single odd row never empties the provider; a body without `data` fails.

Auth: `Authorization: Bearer <PPIO_API_KEY>` (missing → the run is `skipped`). Like Novita we ask for every
product, not only `available=true` (SkyPilot's filter), so sold-out products stay in the history as
unavailable. One request per run; no rate limit documented (`requests_per_minute` None).

UNITS: `price` and `spotPrice` are integers in **1/100000 USD per GPU-hour** (SkyPilot's fetcher divides
by 100000 and writes a USD catalog); one product is one GPU.

Evidence: NONE raw. The cassette follows the fields SkyPilot's fetcher reads
(`skypilot-org/skypilot@a96a5312:sky/catalog/data_fetchers/fetch_ppio.py`: id, name, price, cpuPerGpu,
memoryPerGpu, minRootFS/maxRootFS, regions, availableDeploy, canBuy, activityProduct); values illustrative.
"""

from __future__ import annotations

from providers.adapters.novita import parse
from providers.contract import FetchContext, Provider, ProviderKind, ScrapeResult
from providers.http import get_json

URL = "https://api.ppinfra.com/gpu-instance/openapi/v1/products"
API_KEY = "PPIO_API_KEY"


class Ppio(Provider):
    name = "ppio"
    title = "PPIO"
    kind = ProviderKind.cloud
    homepage = "https://ppio.com/gpu-instance"
    credentials = (API_KEY,)
    parser_version = "1"
    requests_per_minute = None  # no limit documented; 429s back off

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        headers = {"authorization": f"Bearer {ctx.secret(API_KEY)}"}
        return parse(await get_json(ctx, URL, headers=headers))
