"""`import skypilot-catalog`: a small git repository built here with rows shaped like SkyPilot's vms.csv
(schema v5/v6 columns), three dated commits."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from sqlalchemy import func, select

from tracker.clock import utcnow
from tracker.history.dataset import DatasetError
from tracker.history.imports.skypilot import import_skypilot, parse_vms
from tracker.storage.engine import session_scope
from tracker.storage.tables import Offer, OfferPrice, ScrapeRun, UnresolvedGpuName

HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,AvailabilityZone\n"
)
A100 = "\"{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 40960}}]}\""
A10G = "\"{'Gpus': [{'Name': 'A10G', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 24576}}]}\""


def aws(g5: str) -> str:
    return HEADER + (
        f"p4d.24xlarge,A100,8.0,96.0,1152.0,{A100},32.7726,9.8318,us-east-1,us-east-1a\n"
        f"g5.xlarge,A10G,1.0,4.0,16.0,{A10G},{g5},0.3018,us-east-1,us-east-1a\n"
        "m5.large,,,2.0,8.0,,0.096,0.035,us-east-1,us-east-1a\n"
        "inf1.xlarge,Inferentia,1.0,4.0,8.0,,0.228,,us-east-1,us-east-1a\n"
    )


def lam(price: str) -> str:
    info = "\"{'Gpus': [{'Name': 'A100', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 40960}}]}\""
    return HEADER + f"gpu_1x_a100_sxm4,A100,1.0,30.0,200.0,{info},{price},,us-east-1,\n"


def _commit(repo, when: str, files: dict[str, str]) -> None:
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    env = os.environ | {"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", when], check=True, env=env)


@pytest.fixture
def catalog_repo(tmp_path):
    repo = tmp_path / "skypilot-catalog"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _commit(
        repo,
        "2024-01-10T06:00:00+00:00",
        {
            "catalogs/v5/aws/vms.csv": aws("1.006"),
            "catalogs/v5/lambda/vms.csv": lam("1.29"),
            "catalogs/v5/hyperbolic/vms.csv": lam("1.5"),
        },
    )
    # The g5 price moves; the newest schema version (v6) is the one read.
    _commit(
        repo,
        "2024-02-10T06:00:00+00:00",
        {"catalogs/v5/aws/vms.csv": aws("1.006"), "catalogs/v6/aws/vms.csv": aws("1.1")},
    )
    _commit(repo, "2024-03-10T06:00:00+00:00", {"catalogs/v5/lambda/vms.csv": lam("1.10")})
    return repo


def test_each_commit_is_a_dated_observation_and_a_rerun_adds_nothing(engine, settings, catalog_repo):
    with session_scope(engine) as session:
        report = import_skypilot(session, catalog_repo, settings=settings, now=utcnow())
    # aws: January (p4d and g5, on-demand and spot: 4) and February (g5 on-demand: 1); lambda: January, March.
    assert (report.runs, report.price_rows, report.offers_new) == (4, 7, 5)
    assert report.unknown_names == {"Inferentia": 2}  # in both AWS observations, recorded like a scrape's
    assert report.unknown_sources == {"hyperbolic": 1}
    with session_scope(engine) as session:
        runs = session.execute(
            select(ScrapeRun.provider, ScrapeRun.observed_at, ScrapeRun.source_version).order_by(ScrapeRun.observed_at)
        ).all()
        assert [(r.provider, r.observed_at.date().isoformat()) for r in runs] == [
            ("aws", "2024-01-10"),
            ("lambdalabs", "2024-01-10"),
            ("aws", "2024-02-10"),
            ("lambdalabs", "2024-03-10"),
        ]
        assert runs[2].source_version.startswith("skypilot-catalog:catalogs/v6/aws/vms.csv@")
        g5 = session.scalars(select(Offer).where(Offer.offer_key == "g5.xlarge:us-east-1:us-east-1a")).one()
        assert g5.gpu_id == "A10G-24GB" and g5.gpu_memory_gb == Decimal("24")
        prices = session.scalars(
            select(OfferPrice.price_per_hour).where(OfferPrice.offer_id == g5.id).order_by(OfferPrice.valid_from)
        ).all()
        assert prices == [Decimal("1.006"), Decimal("1.1")]
        assert (
            session.scalar(select(UnresolvedGpuName.times_seen).where(UnresolvedGpuName.raw_name == "Inferentia")) == 2
        )
    with session_scope(engine) as session:
        again = import_skypilot(session, catalog_repo, settings=settings, now=utcnow())
    assert (again.runs, again.price_rows, again.skipped) == (0, 0, 4)
    with session_scope(engine) as session:
        assert session.scalar(select(func.count()).select_from(OfferPrice)) == 7


def test_since_reads_only_later_commits(engine, settings, catalog_repo):
    with session_scope(engine) as session:
        report = import_skypilot(
            session, catalog_repo, settings=settings, now=utcnow(), since=datetime(2024, 2, 1, tzinfo=UTC)
        )
    assert report.runs == 2


def test_a_bad_row_is_set_aside_and_a_missing_column_fails_the_run():
    parsed = parse_vms((HEADER + "g5.xlarge,A10G,1.0,4.0,16.0,,abc,,us-east-1,\n").encode(), "x.csv")
    assert parsed.offers == [] and "line 2" in parsed.skipped[0]
    with pytest.raises(Exception, match="no Price column"):
        parse_vms(b"InstanceType,AcceleratorName,AcceleratorCount\nx,A10G,1\n", "x.csv")


def test_not_a_repository_is_refused(engine, settings, tmp_path):
    with pytest.raises(DatasetError, match="git"), session_scope(engine) as session:
        import_skypilot(session, tmp_path, settings=settings, now=utcnow())


def test_cli_reports_what_it_read(cli, catalog_repo):
    result = cli("import", "skypilot-catalog", str(catalog_repo))
    assert result.exit_code == 0, result.output
    assert "wrote 4 runs" in result.output and "7 price rows" in result.output
    assert "hyperbolic" in result.output and "Inferentia (2)" in result.output
    bad = cli("import", "skypilot-catalog", str(catalog_repo), "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.output
