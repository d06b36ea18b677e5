"""The README's providers table is generated from the registry and each adapter's bundled sample, and a
change to either that is not regenerated into the README fails here."""

from __future__ import annotations

from pathlib import Path

import pytest

from providers.registry import PROVIDERS
from tracker.pipeline.coverage import END, START, coverage, markdown_table, readme_with_table

README = Path(__file__).resolve().parents[3] / "README.md"


@pytest.fixture(scope="module")
def rows():
    return coverage()


def test_the_readme_table_is_the_generated_one(rows) -> None:
    text = README.read_text(encoding="utf-8")
    current = text[text.index(START) : text.index(END) + len(END)]
    assert current == markdown_table(rows), "run `python -m tracker.pipeline.coverage --write` and commit README.md"


def test_every_registered_provider_has_a_row_with_what_its_sample_shows(rows) -> None:
    assert [r.name for r in rows] == [p.name for p in PROVIDERS]
    assert len(PROVIDERS) >= 60
    by_name = {r.name: r for r in rows}
    assert by_name["ovhcloud"].currencies == ("CAD", "EUR", "USD")
    assert by_name["sfcompute"].pricing == ("reserved (1d, 7d, 1mo)",)
    assert by_name["vastai"].auth == "none" and by_name["runpod"].auth == "optional key"
    assert all(r.offers > 0 for r in rows)


def test_a_readme_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="providers-table"):
        readme_with_table("# no table here\n", markdown_table([]))
