"""AWS EC2: the public Price List bulk CSV, one file per region.

`GET https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv`,
no authentication, for each region in `REGIONS`: the US (us-east-1, us-east-2, us-west-2), Canada
(ca-central-1), Europe (eu-west-1, eu-central-1, eu-north-1) and Asia-Pacific (ap-northeast-1,
ap-south-1, ap-southeast-2), the regions where AWS offers its GPU families widely. Other regions are not
tracked until added here.

Each file is hundreds of MB, so it is streamed and parsed row by row (`PriceListParser`), never held in
memory; rows are pre-filtered on their bytes for GPU instance families (p*, g*, gr*) before the csv
module parses them. A stream that fails with 429/5xx or a network error is retried from the start with
the same backoff as `providers.http` (whose `request` returns whole bodies and so cannot be used for these
files; its `iter_body` reads them under the size limit). A file may hold up to `Aws.max_response_bytes`
(far above the 64 MiB default, see there) and a row up to `MAX_ROW_BYTES`.

The CSV opens with 5 disclaimer rows ("FormatVersion", "Disclaimer", "Publication Date", "Version",
"OfferCode") before the header row; the parser skips everything up to the row whose first cell is "SKU".

Rows kept (USD per instance-hour, `Unit == "Hrs"`, `Currency == "USD"`): Linux, shared tenancy,
`CapacityStatus == "Used"`, no pre-installed software (`Pre Installed S/W == "NA"`), in the region itself
(`Location Type == "AWS Region"`: a regional file also lists its Local Zones under the same region code),
and
* `TermType == "OnDemand"` (and `MarketOption == "OnDemand"` where the column exists) → on_demand;
* `TermType == "Reserved"`, standard class, "No Upfront" → reserved with term "1y"/"3y" (the hourly
  rate is the whole price for No Upfront; the other purchase options mix an upfront fee in).
Spot prices are not in the price list (they need the signed EC2 API): none are produced. Zero prices
(e.g. Capacity Blocks, gpuhunt #36) are reported in `result.skipped`.

Cost terms (`providers.cost_terms`): the same file lists EBS volumes; the region's gp3 on-demand rate
(`usageType` "…EBS:VolumeUsage.gp3", Unit "GB-Mo", USD) becomes disk_usd_per_gb_month of every offer of
that region. Data transfer is priced in another offer file (AWSDataTransfer), so egress stays on the
sheet (tracker/costs/data/cost_terms.toml).

The price list has no GPU model: `INSTANCES` maps each instance type to its GPU (with form factor and
full-card memory in the raw name, e.g. "H100 SXM 80GB") and count. Fractional g6f sizes keep their
fraction (1/8, 1/4, 1/2 of an L4) as `gpu_count` with the slice's memory as `gpu_memory_gb`. A GPU
instance type missing from the table is reported in `result.skipped`, never guessed.
"""

from __future__ import annotations

import asyncio
import csv
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import partial
from typing import Any

from providers.contract import (
    FetchContext,
    Pricing,
    Provider,
    ProviderError,
    ProviderKind,
    ProviderUnreachable,
    ScrapedOffer,
    ScrapeResult,
)
from providers.cost_terms import COST_TERMS, terms
from providers.http import (
    ACCEPT_ENCODING,
    RETRY_STATUS,
    backoff_delay,
    connect_errors,
    error_snippet,
    gather_bounded,
    iter_body,
    transient_errors,
)
from providers.parsing import reservation_term

URL = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2/current/{region}/index.csv"
REGIONS: tuple[str, ...] = (
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "ca-central-1",
    "eu-west-1",
    "eu-central-1",
    "eu-north-1",
    "ap-northeast-1",
    "ap-south-1",
    "ap-southeast-2",
)
CONCURRENCY = 3
MAX_PREAMBLE_ROWS = 10
# A real row is 1–2 KB: a body with no line end, or a quote never closed, must not collect the file in memory.
MAX_ROW_BYTES = 2**20
RESERVED_TERMS = {w: reservation_term(w) for w in ("1yr", "3yr")}  # "1y", "3y": the one spelling of terms

REQUIRED = (
    "Instance Type",
    "TermType",
    "PricePerUnit",
    "Unit",
    "Currency",
    "Tenancy",
    "Operating System",
    "CapacityStatus",
    "Pre Installed S/W",
    "vCPU",
    "Memory",
    "GPU",
    "LeaseContractLength",
    "PurchaseOption",
    "OfferingClass",
)

# Cheap byte-level pre-filter: a quoted cell holding a p*/g*/gr* instance type.
_GPU_ROW = re.compile(rb'"(?:p\d|g\d|gr\d)[a-z0-9-]*\.[a-z0-9]+"')
# ...and the region's gp3 EBS volume rate (usageType "EBS:VolumeUsage.gp3", with a region prefix elsewhere).
_GP3_ROW = re.compile(rb'EBS:VolumeUsage\.gp3"')


@dataclass(frozen=True, slots=True)
class Gpu:
    name: str  # raw GPU name with form factor and full-card memory
    count: Decimal  # per instance; fractional for g6f slices
    memory_gb: Decimal  # full card

    @property
    def offered_memory_gb(self) -> Decimal:
        return self.memory_gb * self.count if self.count < 1 else self.memory_gb


def _family(name: str, memory: int, sizes: dict[str, str]) -> dict[str, Gpu]:
    return {itype: Gpu(name, Decimal(count), Decimal(memory)) for itype, count in sizes.items()}


_SMALL = ("xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")

INSTANCES: dict[str, Gpu] = {
    **_family("H100 SXM 80GB", 80, {"p5.48xlarge": "8", "p5.4xlarge": "1"}),
    **_family("H200 SXM 141GB", 141, {"p5e.48xlarge": "8", "p5en.48xlarge": "8"}),
    **_family("B200 180GB", 180, {"p6-b200.48xlarge": "8"}),
    **_family("A100 SXM 40GB", 40, {"p4d.24xlarge": "8"}),
    **_family("A100 SXM 80GB", 80, {"p4de.24xlarge": "8"}),
    **_family("V100 SXM2 16GB", 16, {"p3.2xlarge": "1", "p3.8xlarge": "4", "p3.16xlarge": "8"}),
    **_family("V100 SXM2 32GB", 32, {"p3dn.24xlarge": "8"}),
    **_family(
        "A10G 24GB", 24, {f"g5.{s}": "1" for s in _SMALL} | {"g5.12xlarge": "4", "g5.24xlarge": "4", "g5.48xlarge": "8"}
    ),
    **_family(
        "L4 24GB",
        24,
        {f"g6.{s}": "1" for s in _SMALL}
        | {
            "g6.12xlarge": "4",
            "g6.24xlarge": "4",
            "g6.48xlarge": "8",
            "gr6.4xlarge": "1",
            "gr6.8xlarge": "1",
            "g6f.large": "0.125",
            "g6f.xlarge": "0.125",
            "g6f.2xlarge": "0.25",
            "g6f.4xlarge": "0.5",
            "gr6f.4xlarge": "0.5",
        },
    ),
    **_family(
        "L40S 48GB",
        48,
        {f"g6e.{s}": "1" for s in _SMALL} | {"g6e.12xlarge": "4", "g6e.24xlarge": "4", "g6e.48xlarge": "8"},
    ),
    **_family("T4 16GB", 16, {f"g4dn.{s}": "1" for s in _SMALL} | {"g4dn.12xlarge": "4", "g4dn.metal": "8"}),
    # G5g: NVIDIA T4G, the T4 for Arm hosts (same chip and 16 GB)
    **_family(
        "T4 16GB",
        16,
        {f"g5g.{s}": "1" for s in ("xlarge", "2xlarge", "4xlarge", "8xlarge")}
        | {"g5g.16xlarge": "2", "g5g.metal": "2"},
    ),
    **_family(
        "Radeon Pro V520 8GB",
        8,
        {"g4ad.xlarge": "1", "g4ad.2xlarge": "1", "g4ad.4xlarge": "1", "g4ad.8xlarge": "2", "g4ad.16xlarge": "4"},
    ),
}


def _dec(value: str, where: str) -> Decimal:
    """'55.0400000000' → Decimal('55.04'): the list pads every number to 10 decimals."""
    try:
        number = Decimal(value.strip())
    except (InvalidOperation, AttributeError):
        raise ProviderError(f"schema changed: {value!r} at {where} is not a number") from None
    if not number.is_finite():
        raise ProviderError(f"schema changed: {value!r} at {where} is not a number")
    return number.quantize(Decimal(1)) if number == number.to_integral_value() else number.normalize()


def _gib(value: str, where: str) -> Decimal | None:
    """'2048 GiB' → 2048; 'NA' → None."""
    text = value.replace(",", "").strip()
    match = re.fullmatch(r"([0-9.]+)\s*(GiB|GB)?", text)
    if not match:
        if text in {"", "NA"}:
            return None
        raise ProviderError(f"schema changed: memory {value!r} at {where}")
    return Decimal(match.group(1))


class PriceListParser:
    """Incremental parser for one region's price-list CSV: feed it raw lines, then call `finish()`."""

    def __init__(self, region: str) -> None:
        self.region = region
        self.columns: dict[str, int] | None = None
        self.width = 0
        self.rows = 0
        self.pending = b""
        self.result = ScrapeResult()
        self.keys: set[str] = set()
        self.unknown: set[str] = set()
        self.gp3_usd_per_gb_month: Decimal | None = None

    def feed(self, line: bytes) -> None:
        """One physical line (without its newline); quoted cells spanning lines are re-joined."""
        if self.pending:
            line = self.pending + b"\n" + line
            self.pending = b""
        if len(line) > MAX_ROW_BYTES:
            raise ProviderError(f"price list for {self.region}: row {self.rows + 1} is over {MAX_ROW_BYTES} bytes")
        if line.count(b'"') % 2:
            self.pending = line
            return
        line = line.rstrip(b"\r")
        if not line:
            return
        self.rows += 1
        if self.columns is None:
            self._preamble(line)
        elif _GPU_ROW.search(line):
            self._row(line)
        elif _GP3_ROW.search(line):
            self._gp3(line)

    def finish(self) -> ScrapeResult:
        if self.pending:
            raise ProviderError(f"truncated price list for {self.region}: unterminated quoted cell")
        if self.columns is None:
            raise ProviderError(f"price list for {self.region} has no header row (empty or truncated)")
        if self.gp3_usd_per_gb_month is not None:  # the disk an instance's EBS volumes are billed at
            for offer in self.result.offers:
                offer.attributes[COST_TERMS] = terms(disk_usd_per_gb_month=self.gp3_usd_per_gb_month)
        return self.result

    def _gp3(self, line: bytes) -> None:
        assert self.columns is not None
        cells = self._cells(line)
        if len(cells) != self.width:
            return  # not a row this parser reads: the offers do not depend on it

        def get(name: str) -> str:
            i = self.columns.get(name) if self.columns else None
            return cells[i] if i is not None else ""

        if (
            get("usageType").endswith("EBS:VolumeUsage.gp3")
            and get("TermType") == "OnDemand"
            and get("Unit") == "GB-Mo"
            and get("Currency") == "USD"
        ):
            price = _dec(get("PricePerUnit"), f"gp3 row {self.rows} PricePerUnit")
            if price > 0:
                self.gp3_usd_per_gb_month = price

    def _cells(self, line: bytes) -> list[str]:
        try:
            return next(csv.reader([line.decode("utf-8")]))
        except (UnicodeDecodeError, csv.Error, StopIteration) as exc:
            raise ProviderError(f"unreadable CSV row {self.rows} in {self.region}: {exc}") from None

    def _preamble(self, line: bytes) -> None:
        cells = self._cells(line)
        if cells and cells[0] == "SKU":
            missing = [c for c in REQUIRED if c not in cells]
            if missing:
                raise ProviderError(f"schema changed: price list for {self.region} lacks columns {missing}")
            self.columns = {name: i for i, name in enumerate(cells)}
            self.width = len(cells)
        elif self.rows > MAX_PREAMBLE_ROWS:
            raise ProviderError(f"price list for {self.region}: no 'SKU' header in the first rows")

    def _row(self, line: bytes) -> None:
        assert self.columns is not None
        cells = self._cells(line)
        if len(cells) != self.width:
            raise ProviderError(
                f"price list for {self.region}: row {self.rows} has {len(cells)} cells, the header {self.width}"
            )
        cols = self.columns

        def get(name: str) -> str:
            i = cols.get(name)
            return cells[i] if i is not None else ""

        itype = get("Instance Type")
        gpu = INSTANCES.get(itype)
        if gpu is None:
            gpus = get("GPU").strip()
            if gpus not in {"", "NA", "0"} and itype not in self.unknown:
                self.unknown.add(itype)
                self.result.skipped.append(f"{itype} in {self.region}: {gpus} GPU(s), not in aws.INSTANCES")
            return
        if (
            get("Tenancy") != "Shared"
            or get("Operating System") != "Linux"
            or get("CapacityStatus") != "Used"
            or get("Pre Installed S/W") != "NA"
            or get("Unit") != "Hrs"
            or get("Currency") != "USD"
            or get("License Model") not in {"", "No License required"}
            or get("Location Type") not in {"", "AWS Region"}  # Local Zones, Wavelength, Outposts
        ):
            return
        term = get("TermType")
        if term == "OnDemand" and get("MarketOption") in {"", "OnDemand"}:
            pricing, reserved_term = Pricing.on_demand, None
        elif (
            term == "Reserved"
            and get("PurchaseOption") == "No Upfront"
            and get("OfferingClass") == "standard"
            and get("LeaseContractLength") in RESERVED_TERMS
        ):
            pricing, reserved_term = Pricing.reserved, RESERVED_TERMS[get("LeaseContractLength")]
        else:
            return
        where = f"{itype} row {self.rows}"
        region = (get("Region Code") or self.region).lower()
        price = _dec(get("PricePerUnit"), f"{where} PricePerUnit")
        if price <= 0:
            self.result.skipped.append(f"{itype} in {region}: {pricing.value} price {price}")
            return
        key = f"{itype}:{region}:{pricing.value}" + (f":{reserved_term}" if reserved_term else "")
        if key in self.keys:
            self.result.skipped.append(f"{key}: duplicate row {self.rows}")
            return
        self.keys.add(key)
        vcpu = get("vCPU").strip()
        attributes: dict[str, Any] = {"location": get("Location")} if get("Location") else {}
        if gpu.count < 1:
            attributes["fractional"] = True
        if reserved_term:
            attributes |= {"purchase_option": "No Upfront", "offering_class": "standard"}
        self.result.offers.append(
            ScrapedOffer(
                key=key,
                gpu_name=gpu.name,
                gpu_count=gpu.count,
                price_per_hour=price,
                pricing=pricing,
                reserved_term=reserved_term,
                region=region,
                gpu_memory_gb=gpu.offered_memory_gb,
                instance_type=itype,
                available=None,
                vcpus=_dec(vcpu, f"{where} vCPU") if vcpu not in {"", "NA"} else None,
                ram_gb=_gib(get("Memory"), f"{where} Memory"),
                attributes=attributes,
            )
        )


def parse_csv(text: str | bytes, region: str) -> ScrapeResult:
    """Parse a whole price-list CSV held in memory (tests; the fetch streams instead)."""
    data = text.encode() if isinstance(text, str) else text
    parser = PriceListParser(region)
    for line in data.split(b"\n"):
        parser.feed(line)
    return parser.finish()


async def _stream_region(ctx: FetchContext, region: str, template: str = URL) -> ScrapeResult:
    url = template.format(region=region)
    attempts = ctx.retries + 1
    problem = ""
    unreachable = False
    for attempt in range(attempts):
        parser = PriceListParser(region)
        try:
            async with ctx.client.stream("GET", url, headers={"accept-encoding": ACCEPT_ENCODING}) as response:
                if response.status_code in RETRY_STATUS:
                    problem = f"HTTP {response.status_code} from GET {url}"
                elif response.is_error:
                    snippet = await error_snippet(response, ctx)
                    raise ProviderError(f"HTTP {response.status_code} from GET {url}: {snippet}")
                else:
                    buffer = b""
                    async for chunk in iter_body(response, ctx.max_response_bytes):
                        buffer += chunk
                        if b"\n" not in chunk:
                            if len(buffer) > MAX_ROW_BYTES:
                                parser.feed(buffer)  # raises: longer than any row
                            continue
                        *lines, buffer = buffer.split(b"\n")
                        for line in lines:
                            parser.feed(line)
                    if buffer:
                        parser.feed(buffer)
                    return parser.finish()
        except transient_errors() as exc:
            problem = f"{type(exc).__name__} on GET {url}"
            unreachable = isinstance(exc, connect_errors())
        else:
            unreachable = False
        if attempt + 1 < attempts:
            await asyncio.sleep(backoff_delay(ctx, attempt))
    raise (ProviderUnreachable if unreachable else ProviderError)(f"gave up after {attempts} attempts: {problem}")


class Aws(Provider):
    name = "aws"
    title = "Amazon Web Services (EC2)"
    kind = ProviderKind.cloud
    homepage = "https://aws.amazon.com/ec2/pricing/on-demand/"
    parser_version = "1"
    # Per region file. The files run to hundreds of MB and grow with every instance type AWS adds, so the
    # 64 MiB default would fail every run; they are parsed line by line, so this bounds the time and bandwidth
    # a runaway body can take rather than memory, with ample headroom over today's sizes.
    max_response_bytes = 4 * 2**30

    async def fetch(self, ctx: FetchContext) -> ScrapeResult:
        return await fetch_regions(ctx)


async def fetch_regions(ctx: FetchContext, template: str = URL, regions: tuple[str, ...] = REGIONS) -> ScrapeResult:
    """Every region's price-list CSV under `template`: the current list, or a published version's (the
    same files under `/offers/v1.0/aws/AmazonEC2/<version>/<region>/index.csv`), streamed and parsed alike."""
    parts = await gather_bounded([partial(_stream_region, ctx, region, template) for region in regions], CONCURRENCY)
    result = ScrapeResult()
    for part in parts:
        result.offers.extend(part.offers)
        result.skipped.extend(part.skipped)
    return result
