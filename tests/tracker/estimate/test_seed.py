"""Every figure of the seed article's tables, reproduced by the `seed` assumption set.

The seed rounds its figures, so throughput, $/1M tokens, hours and cost per run must land within
0.5 % of each published number; its VRAM table within 5 %, with the same fits / does-not-fit
verdict on every card it lists.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from tracker.catalog.gpus import get_catalog
from tracker.estimate import make_job, prepare

# The seed's card names, as the GPU catalog spells them.
CARDS = {
    "RTX 4090": "RTX4090-24GB",
    "RTX 6000 Ada": "RTX6000ADA-48GB",
    "L40S": "L40S-48GB",
    "A100 40GB": "A100-SXM-40GB",
    "A100 80GB": "A100-SXM-80GB",
    "H100 80GB": "H100-SXM-80GB",
    "H200 141GB": "H200-SXM-141GB",
}
PRICES = {  # marketplace medians, $/GPU-hour
    "RTX 4090": "0.44",
    "RTX 6000 Ada": "0.79",
    "L40S": "1.19",
    "A100 40GB": "1.19",
    "A100 80GB": "1.59",
    "H100 80GB": "2.69",
    "H200 141GB": "3.39",
}
TOLERANCE = 0.005


def card(name: str):
    return get_catalog().get(CARDS[name])


def close(actual: float, published: float, tol: float = TOLERANCE) -> bool:
    return abs(actual / published - 1) <= tol


@pytest.fixture(scope="module")
def qlora_8b():
    # 5,000 examples × 1,500 tokens × 3 epochs
    return prepare(make_job("llama-3.1-8b", "qlora", examples=5000, tokens_per_example=1500, epochs=3), "seed")


@pytest.fixture(scope="module")
def qlora_70b():
    # 2,000 examples × 2,000 tokens × 2 epochs
    return prepare(make_job("llama-3.1-70b", "qlora", examples=2000, tokens_per_example=2000, epochs=2), "seed")


def test_training_token_counts(qlora_8b, qlora_70b):
    assert qlora_8b.job.tokens == 22_500_000
    assert qlora_70b.job.tokens == 8_000_000


# --- Throughput table (8B QLoRA) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tflops", "tokens_per_second", "relative"),
    [
        ("A100 40GB", 312, 1943, 1.00),
        ("A100 80GB", 312, 1943, 1.00),
        ("H100 80GB", 989, 6158, 3.17),
        ("H200 141GB", 989, 6158, 3.17),
    ],
)
def test_throughput_table(qlora_8b, name, tflops, tokens_per_second, relative):
    est = qlora_8b.on(card(name))
    assert est.peak_flops == tflops * 1e12
    assert close(est.tokens_per_second, tokens_per_second)
    baseline = qlora_8b.on(card("A100 40GB")).tokens_per_second
    assert close(est.tokens_per_second / baseline, relative)


def test_a100_pcie_twin_runs_at_the_same_speed(qlora_8b):
    sxm = qlora_8b.on(get_catalog().get("A100-SXM-40GB"))
    pcie = qlora_8b.on(get_catalog().get("A100-PCIE-40GB"))
    assert pcie.tokens_per_second == sxm.tokens_per_second


def test_flops_per_token_is_six_n(qlora_8b):
    assert qlora_8b.flops_per_token == pytest.approx(6 * 8.03e9, rel=1e-3)


# --- Price table: $ per 1M training tokens ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "vram", "usd_per_mtok"),
    [
        ("RTX 4090", 24, 0.119),
        ("RTX 6000 Ada", 48, 0.195),
        ("L40S", 48, 0.147),
        ("A100 40GB", 40, 0.170),
        ("A100 80GB", 80, 0.227),
        ("H100 80GB", 80, 0.121),
        ("H200 141GB", 141, 0.153),
    ],
)
def test_price_table(qlora_8b, name, vram, usd_per_mtok):
    est = qlora_8b.on(card(name), price_per_gpu_hour=PRICES[name])
    assert card(name).memory_gb == vram
    assert isinstance(est.usd_per_mtok, Decimal)
    assert close(float(est.usd_per_mtok), usd_per_mtok)


# --- Cost per run, 8B QLoRA, 22.5M tokens ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hours", "cost"),
    [
        ("RTX 4090", 6.08, 2.68),
        ("H100 80GB", 1.01, 2.73),
        ("A100 40GB", 3.22, 3.83),
        ("L40S", 2.77, 3.30),
        ("A100 80GB", 3.22, 5.12),
        ("H200 141GB", 1.01, 3.44),
    ],
)
def test_cost_per_run_8b(qlora_8b, name, hours, cost):
    est = qlora_8b.on(card(name), price_per_gpu_hour=PRICES[name])
    assert close(est.hours, hours)
    assert isinstance(est.cost_per_run, Decimal)
    assert close(float(est.cost_per_run), cost)


# --- Cost per run, 70B QLoRA, 8M tokens -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "hours", "cost"),
    [
        ("H100 80GB", 3.17, 8.53),
        ("L40S", 8.67, 10.31),
        ("H200 141GB", 3.17, 10.76),
        ("A100 80GB", 10.06, 15.99),
    ],
)
def test_cost_per_run_70b(qlora_70b, name, hours, cost):
    est = qlora_70b.on(card(name), price_per_gpu_hour=PRICES[name])
    assert close(est.hours, hours)
    assert close(float(est.cost_per_run), cost)


def test_claims_derived_from_the_tables(qlora_8b, qlora_70b):
    """The article's prose: H100 47 % cheaper per run than the A100 80GB at both sizes; the 4090
    within two percent of the H100 on cost."""

    def cost(prepared, name):
        return float(prepared.on(card(name), price_per_gpu_hour=PRICES[name]).cost_per_run)

    assert 1 - cost(qlora_8b, "H100 80GB") / cost(qlora_8b, "A100 80GB") == pytest.approx(0.47, abs=0.01)
    assert 1 - cost(qlora_70b, "H100 80GB") / cost(qlora_70b, "A100 80GB") == pytest.approx(0.47, abs=0.01)
    # "Within two percent" compares the rounded $2.68 and $2.73 (1.8 %); unrounded it is 2.1 %.
    assert abs(cost(qlora_8b, "RTX 4090") / cost(qlora_8b, "H100 80GB") - 1) < 0.025


# --- VRAM table (rank 16, 2048 tokens, batch 1, checkpointing on) ---------------------------------------

VRAM_ROWS = [
    # model, method, published GB, verdicts on A100 40GB / A100 80GB / H100 80GB
    ("llama-3.1-8b", "qlora", 6.2, (True, True, True)),
    ("llama-3.1-8b", "lora", 17.9, (True, True, True)),
    ("qwen2.5-32b", "qlora", 21.3, (True, True, True)),
    ("llama-3.1-70b", "qlora", 44.3, (False, True, True)),
]


@pytest.mark.parametrize(("model", "method", "published", "verdicts"), VRAM_ROWS)
def test_vram_table(model, method, published, verdicts):
    prepared = prepare(
        make_job(model, method, rank=16, seq_len=2048, batch=1, grad_checkpointing=True, tokens=1e6), "seed"
    )
    gbs = {prepared.on(card(name)).vram_gb for name in CARDS}
    assert len(gbs) == 1, "memory is a property of the job, not of the card"
    assert close(gbs.pop(), published, tol=0.05)
    fits = tuple(prepared.on(card(name)).fits for name in ("A100 40GB", "A100 80GB", "H100 80GB"))
    assert fits == verdicts


def test_70b_bf16_lora_fits_no_single_seed_card_but_two_h100s():
    prepared = prepare(make_job("llama-3.1-70b", "lora", tokens="8M"), "seed")
    single = prepared.on(card("H200 141GB"))
    assert close(single.vram_gb, 146.6, tol=0.05)
    assert single.vram_gb > 141
    assert not any(prepared.on(card(name)).fits for name in CARDS)
    pair = prepared.on(card("H100 80GB"), gpus=2)
    assert pair.fits
    assert pair.vram_gb < 80
