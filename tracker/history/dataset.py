"""The open dataset's schema, defined once: its tables, their columns, and how every value is written.

Every value is written as text (or null): decimals as their exact digits, instants as ISO-8601 UTC,
booleans as "true"/"false", JSON documents as compact JSON. The three formats (CSV, JSONL, Parquet)
therefore hold the same strings, a reader needs one decoder, and no money passes through a float.
In CSV an empty field is null, except in the non-nullable text columns (`region`), where it is "".
SCHEMA_VERSION changes when a column is removed or changes meaning; adding a column keeps it (`price_kind`
and `orderable` were added that way: an export without them held asking prices only, and reads so).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
FORMATS = ("csv", "jsonl", "parquet")
MANIFEST = "manifest.json"


class DatasetError(ValueError):
    """An export directory or file that cannot be read as this dataset (the message says why)."""


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # text | decimal | instant | date | bool | int | json
    nullable: bool = True


def _cols(spec: str) -> tuple[Column, ...]:
    """'name:kind' words; a trailing '!' marks a column that is never null."""
    out = []
    for word in spec.split():
        name, kind = word.split(":")
        out.append(Column(name, kind.rstrip("!"), not kind.endswith("!")))
    return tuple(out)


# The offer a history row refers to is (provider, offer_key); a run is (provider, run_id) within one export.
TABLES: dict[str, tuple[Column, ...]] = {
    "offers": _cols(
        "provider:text! offer_key:text! gpu_id:text! gpu_family:text! raw_gpu_name:text! gpu_count:decimal! "
        "gpu_memory_gb:decimal form_factor:text! pricing:text! reserved_term:text region:text! instance_type:text "
        "available:bool vcpus:decimal ram_gb:decimal attributes:json! demo:bool! first_seen:instant! "
        "last_seen:instant! delisted_at:instant price_per_hour:decimal! price_per_gpu_hour:decimal! currency:text! "
        "price_native_per_hour:decimal price_native_per_gpu_hour:decimal fx_rate:decimal fx_date:date fx_source:text "
        "price_kind:text orderable:bool"
    ),
    "runs": _cols(
        "provider:text! run_id:int! source:text! source_version:text status:text! started_at:instant! "
        "finished_at:instant observed_at:instant attempt:int! offers_seen:int! offers_valid:int! offers_new:int! "
        "price_rows:int! fx_rows:int! offers_closed:int! offers_reopened:int! unknown_names:int! "
        "invalid_offers:int! parser_version:text! error:text"
    ),
    "prices": _cols(
        "provider:text! offer_key:text! gpu_id:text! pricing:text! valid_from:instant! valid_to:instant "
        "price_per_hour:decimal! price_per_gpu_hour:decimal! change_kind:text! currency:text! "
        "price_native_per_hour:decimal price_native_per_gpu_hour:decimal fx_rate:decimal fx_date:date "
        "fx_source:text run_id:int price_kind:text orderable:bool"
    ),
    "availability": _cols(
        "provider:text! offer_key:text! available:bool valid_from:instant! valid_to:instant run_id:int"
    ),
}
# Tables written one file per UTC day, and the column that places a row in its day.
DAILY = {"runs": "started_at", "prices": "valid_from", "availability": "valid_from"}


def encode(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value == value.to_integral_value() else format(value, "f")
    if isinstance(value, date | int):
        return value.isoformat() if isinstance(value, date) else str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return str(value)


def decode(column: Column, text: str | None) -> Any:
    """One value back to its Python type; raises DatasetError naming the column."""
    if text is None or (text == "" and column.nullable and column.kind != "text"):
        if not column.nullable:
            raise DatasetError(f"column {column.name} is null but never may be")
        return None
    try:
        match column.kind:
            case "decimal":
                return Decimal(text)
            case "instant":
                at = datetime.fromisoformat(text)
                if at.tzinfo is None:
                    raise ValueError("no UTC offset")
                return at.astimezone(UTC)
            case "date":
                return date.fromisoformat(text)
            case "bool":
                return {"true": True, "false": False}[text]
            case "int":
                return int(text)
            case "json":
                return json.loads(text)
    except (ValueError, KeyError, ArithmeticError) as exc:
        raise DatasetError(f"column {column.name}: {text[:60]!r} is not a valid {column.kind} ({exc})") from None
    return text if text != "" or not column.nullable else None


def encode_file(table: str, rows: Iterable[dict[str, Any]], fmt: str) -> bytes:
    """One file's bytes in `fmt`, columns in schema order."""
    names = [c.name for c in TABLES[table]]
    encoded = [[encode(row.get(n)) for n in names] for row in rows]
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(names)
        writer.writerows(["" if v is None else v for v in r] for r in encoded)
        return out.getvalue().encode("utf-8")
    if fmt == "jsonl":
        return "".join(
            json.dumps(dict(zip(names, r, strict=True)), ensure_ascii=False) + "\n" for r in encoded
        ).encode()
    if fmt == "parquet":
        pa, pq = _pyarrow()
        columns = {n: pa.array([r[i] for r in encoded], type=pa.string()) for i, n in enumerate(names)}
        sink = io.BytesIO()
        pq.write_table(pa.table(columns), sink)
        return sink.getvalue()
    raise DatasetError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")


def decode_file(table: str, data: bytes, fmt: str, where: str) -> Iterator[dict[str, Any]]:
    """The rows of one file, typed; DatasetError names the file, row and column of the first bad value."""
    columns = TABLES[table]
    for n, raw in enumerate(_raw_rows(data, fmt, where), start=1):
        missing = [c.name for c in columns if c.name not in raw and not c.nullable]
        if missing:
            raise DatasetError(f"{where} row {n}: missing column {missing[0]}")
        try:
            yield {c.name: decode(c, raw.get(c.name)) for c in columns}
        except DatasetError as exc:
            raise DatasetError(f"{where} row {n}: {exc}") from None


def _raw_rows(data: bytes, fmt: str, where: str) -> Iterator[dict[str, str | None]]:
    try:
        if fmt == "csv":
            yield from csv.DictReader(io.StringIO(data.decode("utf-8")))
        elif fmt == "jsonl":
            for line in data.decode("utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    if not isinstance(row, dict):
                        raise ValueError("a line is not a JSON object")
                    yield {k: v if v is None else str(v) for k, v in row.items()}
        elif fmt == "parquet":
            _, pq = _pyarrow()
            yield from pq.read_table(io.BytesIO(data)).to_pylist()
        else:
            raise DatasetError(f"{where}: unknown format {fmt!r}")
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, OSError) as exc:
        if isinstance(exc, DatasetError):
            raise
        raise DatasetError(f"{where}: not readable as {fmt} ({exc})") from None


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # the optional extra: pip install 'gpu-price-tracker[dataset]'
        raise DatasetError("Parquet needs pyarrow: pip install 'gpu-price-tracker[dataset]'") from None
    return pa, pq


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_name(table: str, fmt: str, day: date | None = None) -> str:
    return f"{table}/{day.isoformat()}.{fmt}" if day is not None else f"{table}.{fmt}"


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST
    try:
        manifest = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{directory}: no {MANIFEST} (not an export directory)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{path}: not readable ({exc})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), list):
        raise DatasetError(f"{path}: no file list")
    if manifest.get("schema_version") != SCHEMA_VERSION:
        raise DatasetError(
            f"{path}: schema version {manifest.get('schema_version')!r}, this tracker reads {SCHEMA_VERSION}"
        )
    if manifest.get("format") not in FORMATS:
        raise DatasetError(f"{path}: unknown format {manifest.get('format')!r}")
    return manifest
