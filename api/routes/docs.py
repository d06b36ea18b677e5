"""`/docs`, the interactive API reference, served from vendored assets so that it works offline.

FastAPI's built-in page loads Swagger UI from a CDN: on a machine without internet access (the tracker's
embedded default runs on laptops and air-gapped hosts) it is a blank page. Swagger UI 5 is vendored under
api/static/vendor/swagger-ui (see its VERSION.md) and served by the dashboard's static route. ReDoc is
not offered: it would need a second vendored bundle for the same document.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse

ASSETS = "/static/vendor/swagger-ui"

router = APIRouter(include_in_schema=False)


@router.get("/docs", include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    return get_swagger_ui_html(
        openapi_url=request.app.openapi_url or "/openapi.json",
        title=f"{request.app.title} — API",
        swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
        swagger_css_url=f"{ASSETS}/swagger-ui.css",
        swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
    )
