"""Property-based testing of /v1/alerts *with* the token (the app-wide schemathesis run has none, so it only
sees 401s here): no generated request may cause a server error or a response that breaks the schema."""

from __future__ import annotations

import tempfile
from pathlib import Path

import schemathesis
from hypothesis import HealthCheck, settings
from pydantic import SecretStr
from schemathesis.checks import positive_data_acceptance

from api.app import create_app
from tracker.config import Settings
from tracker.storage import migrations as migrate
from tracker.storage.engine import make_engine

TOKEN = "fuzz-token"


def _app():  # type: ignore[no-untyped-def]
    # Built at collection time (schemathesis parametrizes from the schema) on a throwaway SQLite file.
    path = Path(tempfile.mkdtemp(prefix="tracker-alerts-st-")) / "tracker.db"
    cfg = Settings(data_dir=path.parent, database_url=f"sqlite:///{path}", api_token=SecretStr(TOKEN), webhook_allow="")
    engine = make_engine(cfg.resolved_database_url())
    migrate.upgrade(engine)
    app = create_app(cfg, engine)
    return app


schema = schemathesis.openapi.from_asgi("/openapi.json", _app()).include(path_regex="^/v1/alerts")


@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_alert_endpoints_never_fail_on_generated_input(case):
    # A schema-valid body can still be refused with 422 (unknown card, thresholds on the wrong side).
    case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"}, excluded_checks=[positive_data_acceptance])
