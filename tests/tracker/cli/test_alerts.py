"""`gpu-tracker alerts add|list|show|rm|test|silence` on both backends; bad input is a message and exit 2."""

from __future__ import annotations

import json

import pytest

import tracker.cli  # noqa: F401  (registers every command)
from tests.factories.alerts import Receiver, ingest_prices, offer
from tracker.clock import utcnow
from tracker.config import get_settings


@pytest.fixture
def cli(cli, monkeypatch):
    """The shared CLI fixture, with the local webhook receiver allowed past the SSRF guard."""
    monkeypatch.setenv("TRACKER_WEBHOOK_ALLOW", "127.0.0.1/32")
    get_settings.cache_clear()
    return cli


@pytest.fixture
def receiver():
    r = Receiver().start()
    yield r
    r.stop()


def test_add_list_show_test_silence_rm(cli, receiver):
    added = cli(
        "alerts",
        "add",
        "--gpu",
        "H100 SXM",
        "--below",
        "2.00",
        "--recovery",
        "2.20",
        "--for",
        "15m",
        "--repeat",
        "4h",
        "--webhook",
        receiver.url,
        "--json",
    )
    assert added.exit_code == 0, added.output
    rule = json.loads(added.stdout)
    assert (rule["gpu_ids"], rule["for_s"], rule["repeat_s"], rule["recovery_threshold"]) == (
        ["H100-SXM-80GB"],
        900,
        14400,
        2.2,
    )
    assert rule["channels"][0]["secret"].startswith("whsec_")

    listed = json.loads(cli("alerts", "list", "--json").stdout)
    assert [r["id"] for r in listed] == [rule["id"]] and listed[0]["channels"][0]["secret"].startswith("whsec_…")
    assert "inactive" in cli("alerts", "list").stdout

    sent = cli("alerts", "test", str(rule["id"]))
    assert sent.exit_code == 0, sent.output
    assert receiver.kinds() == ["test"]
    shown = json.loads(cli("alerts", "show", str(rule["id"]), "--json").stdout)
    (note,) = shown["notifications"]
    assert (note["kind"], note["status"], note["history"][0]["status_code"]) == ("test", "delivered", 200)
    assert cli("alerts", "show", str(rule["id"])).exit_code == 0

    silenced = cli("alerts", "silence", str(rule["id"]), "--for", "2h")
    assert silenced.exit_code == 0 and "silenced until" in silenced.stdout
    assert json.loads(cli("alerts", "show", str(rule["id"]), "--json").stdout)["silenced_until"] is not None
    assert cli("alerts", "silence", str(rule["id"]), "--off").exit_code == 0
    for too_long in ("100000000d", "999999999999"):  # past year 9999, and past the 2100 bound
        refused = cli("alerts", "silence", str(rule["id"]), "--for", too_long)
        assert refused.exit_code == 2 and "Traceback" not in refused.output, refused.output

    assert cli("alerts", "rm", str(rule["id"])).exit_code == 0
    assert json.loads(cli("alerts", "list", "--json").stdout) == []
    gone = cli("alerts", "show", str(rule["id"]))
    assert gone.exit_code == 2 and "no alert rule" in gone.output


def test_test_exits_1_when_the_receiver_is_down(cli, receiver):
    rule = json.loads(
        cli("alerts", "add", "--gpu", "H100-SXM-80GB", "--below", "2", "--webhook", receiver.url, "--json").stdout
    )
    receiver.stop()
    result = cli("alerts", "test", str(rule["id"]))
    assert result.exit_code == 1 and "failed" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpu", "H100-SXM-80GB"], "exactly one of --below or --above"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--above", "3"], "exactly one of --below or --above"),
        (["--gpu", "Frobnicator 9000", "--below", "2"], "gpu:"),
        (["--gpu", "H100-SXM-80GB", "--below", "two"], "--below/--above:"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--recovery", "1"], "--recovery:"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--for", "soon"], "for:"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--webhook", "http://10.0.0.1/x"], "--webhook/--apprise:"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--webhook", "http://169.254.169.254/"], "non-public"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--apprise", "syslog://"], "--webhook/--apprise:"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--webhook-secret", "whsec_x"], "needs --webhook"),
        (["--gpu", "H100-SXM-80GB", "--below", "2", "--metric", "cost_per_run", "--job", "{nope"], "not JSON"),
    ],
)
def test_add_bad_input(cli, args, message):
    result = cli("alerts", "add", *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_add_refuses_a_rule_that_would_fire_now(cli, engine, settings):
    ingest_prices(engine, settings, utcnow(), offer("a", "1.70"))
    refused = cli("alerts", "add", "--gpu", "H100-SXM-80GB", "--below", "2")
    assert refused.exit_code == 2 and "would fire at once" in refused.output
    accepted = cli("alerts", "add", "--gpu", "H100-SXM-80GB", "--below", "2", "--allow-firing-now", "--json")
    assert accepted.exit_code == 0 and json.loads(accepted.stdout)["allow_immediate"] is True


def test_unknown_rule_ids_are_clear_errors(cli):
    for args in (["show", "42"], ["rm", "42"], ["test", "42"], ["silence", "42", "--for", "1h"]):
        result = cli("alerts", *args)
        assert result.exit_code == 2 and "no alert rule 42" in result.output, args
