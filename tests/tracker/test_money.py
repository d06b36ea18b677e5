"""The money rule (tracker/money.py): six places, half to even, from the exact inputs."""

from __future__ import annotations

from decimal import Decimal

from tracker import money


def test_a_machines_price_is_its_gpus_at_the_gpu_price_rounded_once():
    assert money.machine_price(Decimal("2.69"), 8) == Decimal("21.520000")
    # A slice: 1/7 of an A100 at $1.29 is 0.184285714…, rounded half to even at six places.
    assert money.machine_price(Decimal("1.29"), 1 / 7) == Decimal("0.184286")
    # A float count enters by its shortest decimal form, so no binary noise is rounded in.
    assert money.machine_price(Decimal("0.000001"), 0.5) == Decimal("0.000000")  # 0.0000005 → even
    assert money.machine_price(Decimal("0.000003"), 0.5) == Decimal("0.000002")  # 0.0000015 → even
