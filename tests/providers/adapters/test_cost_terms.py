"""What the adapters read from their APIs into attributes["cost_terms"] (providers.cost_terms): Vast's
disk, transfer and bandwidth per host, Lambda's included local disk, AWS's gp3 EBS rate."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

from providers.adapters.aws import parse_csv
from providers.adapters.lambdalabs import LambdaLabs
from providers.adapters.vastai import VastAi
from providers.cassette import bundled_cassette
from providers.cost_terms import COST_TERMS, TERM_KEYS, terms
from tests.factories.cassettes import replay


def test_vast_states_disk_transfer_and_bandwidth_per_host():
    offers = replay(VastAi).offers
    stated = [o.attributes[COST_TERMS] for o in offers]
    assert all(set(s) <= set(TERM_KEYS) for s in stated)
    assert all({"disk_usd_per_gb_month", "download_mbps"} <= set(s) for s in stated)
    # The docs sample's hosts differ: 8000 / 900 / 500 Mbit/s, $0.15 / $0.20 / $0.10 per GB-month.
    assert {Decimal(s["download_mbps"]) for s in stated} >= {Decimal(8000), Decimal(900), Decimal(500)}


def test_lambda_states_its_local_disk_in_gb():
    offers = replay(LambdaLabs).offers
    h100 = next(o for o in offers if o.attributes.get("storage_gib") == 2816)
    assert Decimal(h100.attributes[COST_TERMS]["included_disk_gb"]) == Decimal("3023.657")  # 2816 GiB × 1.073741824


def _aws_csv_with_gp3(rate: str) -> str:
    text = json.loads(bundled_cassette("aws").read_text())["interactions"][0]["response"]["text"]
    lines = text.splitlines()
    header = next(csv.reader([next(line for line in lines if line.startswith('"SKU"'))]))
    row = dict.fromkeys(header, "")
    row |= {
        "SKU": "GP3SKU",
        "TermType": "OnDemand",
        "Unit": "GB-Mo",
        "PricePerUnit": rate,
        "Currency": "USD",
        "Product Family": "Storage",
        "usageType": "EBS:VolumeUsage.gp3",
        "Region Code": "us-east-1",
    }
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow([row[h] for h in header])
    return text.rstrip("\n") + "\n" + out.getvalue()


def test_aws_reads_the_regions_gp3_rate_from_the_price_list():
    result = parse_csv(_aws_csv_with_gp3("0.0800000000"), "us-east-1")
    assert result.offers
    assert {o.attributes[COST_TERMS]["disk_usd_per_gb_month"] for o in result.offers} == {"0.08"}
    # Without the row the offers state nothing, and the sheet applies.
    text = json.loads(bundled_cassette("aws").read_text())["interactions"][0]["response"]["text"]
    assert all(COST_TERMS not in o.attributes for o in parse_csv(text, "us-east-1").offers)


def test_terms_helper_leaves_out_what_is_not_said():
    assert terms(egress_usd_per_gb=Decimal("0.01"), download_mbps=None, stopped_bills=True) == {
        "egress_usd_per_gb": "0.01",
        "stopped_bills": True,
    }
