"""The dashboard's page and assets without a browser: served by the app, all local, nothing from a CDN."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.routes.dashboard import STATIC_DIR
from tracker.config import Settings


class _Assets(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0
        self.style_attrs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            if a.get("src"):
                self.urls.append(a["src"] or "")
            else:
                self.inline_scripts += 1
        if tag == "link" and a.get("href"):
            self.urls.append(a["href"] or "")
        if "style" in a:
            self.style_attrs += 1


@pytest.fixture
def client(sqlite_engine, tmp_path):
    # Static serving does not touch the database: one backend is enough.
    settings = Settings(data_dir=tmp_path, database_url=sqlite_engine.url.render_as_string(hide_password=False))
    return TestClient(create_app(settings, sqlite_engine))


def test_page_and_every_asset_it_loads_are_served_locally(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "http" not in csp
    parser = _Assets()
    parser.feed(page.text)
    # The CSP forbids inline script and style attributes; the page must not need them.
    assert parser.inline_scripts == 0 and parser.style_attrs == 0
    assert {
        "/static/js/main.js",
        "/static/vendor/uplot/uPlot.iife.min.js",
        "/static/vendor/uplot/uPlot.min.css",
        "/static/dashboard.css",
    } <= set(parser.urls)
    for url in parser.urls:
        assert url.startswith("/static/"), f"{url} is not served by the app"
        assert client.get(url).status_code == 200, url


def _module_imports(path: Path) -> list[str]:
    return re.findall(r"""^\s*import\s.*?from\s+["']([^"']+)["']""", path.read_text(), flags=re.M)


def test_javascript_modules_import_only_local_files(client):
    scripts = sorted((STATIC_DIR / "js").glob("*.js"))
    assert {p.name for p in scripts} >= {"main.js", "market.js", "history.js", "job.js", "health.js"}
    for script in scripts:
        for target in _module_imports(script):
            assert target.startswith("./"), f"{script.name} imports {target}"
            assert (script.parent / target).is_file(), f"{script.name} imports missing {target}"
        text = script.read_text()
        # No network access but the app's own API.
        assert not re.search(r"fetch\(\s*[\"'`]https?:", text), script.name
        response = client.get(f"/static/js/{script.name}")
        assert response.headers["content-type"].split(";")[0] in {"text/javascript", "application/javascript"}
    css = (STATIC_DIR / "dashboard.css").read_text()
    assert "@import" not in css and not re.search(r"url\(\s*['\"]?https?:", css)


def test_vendored_uplot_has_its_license_and_recorded_version():
    vendor = STATIC_DIR / "vendor" / "uplot"
    assert "MIT License" in (vendor / "LICENSE").read_text()
    version = re.search(r"uPlot \(v(\d+\.\d+\.\d+)\)", (vendor / "uPlot.iife.min.js").read_text()[:200])
    assert version, "uPlot banner missing"
    assert f"Version: {version.group(1)}" in (vendor / "VERSION.md").read_text()
    assert f"uPlot {version.group(1)}" in (STATIC_DIR / "index.html").read_text()


# Each names a file that exists outside api/static (but nope.js).
@pytest.mark.parametrize(
    "path",
    [
        "/static/%2e%2e/routes/dashboard.py",
        "/static/%2e%2e/app.py",
        "/static/nope.js",
        "/static/..%2f..%2fpyproject.toml",
        "/static/%2fetc%2fpasswd",
    ],
)
def test_static_route_serves_nothing_outside_its_folder(client, path):
    assert client.get(path).status_code == 404


def test_assets_revalidate_cheaply(client):
    first = client.get("/static/js/main.js")
    assert first.headers["cache-control"] == "no-cache" and first.headers["etag"]
    again = client.get("/static/js/main.js", headers={"if-none-match": first.headers["etag"]})
    assert again.status_code == 304


def test_dashboard_is_not_in_the_api_schema(client):
    paths = client.get("/openapi.json").json()["paths"]
    assert "/" not in paths and not any(p.startswith("/static") for p in paths) and "/metrics" not in paths
    assert "/v1/market/overview" in paths
