"""Storage schema (SQLAlchemy 2 typed models).

History is the product, so it is stored change-only: `offer_prices` gets a row when an offer's price
changes (or when a delisted offer comes back); an unchanged scrape only moves `offers.last_seen`.
Each price row is valid on [valid_from, valid_to); valid_to is NULL for the live price and is set when
the price changes or the offer is delisted, so "the price at instant t" is a single range lookup and
an offer counts in a time bucket exactly while it was listed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from tracker.storage.claims import holder_id

# Stable constraint names, so migrations are reviewable and identical on SQLite and Postgres.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# Offer attributes that offers, rankings and alerts filter on (`tracker.market.quality` holds their
# meaning): ingest rewrites an offer's stored attributes when one of these changes.
QUALITY_ATTRIBUTES = ("verification", "hosting", "reliability", "cloud")

# SQLite only auto-increments INTEGER PRIMARY KEY; Postgres gets a real BIGINT.
BigId = BigInteger().with_variant(Integer(), "sqlite")
Money = Numeric(14, 6)  # USD; never float


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops tzinfo on the way back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class ScrapeRun(Base):
    """The ledger: one row per provider scrape attempt, whatever its outcome."""

    __tablename__ = "scrape_runs"
    __table_args__ = (
        # One run per provider per schedule slot and attempt, however many workers race for it. A slot
        # has a second attempt only when its first was reclaimed from a dead worker (closed `failed`).
        UniqueConstraint("provider", "slot", "attempt", name="uq_scrape_runs_provider_slot_attempt"),
        Index("ix_scrape_runs_provider_started", "provider", "started_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    provider: Mapped[str] = mapped_column(String(64))
    slot: Mapped[datetime | None] = mapped_column(UTCDateTime)
    attempt: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # host:pid of the process that wrote the row: whose claim a `running` row is (storage.claims).
    claimed_by: Mapped[str | None] = mapped_column(String(255), default=holder_id)
    source: Mapped[str] = mapped_column(String(16), default="live")  # live | replay | demo
    status: Mapped[str] = mapped_column(String(16))  # running | ok | failed | quarantined | skipped
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    observed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)  # the instant the prices hold at
    offers_seen: Mapped[int] = mapped_column(Integer, default=0)
    offers_valid: Mapped[int] = mapped_column(Integer, default=0)
    offers_new: Mapped[int] = mapped_column(Integer, default=0)
    price_rows: Mapped[int] = mapped_column(Integer, default=0)
    offers_closed: Mapped[int] = mapped_column(Integer, default=0)
    offers_reopened: Mapped[int] = mapped_column(Integer, default=0)
    unknown_names: Mapped[int] = mapped_column(Integer, default=0)
    invalid_offers: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    # What the response's shape said against the fields the parser needs (tracker.pipeline.drift), as
    # [{"endpoint", "field", "change", "detail"}]; null when not compared (static sheets, CSV).
    schema_warnings: Mapped[list[dict[str, str]] | None] = mapped_column(JSON)
    parser_version: Mapped[str] = mapped_column(String(32), default="1")


class Offer(Base):
    """A provider's rentable configuration, identified by the provider's stable natural key."""

    __tablename__ = "offers"
    __table_args__ = (
        UniqueConstraint("provider", "offer_key", name="uq_offers_provider_offer_key"),
        Index("ix_offers_family_pricing", "gpu_family", "pricing"),
        Index("ix_offers_gpu_pricing", "gpu_id", "pricing"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    provider: Mapped[str] = mapped_column(String(64))
    offer_key: Mapped[str] = mapped_column(String(255))
    gpu_id: Mapped[str] = mapped_column(String(64))
    gpu_family: Mapped[str] = mapped_column(String(64))
    raw_gpu_name: Mapped[str] = mapped_column(String(255))
    gpu_count: Mapped[Decimal] = mapped_column(Numeric(8, 3))
    gpu_memory_gb: Mapped[Decimal | None] = mapped_column(Numeric(8, 2))
    form_factor: Mapped[str] = mapped_column(String(32))
    pricing: Mapped[str] = mapped_column(String(16))
    reserved_term: Mapped[str | None] = mapped_column(String(16))
    region: Mapped[str] = mapped_column(String(128), default="")
    instance_type: Mapped[str | None] = mapped_column(String(128))
    available: Mapped[bool | None] = mapped_column(Boolean)
    vcpus: Mapped[Decimal | None] = mapped_column(Numeric(8, 2))
    ram_gb: Mapped[Decimal | None] = mapped_column(Numeric(10, 2))
    # Provider-specific extras. The ones the read side filters on (QUALITY_ATTRIBUTES) are kept current
    # by ingest; the rest describe the offer as it was when it last changed otherwise.
    attributes: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    demo: Mapped[bool] = mapped_column(Boolean, default=False)
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    delisted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The live price, denormalised from the open price row so "current offers" needs no join.
    price_per_hour: Mapped[Decimal] = mapped_column(Money)
    price_per_gpu_hour: Mapped[Decimal] = mapped_column(Money)


class OfferPrice(Base):
    """Change-only price history; valid on [valid_from, valid_to)."""

    __tablename__ = "offer_prices"
    __table_args__ = (
        Index("ix_offer_prices_offer_from", "offer_id", "valid_from"),
        # History of a card scans by (gpu, time) without touching offers.
        Index("ix_offer_prices_gpu_from", "gpu_id", "valid_from"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id", ondelete="CASCADE"))
    gpu_id: Mapped[str] = mapped_column(String(64))  # copied from the offer: history queries filter on it
    pricing: Mapped[str] = mapped_column(String(16))
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime)
    price_per_hour: Mapped[Decimal] = mapped_column(Money)
    price_per_gpu_hour: Mapped[Decimal] = mapped_column(Money)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("scrape_runs.id", ondelete="SET NULL"))


class OfferAvailability(Base):
    """Change-only availability history, kept like prices: valid on [valid_from, valid_to).

    A row opens when an offer first appears, when its `available` flag changes and when a delisted
    offer comes back; delisting closes the open row and no row covers the time an offer is not
    listed, so "was a matching offer available at t" is one range lookup per offer, and the share of
    a window during which one was is exact from the intervals (`tracker.market.availability`).
    `available` is the provider's word: NULL where the provider does not say.
    """

    __tablename__ = "offer_availability"
    __table_args__ = (Index("ix_offer_availability_offer_from", "offer_id", "valid_from"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id", ondelete="CASCADE"))
    available: Mapped[bool | None] = mapped_column(Boolean)
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("scrape_runs.id", ondelete="SET NULL"))


class UnresolvedGpuName(Base):
    """Raw GPU names a provider listed that the catalog could not resolve: kept aside and counted."""

    __tablename__ = "unknown_gpu_names"
    __table_args__ = (UniqueConstraint("provider", "raw_name", name="uq_unknown_gpu_names_provider_raw"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    provider: Mapped[str] = mapped_column(String(64))
    raw_name: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str] = mapped_column(Text, default="")
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    times_seen: Mapped[int] = mapped_column(Integer, default=0)
    last_run_id: Mapped[int | None] = mapped_column(ForeignKey("scrape_runs.id", ondelete="SET NULL"))


class DataVersion(Base):
    """A single-row counter bumped by every ingest that changed data, inside that ingest's transaction.

    Caches of derived views (market snapshot, ranking inputs) key on it, so they are invalidated by
    ingest — in this process or another — at the cost of one primary-key read per request. Bumping a
    single row also serialises the commits of concurrent ingests, so the counter never skips a change.
    """

    __tablename__ = "data_version"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    version: Mapped[int] = mapped_column(BigInteger, default=0)
    changed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
