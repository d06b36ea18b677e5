"""Storage schema (SQLAlchemy 2 typed models).

History is the product, so it is stored change-only: `offer_prices` gets a row when an offer's price
changes (or when a delisted offer comes back); an unchanged scrape only moves `offers.last_seen`.
Each price row is valid on [valid_from, valid_to); valid_to is NULL for the live price and is set when
the price changes or the offer is delisted, so "the price at instant t" is a single range lookup and
an offer counts in a time bucket exactly while it was listed.

Native currency: a price is stored as the provider quoted it (`currency`, `price_native_*`) beside its
USD figure and the rate that made it (`fx_rate` USD per unit, `fx_date`, `fx_source`), copied from
`fx_rates` when the row was written. A USD figure is therefore never recomputed: re-fetching or revising
rates moves no history. When only the rate moved (same native amount, another USD figure) ingest writes
a row with `change_kind = "fx"`; a counted price change is a `change_kind = "price"` row.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
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
    true,
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
# ... and an aggregator's resale labels (tracker.market.aggregated), which offers, market and rank filter on too.
QUALITY_ATTRIBUTES = ("verification", "hosting", "reliability", "cloud", "via", "upstream")

# SQLite only auto-increments INTEGER PRIMARY KEY; Postgres gets a real BIGINT.
BigId = BigInteger().with_variant(Integer(), "sqlite")
Money = Numeric(14, 6)  # USD; never float
# USD per unit of a currency: twelve places keep six significant digits even for weak currencies
# (USD per IDR is ~6e-5), so a converted amount is exact to the micro-dollar before rounding.
Rate = Numeric(24, 12)

# The history tables on Postgres: one partition a month by `valid_from` (tracker.storage.partitions), so
# their primary key is (id, valid_from), as Postgres requires a partitioned table's keys to hold the
# partition key. SQLite keeps id alone as the key of a plain table (migration 0018 leaves it): Alembic does
# not compare primary keys, and nothing refers to these rows by id with a foreign key.
MONTHLY = {"postgresql_partition_by": "RANGE (valid_from)"}


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
    source: Mapped[str] = mapped_column(String(16), default="live")  # live | replay | demo | import
    # An imported run's origin (tracker.history.imports): the published version its observation came from
    # (a snapshot file and its SHA-256, an export file's hash, a catalog commit); NULL for scrapes.
    source_version: Mapped[str | None] = mapped_column(String(255))
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
    # Price rows written only because the exchange rate moved (change_kind "fx"): not in `price_rows`.
    fx_rows: Mapped[int] = mapped_column(Integer, server_default="0")
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
    # What the price is (providers.contract.PriceKind: asking | transacted | floor) and whether it can be
    # ordered at now; columns, not attributes, because every statistic filters on them in SQL
    # (tracker.market.price_kinds holds the rule). Kept on each price row too: a server's rented rate and
    # its asking price alternate under one offer, and history must tell them apart.
    # Server defaults only: an insert that names neither (an older migration's test, a raw import) gets them.
    price_kind: Mapped[str] = mapped_column(String(16), server_default="asking")
    orderable: Mapped[bool] = mapped_column(Boolean, server_default=true())
    demo: Mapped[bool] = mapped_column(Boolean, default=False)
    first_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    last_seen: Mapped[datetime] = mapped_column(UTCDateTime)
    delisted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    # The live price, denormalised from the open price row so "current offers" needs no join.
    price_per_hour: Mapped[Decimal] = mapped_column(Money)
    price_per_gpu_hour: Mapped[Decimal] = mapped_column(Money)
    # The live price as quoted and the rate that made the USD figure (see the module docstring).
    # Nullable only because SQLite cannot add a NOT NULL column without a constant default; ingest
    # always writes them and migration 0008 filled the rows before it (USD: native = USD figure).
    currency: Mapped[str] = mapped_column(String(3), server_default="USD")
    price_native_per_hour: Mapped[Decimal | None] = mapped_column(Money)
    price_native_per_gpu_hour: Mapped[Decimal | None] = mapped_column(Money)
    fx_rate: Mapped[Decimal | None] = mapped_column(Rate)  # USD per unit of `currency`; NULL: quoted in USD
    fx_date: Mapped[date | None] = mapped_column(Date)  # the day the rate is the reference rate of
    fx_source: Mapped[str | None] = mapped_column(String(32))
    # The digest of the observation this row was last written from (tracker.ingest.digest): an observation
    # with the same digest is unchanged without being checked and compared again. NULL: written before
    # digests were kept, or by an import; the next ingest compares it in full and writes one.
    observed_digest: Mapped[str | None] = mapped_column(String(32))


class OfferPrice(Base):
    """Change-only price history; valid on [valid_from, valid_to).

    Each row keeps the amount as quoted (`currency`, `price_native_*`) and the rate it was converted at
    (`fx_rate`, `fx_date`, `fx_source`), so its USD figure is fixed when written. `change_kind` says why
    the row exists: "price" (listed, reopened, the quoted price, GPU count or card changed) or "fx"
    (same quoted price, the USD figure moved with the rate): counts of price changes skip "fx" rows,
    while USD statistics read every row, each at its own rate.
    """

    __tablename__ = "offer_prices"
    __table_args__ = (
        Index("ix_offer_prices_offer_from", "offer_id", "valid_from"),
        # History of a card scans by (gpu, pricing, time) without touching offers or the table: the index
        # holds every column that query reads or filters on (migration 0019).
        Index(
            "ix_offer_prices_history",
            "gpu_id",
            "pricing",
            "valid_from",
            "valid_to",
            "price_per_gpu_hour",
            "offer_id",
            "price_kind",
            "orderable",
        ),
        MONTHLY,
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id", ondelete="CASCADE"))
    gpu_id: Mapped[str] = mapped_column(String(64))  # copied from the offer: history queries filter on it
    pricing: Mapped[str] = mapped_column(String(16))
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)  # the partition key (see MONTHLY)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime)
    price_per_hour: Mapped[Decimal] = mapped_column(Money)
    price_per_gpu_hour: Mapped[Decimal] = mapped_column(Money)
    run_id: Mapped[int | None] = mapped_column(ForeignKey("scrape_runs.id", ondelete="SET NULL"))
    change_kind: Mapped[str] = mapped_column(String(8), server_default="price")  # price | fx
    currency: Mapped[str] = mapped_column(String(3), server_default="USD")
    price_native_per_hour: Mapped[Decimal | None] = mapped_column(Money)  # nullable: as on `Offer`
    price_native_per_gpu_hour: Mapped[Decimal | None] = mapped_column(Money)
    fx_rate: Mapped[Decimal | None] = mapped_column(Rate)  # USD per unit; NULL: quoted in USD
    fx_date: Mapped[date | None] = mapped_column(Date)
    fx_source: Mapped[str | None] = mapped_column(String(32))
    # The price's kind and orderability while this row held (as on `Offer`): a change of either is a new row.
    price_kind: Mapped[str] = mapped_column(String(16), server_default="asking")
    orderable: Mapped[bool] = mapped_column(Boolean, server_default=true())


class FxRate(Base):
    """Reference exchange rates by day, as USD per one unit of `currency` (history: one row a day).

    Ingest converts a quote at the latest rate on or before the observation's day and copies that rate
    onto the price row; a rate stored here is never read back for an existing row, so a re-fetch (or a
    source's correction, which updates the day's row) moves no USD history. EUR's row is the source's
    EUR/USD reference rate.
    """

    __tablename__ = "fx_rates"
    # Leading (currency, rate_date): "latest rate on or before a day" is one index range scan.
    __table_args__ = (UniqueConstraint("currency", "rate_date", "source", name="uq_fx_rates_currency_date_source"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    currency: Mapped[str] = mapped_column(String(3))
    rate_date: Mapped[date] = mapped_column(Date)
    usd_per_unit: Mapped[Decimal] = mapped_column(Rate)
    source: Mapped[str] = mapped_column(String(32))
    fetched_at: Mapped[datetime] = mapped_column(UTCDateTime)


class OfferAvailability(Base):
    """Change-only availability history, kept like prices: valid on [valid_from, valid_to).

    A row opens when an offer first appears, when its `available` flag changes and when a delisted
    offer comes back; delisting closes the open row and no row covers the time an offer is not
    listed, so "was a matching offer available at t" is one range lookup per offer, and the share of
    a window during which one was is exact from the intervals (`tracker.market.availability`).
    `available` is the provider's word: NULL where the provider does not say.
    """

    __tablename__ = "offer_availability"
    __table_args__ = (Index("ix_offer_availability_offer_from", "offer_id", "valid_from"), MONTHLY)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id", ondelete="CASCADE"))
    available: Mapped[bool | None] = mapped_column(Boolean)
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime, primary_key=True)  # the partition key (see MONTHLY)
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


class RegionLocation(Base):
    """Where a provider's region is (tracker.catalog.locations), kept for SQL: the region filter joins on
    it, so `--region eu` is one condition in the database rather than a scan in Python. Ingest writes a
    row for each (provider, region) it sees and rewrites it when the shipped region table places it
    differently; `located` is False for a region nothing places (reported, never guessed)."""

    __tablename__ = "region_locations"

    provider: Mapped[str] = mapped_column(String(64), primary_key=True)
    region: Mapped[str] = mapped_column(String(128), primary_key=True)
    located: Mapped[bool] = mapped_column(Boolean, default=False)
    country: Mapped[str | None] = mapped_column(String(2))
    areas: Mapped[str] = mapped_column(String(64), default="")  # "+eu+mea+": each area between "+" signs
    metro: Mapped[str | None] = mapped_column(String(64))


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


class OfferCostTerms(Base):
    """Change-only history of the cost terms an offer's API states (`providers.cost_terms`), kept like
    prices: valid on [valid_from, valid_to). A row exists only for offers whose API says at least one
    term; NULL is "not said" (tracker.costs then takes the provider's sheet or a default)."""

    __tablename__ = "offer_cost_terms"
    __table_args__ = (Index("ix_offer_cost_terms_offer_from", "offer_id", "valid_from"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    offer_id: Mapped[int] = mapped_column(ForeignKey("offers.id", ondelete="CASCADE"))
    valid_from: Mapped[datetime] = mapped_column(UTCDateTime)
    valid_to: Mapped[datetime | None] = mapped_column(UTCDateTime)
    billing_increment_s: Mapped[Decimal | None] = mapped_column(Numeric(12, 3))
    billing_minimum_s: Mapped[Decimal | None] = mapped_column(Numeric(12, 3))
    included_disk_gb: Mapped[Decimal | None] = mapped_column(Numeric(14, 3))
    disk_usd_per_gb_month: Mapped[Decimal | None] = mapped_column(Money)
    egress_usd_per_gb: Mapped[Decimal | None] = mapped_column(Money)
    ingress_usd_per_gb: Mapped[Decimal | None] = mapped_column(Money)
    download_mbps: Mapped[Decimal | None] = mapped_column(Numeric(14, 3))
    stopped_bills: Mapped[bool | None] = mapped_column(Boolean)
    # A digest of the terms above as ingest normalised them: an unchanged scrape compares 20,000 short
    # strings instead of reading back and re-normalising ten numeric columns per offer.
    digest: Mapped[str] = mapped_column(String(40))
    run_id: Mapped[int | None] = mapped_column(ForeignKey("scrape_runs.id", ondelete="SET NULL"))


class ExternalAggregate(Base):
    """A third party's published market statistics for one card at one instant (tracker.history.imports).

    A reference series, not offers: it is drawn beside our own median and never enters our statistics.
    `gpu_id` is the catalog card the source's name resolved to (NULL: unresolved, kept and reported).
    """

    __tablename__ = "external_aggregates"
    __table_args__ = (
        UniqueConstraint("source", "raw_gpu_name", "observed_at", name="uq_external_aggregates_source_name_at"),
        Index("ix_external_aggregates_gpu_at", "gpu_id", "observed_at"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    source: Mapped[str] = mapped_column(String(64))
    raw_gpu_name: Mapped[str] = mapped_column(String(255))
    gpu_id: Mapped[str | None] = mapped_column(String(64))
    observed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    min: Mapped[Decimal | None] = mapped_column(Money)
    p10: Mapped[Decimal | None] = mapped_column(Money)
    p25: Mapped[Decimal | None] = mapped_column(Money)
    median: Mapped[Decimal | None] = mapped_column(Money)
    p75: Mapped[Decimal | None] = mapped_column(Money)
    p90: Mapped[Decimal | None] = mapped_column(Money)
    max: Mapped[Decimal | None] = mapped_column(Money)
    mean: Mapped[Decimal | None] = mapped_column(Money)
    offers: Mapped[int | None] = mapped_column(Integer)  # listings the statistic is over, as the source says
    available: Mapped[int | None] = mapped_column(Integer)
    source_version: Mapped[str] = mapped_column(String(255))
