"""`gpu-tracker worker`: the scheduler process (scrapes on each provider's cadence, evaluates and delivers alerts)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path
from types import FrameType

import typer
from pydantic import ValidationError
from rich.table import Table

from providers.registry import UnknownProvider
from tracker.cli.context import runtime
from tracker.cli.output import console, emit_json, fail
from tracker.pipeline.worker import SlotStatus, Worker, blocking_scheduler, interval_for

STYLE = {SlotStatus.ok: "green", SlotStatus.failed: "red", SlotStatus.timeout: "red", SlotStatus.quarantined: "yellow"}
FAILED = frozenset({SlotStatus.failed, SlotStatus.timeout})  # what makes `--once` exit 1


commands = typer.Typer(add_completion=False)  # listed in tracker.cli.root.COMMANDS


@commands.command("worker")
def worker_cmd(
    ctx: typer.Context,
    providers: list[str] = typer.Argument(None, help="Only these providers (default: all)."),
    once: bool = typer.Option(False, "--once", help="One cycle of every due provider, then exit."),
    replay_dir: Path | None = typer.Option(
        None, "--replay-dir", help="Replay <provider>.json cassettes from this directory (offline)."
    ),
    demo: bool = typer.Option(False, "--demo", help="Replay every provider's bundled cassette (offline)."),
    json_out: bool = typer.Option(False, "--json", help="With --once: the cycle's report as JSON."),
) -> None:
    """Run providers on their schedules and deliver alerts. `--once` exits 1 if a provider failed."""
    if replay_dir and demo:
        fail("--replay-dir and --demo are exclusive")
    if replay_dir and not replay_dir.is_dir():
        fail(f"--replay-dir {replay_dir} is not a directory")
    try:
        rt = runtime(ctx)
    except ValidationError as exc:
        fail(f"bad worker configuration: {exc.errors()[0]['msg']}")
    settings = rt.settings
    source = "replay" if replay_dir else ("demo" if demo else "live")
    try:
        worker = Worker(rt.engine, settings, source=source, replay_dir=replay_dir, providers=providers or None)
    except (UnknownProvider, ValueError) as exc:
        fail(str(exc))
    if not worker.providers:
        reasons = "; ".join(f"{n}: {why}" for n, why in worker.unscheduled.items())
        fail(f"no provider to run ({reasons})" if reasons else "no provider to run")

    if once:
        report = worker.run_once()
        if json_out:
            emit_json(report.as_dict())
        else:
            _print_cycle(report.as_dict())
        if any(r.status in FAILED for r in report.runs):
            raise typer.Exit(1)
        return

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    scheduler = blocking_scheduler(settings)
    worker.schedule(scheduler)

    def _stop(signum: int, _frame: FrameType | None) -> None:
        # Docker sends SIGTERM: leave the loop cleanly; running scrapes end with their transactions.
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    for name, cls in worker.providers.items():
        console.print(f"  {name}: every {interval_for(cls, settings)} ({source})")
    for name, why in worker.unscheduled.items():
        console.print(f"  [dim]{name}: not scheduled ({why})[/]")
    console.print(
        f"worker started: {len(worker.providers)} providers, alert sweep every "
        f"{settings.alert_sweep_s}s, delivery every {settings.alert_deliver_s}s"
    )
    try:
        scheduler.start()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        if scheduler.running:
            scheduler.shutdown(wait=False)


def _print_cycle(report: dict) -> None:  # type: ignore[type-arg]
    table = Table(title="worker cycle")
    for col in ("provider", "slot", "status", "offers", "price rows", "note"):
        table.add_column(col)
    for r in report["runs"]:
        table.add_row(
            r["provider"],
            r["slot"].strftime("%Y-%m-%d %H:%M"),
            f"[{STYLE.get(r['status'], '')}]{r['status']}[/]",
            str(r.get("offers_valid", "")),
            str(r.get("price_rows", "")),
            (r["error"] or "")[:60],
        )
    console.print(table)
    alerts = report["alerts"]
    deliveries = report["deliveries"] or "none"
    console.print(
        f"alerts: {alerts['evaluated']} rules evaluated, {len(alerts['transitions'])} transitions, "
        f"{alerts['notifications_queued']} notifications queued; deliveries: {deliveries}"
    )
