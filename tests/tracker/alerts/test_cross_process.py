"""Alert delivery across processes: the rule is added in one process (a shell with TRACKER_WEBHOOK_ALLOW),
delivered by another (a worker without it). The channel keeps the allow-list networks it was accepted
under, so the delivering process needs no copy of the creator's environment; a delivery that fails anyway
is logged with its reason and listed by `alerts show`."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import update

from tests.factories.alerts import Receiver
from tests.factories.clock import FakeClock
from tests.factories.offers import batch, do_ingest, offer
from tracker.alerts.deliver import Deliverer, send_test
from tracker.clock import utcnow
from tracker.config import Settings, get_settings
from tracker.market.live import LIVE
from tracker.storage.alert_tables import AlertChannel
from tracker.storage.engine import session_scope


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture
def rule_id(cli, engine, settings, receiver, monkeypatch):
    """A rule with a webhook to 127.0.0.1, added from a shell that allows it."""
    LIVE.clear()
    do_ingest(engine, settings, FakeClock(utcnow()), batch(offer("h100", "2.50", gpu="H100 SXM5 80GB")))
    monkeypatch.setenv("TRACKER_WEBHOOK_ALLOW", "10.0.0.0/8,127.0.0.0/8")
    get_settings.cache_clear()
    added = cli("alerts", "add", "--gpu", "H100", "--below", "1", "--webhook", receiver.url, "--json")
    assert added.exit_code == 0, added.output
    monkeypatch.delenv("TRACKER_WEBHOOK_ALLOW")  # the worker's environment: no allow-list at all
    get_settings.cache_clear()
    yield json.loads(added.stdout)["id"]
    LIVE.clear()


def _worker_settings(settings: Settings) -> Settings:
    plain = settings.model_copy(update={"webhook_allow": ""})
    assert plain.allowed_networks == ()
    return plain


def test_a_worker_without_the_setting_delivers_a_rule_added_with_it(engine, settings, receiver, rule_id):
    with session_scope(engine) as session:
        (channel,) = session.query(AlertChannel).filter_by(rule_id=rule_id).all()
        assert channel.allow_networks == "127.0.0.0/8"  # only the network the URL needed, not the whole list
    (result,) = send_test(engine, rule_id, Deliverer(engine, _worker_settings(settings)))
    assert result["status"] == "delivered", result
    assert len(receiver.requests) == 1


def test_a_failed_delivery_is_logged_and_shown(cli, engine, settings, receiver, rule_id, caplog):
    with session_scope(engine) as session:  # a channel accepted under no stored list (made before 0010)
        session.execute(update(AlertChannel).where(AlertChannel.rule_id == rule_id).values(allow_networks=None))
    with caplog.at_level(logging.WARNING, logger="tracker.alerts.deliver"):
        (result,) = send_test(engine, rule_id, Deliverer(engine, _worker_settings(settings)))
    assert result["status"] == "failed" and "TRACKER_WEBHOOK_ALLOW" in result["error"]
    assert receiver.hits == 0
    logged = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert logged and "TRACKER_WEBHOOK_ALLOW" in logged[0], caplog.text
    shown = cli("alerts", "show", str(rule_id))
    assert shown.exit_code == 0, shown.output
    text = " ".join(shown.output.split())
    assert "attempt 1" in text and "TRACKER_WEBHOOK_ALLOW" in text


@pytest.mark.parametrize("engine", ["sqlite"], indirect=True)
def test_another_process_delivers_it(engine, receiver, rule_id):
    """`alerts test` in a child process whose environment has no allow-list."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")}
    exe = Path(sys.executable).with_name("gpu-tracker")
    url = engine.url.render_as_string(hide_password=False)
    done = subprocess.run(
        [str(exe), "--database-url", url, "alerts", "test", str(rule_id), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["status"] for r in json.loads(done.stdout)] == ["delivered"]
    assert len(receiver.requests) == 1


def test_alerts_list_shows_each_rules_filters(cli, rule_id, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    listed = cli("alerts", "list")
    assert listed.exit_code == 0, listed.output
    text = " ".join(listed.output.split())
    assert "--gpu H100" in text and "--pricing on_demand" in text
