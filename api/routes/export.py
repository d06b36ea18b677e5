"""GET /v1/export: the open dataset (tracker.history.export) as one streamed, uncompressed tar archive.

The archive holds exactly the files `gpu-tracker export` writes (one per table per UTC day, the offers
file, then manifest.json with every file's SHA-256), so `tar -x` of the answer is an export directory
that `gpu-tracker import export DIR` reads. Built file by file while it is sent: never whole in memory.
Whose rows it holds follows each source's terms under `TRACKER_REPUBLISH` (tracker.market.data_terms).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse

from api.validation import FieldError, aware_in_range
from tracker.clock import utcnow
from tracker.history.export import stream_tar
from tracker.storage.engine import session_scope

router = APIRouter(prefix="/v1", tags=["export"])


TAR: dict[int | str, dict[str, Any]] = {
    200: {"description": "The dataset as an uncompressed tar archive", "content": {"application/x-tar": {}}}
}


@router.get("/export", response_model=None, response_class=StreamingResponse, responses=TAR)
def get_export(
    request: Request,
    since: Annotated[datetime | None, Query(description="Only history valid at or after this instant")] = None,
    until: Annotated[datetime | None, Query(description="Only history before this instant")] = None,
    format: Annotated[Literal["csv", "jsonl", "parquet"], Query(description="File format inside the tar")] = "csv",
) -> StreamingResponse:
    """Price and availability history with its offers and runs, one file per UTC day, and a manifest."""
    lo = aware_in_range(since, "since") if since else None
    hi = aware_in_range(until, "until") if until else None
    if lo is not None and hi is not None and lo >= hi:
        raise FieldError("since must be before until", "since")
    if format == "parquet":
        try:
            import pyarrow  # noqa: F401  (the optional extra)
        except ImportError:
            raise FieldError("parquet needs the optional pyarrow extra: ask for csv or jsonl", "format") from None
    engine, settings, now = request.app.state.engine, request.app.state.settings, utcnow()

    def body() -> Iterator[bytes]:
        with session_scope(engine) as session:
            yield from stream_tar(session, fmt=format, generated_at=now, since=lo, until=hi, settings=settings)

    name = f"gpu-tracker-export-{now:%Y%m%dT%H%M%SZ}.tar"
    return StreamingResponse(
        body(), media_type="application/x-tar", headers={"content-disposition": f'attachment; filename="{name}"'}
    )
