"""The web dashboard: `/` and its static assets, all served by the app itself (no CDN, works offline).

Plain HTML, CSS and JavaScript modules under api/static (uPlot vendored under api/static/vendor), no
build step. The page reads the same public JSON API as everyone else. Its Content-Security-Policy
allows only this origin, so a stray external asset fails loudly in the browser instead of silently
needing the internet.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response
from starlette.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HTML_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-cache",
}

router = APIRouter(include_in_schema=False)
# StaticFiles does the path-traversal checks and conditional requests (ETag → 304); it is called from a
# plain route rather than mounted, because route modules are included, not mounted, by create_app.
_files = StaticFiles(directory=STATIC_DIR)


@router.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
def dashboard() -> FileResponse:
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html", headers=HTML_HEADERS)


@router.api_route("/static/{path:path}", methods=["GET", "HEAD"], include_in_schema=False)
async def static_file(path: str, request: Request) -> Response:
    response = await _files.get_response(path, request.scope)
    # Revalidate on every load: a new release's JavaScript must never run against an old page.
    response.headers.setdefault("cache-control", "no-cache")
    response.headers["x-content-type-options"] = "nosniff"
    return response
