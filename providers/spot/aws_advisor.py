"""AWS Spot Instance Advisor: the published frequency-of-interruption band per instance type and region.

`GET https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json`, public, no authentication; the
data behind https://aws.amazon.com/ec2/spot/instance-advisor/. Shape (as third-party readers of it use
it, e.g. alexei-led/spotinfo): `ranges[]` of `{index, label, dots, max}` ("<5%", "5-10%", "10-15%",
"15-20%", ">20%": the share of instances AWS interrupted over the last month, `max` its upper bound in
percent), and `spot_advisor.{region}.{Linux|Windows}.{instance type}` = `{s: savings %, r: range index}`.

`parse` keeps Linux only (the price list adapter tracks Linux) and returns the band of each
(region, instance type). The file changes daily at most; a day is the interval to read it at.
The bundled cassette (`cassettes/aws_advisor.json`) is built from that documented shape with
illustrative values, for tests and the demo only: it is not AWS's data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from providers.contract import FetchContext, ProviderError
from providers.http import get_json, require

__all__ = ["DEFAULT_INTERVAL", "URL", "AdvisorData", "Band", "bundled_cassette", "fetch", "parse"]

URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
DEFAULT_INTERVAL = timedelta(days=1)
_LABEL = re.compile(r"^\s*(?:(<|>)\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?))\s*%\s*$")


@dataclass(frozen=True, slots=True)
class Band:
    """One interruption band: monthly share of instances interrupted, low..high (fractions; high None: open)."""

    index: int
    label: str
    low: float
    high: float | None


@dataclass(frozen=True, slots=True)
class AdvisorData:
    bands: dict[int, Band]
    pools: dict[tuple[str, str], int]  # (region, instance type) → band index

    def band(self, region: str, instance_type: str) -> Band | None:
        index = self.pools.get((region, instance_type))
        return None if index is None else self.bands.get(index)


def _band(raw: Any, where: str) -> Band:
    index, label = require(raw, "index", where), require(raw, "label", where)
    if not isinstance(index, int) or isinstance(index, bool) or not isinstance(label, str):
        raise ProviderError(f"schema changed: index/label at {where} are {index!r}/{label!r}")
    m = _LABEL.match(label)
    if not m:
        raise ProviderError(f"schema changed: cannot read the band label {label!r} at {where}")
    if m[1] == "<":
        low, high = 0.0, float(m[2]) / 100
    elif m[1] == ">":
        low, high = float(m[2]) / 100, None
    else:
        low, high = float(m[3]) / 100, float(m[4]) / 100
    return Band(index, label, low, high)


def parse(payload: Any) -> AdvisorData:
    ranges = require(payload, "ranges", "response")
    if not isinstance(ranges, list) or not ranges:
        raise ProviderError("schema changed: 'ranges' is not a non-empty list")
    bands = {b.index: b for b in (_band(r, f"ranges[{i}]") for i, r in enumerate(ranges))}
    regions = require(payload, "spot_advisor", "response")
    if not isinstance(regions, dict):
        raise ProviderError("schema changed: 'spot_advisor' is not an object")
    pools: dict[tuple[str, str], int] = {}
    for region, systems in regions.items():
        linux = systems.get("Linux") if isinstance(systems, dict) else None
        if not isinstance(linux, dict):
            continue
        for instance_type, stats in linux.items():
            index = stats.get("r") if isinstance(stats, dict) else None
            if isinstance(index, int) and not isinstance(index, bool) and index in bands:
                pools[(str(region), str(instance_type))] = index
    return AdvisorData(bands, pools)


async def fetch(ctx: FetchContext) -> AdvisorData:
    return parse(await get_json(ctx, URL))


def bundled_cassette() -> Path:
    """The docs-built cassette (illustrative values) that replays `fetch` offline."""
    return Path(str(resources.files("providers.spot") / "cassettes" / "aws_advisor.json"))
