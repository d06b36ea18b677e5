"""Each real provider payload (../shared/real-payloads) turned into the offers its adapter makes of it,
through the adapters' pure parse functions: what the integrity suite checks for every provider."""

from __future__ import annotations

from collections.abc import Callable

from providers.adapters import digitalocean, gcp, jarvislabs, oci, runpod, vastai, verda, vultr
from providers.contract import ScrapeResult
from tests.factories.real_payloads import real_payload


def _merge(*parts: ScrapeResult) -> ScrapeResult:
    return ScrapeResult(offers=[o for p in parts for o in p.offers], skipped=[s for p in parts for s in p.skipped])


def _runpod() -> ScrapeResult:
    types = real_payload("runpod/Jumbo2020_13a47f9_gpu_prices.json")
    return _merge(*(runpod.parse_catalog(types, cloud, n) for n in (1, 8) for cloud in ("secure", "community")))


def _verda() -> ScrapeResult:
    def part(what: str) -> object:
        return real_payload(f"verda/gpuhunt_310de51_{what}.json")

    return verda.parse(part("instance_types"), part("locations"), [], part("availability_spot"))


# provider → a function returning the offers of its real payloads (each call reads the files anew)
REAL_RESULTS: dict[str, Callable[[], ScrapeResult]] = {
    "vastai": lambda: vastai.parse({"offers": real_payload("vastai/vast-cli_11ecdfa_search_trimmed.json")}),
    "runpod": _runpod,
    "gcp": lambda: gcp.parse_page({"skus": real_payload("gcp/Jumbo2020_2e0273b_gcp_gpu_skus_trimmed.json")}),
    "oci": lambda: oci.parse(real_payload("oci/gpuhunt_8d0bcc7_shapes_cpu_excerpt.json"), {"items": []}),
    "vultr": lambda: _merge(
        vultr.parse_plans(real_payload("vultr/gpuhunt_91eca44_plans.json")),
        vultr.parse_metal(real_payload("vultr/gpuhunt_91eca44_plans_metal.json")),
    ),
    "digitalocean": lambda: digitalocean.parse_page(real_payload("digitalocean/gpuhunt_test_digitalocean_sizes.json"))[
        0
    ],
    "verda": _verda,
    "jarvislabs": lambda: jarvislabs.parse(real_payload("jarvislabs/gpuhunt_310de51_server_meta.json")),
}
