"""Serverless APIs beside self-hosting, as `cheapest --kind inference` and `plan` print them."""

from __future__ import annotations

from typing import Any

from tracker.cli.output import console, show_table


def _volume(be: dict[str, Any] | None) -> str:
    if be is None:
        return "-"
    volume = be["break_even_tokens_per_month"]
    return "never" if volume is None else f"{volume / 1e9:,.2f}B ({be['break_even_utilisation']:.0%})"


def print_api_alternatives(alt: dict[str, Any] | None) -> None:
    """The model's API prices for this job's shape and, per API, the monthly output volume from which
    renting the cheapest-per-token offer wins (with the machine's utilisation there, and the band)."""
    if not alt or not alt["apis"]:
        return
    from rich.table import Table

    own = alt["self_hosted"]
    sheet = alt["sheet"]
    stale = " [red](stale)[/]" if sheet["stale"] else ""
    # Printed above the table, not as its title: rich wraps a title to the table's own width (~40 columns
    # once the optional columns are hidden), which broke it into four centred fragments.
    console.print(f"[bold]serverless APIs[/] for {alt['model']} (prices read {sheet['read_on']}{stale})")
    if own:
        console.print(
            f"vs {own['gpus']:g}× {own['gpu']} at {own['provider']}, ${own['price_per_hour']:.2f}/h = "
            f"${own['machine_usd_per_month']:,.0f}/month,\n${own['usd_per_mtok']:.4f}/Mtok at full load"
        )
    table = Table()
    for col in ("api", "model", "$/Mtok in", "$/Mtok out", "$/Mtok job", "renting wins from", "band (slow-fast)"):
        table.add_column(col, justify="left" if col in ("api", "model") else "right")
    for api in alt["apis"]:
        band = api.get("break_even_band") or {}
        table.add_row(
            api["provider"] + ("" if api["source"] == "provider" else " *"),
            api["api_model"],
            f"{api['input_usd_per_mtok']:.3f}",
            f"{api['output_usd_per_mtok']:.3f}",
            f"{api['usd_per_mtok']:.4f}",
            _volume(api["break_even"]),
            f"{_volume(band.get('low'))} – {_volume(band.get('high'))}",
        )
    show_table(
        table,
        drop=("band (slow-fast)", "$/Mtok in", "$/Mtok out", "model"),
        wrap=("model", "api"),
        more="--json shows every field",
    )
    console.print(
        "$/Mtok job: per generated token, with its share of the prompt;\nrenting wins from: output"
        " tokens a month (machine utilisation there);\n* a third party's listing of the provider's rates."
    )


def print_plan_apis(result: dict[str, Any]) -> None:
    """One line per placed serving workload: its month through the cheapest API against self-hosting."""
    for w in result["workloads"]:
        alt = w.get("api_alternatives")
        if not alt or alt["cheapest_api"] is None:
            continue
        api, own = alt["cheapest_api"], w["choice"]["monthly_cost"]
        be = api["break_even"] or {}
        volume = be.get("break_even_tokens_per_month")
        wins = "never (the API is cheaper per token at full load)" if volume is None else f"{volume / 1e9:,.2f}B/month"
        console.print(
            f"  {w['name']}: self-hosted ${own:,.0f}/month vs {api['provider']} {api['api_model']} "
            f"${api['monthly_cost']:,.0f}/month at ${api['usd_per_mtok']:.3f}/Mtok → {alt['cheaper']} is "
            f"cheaper; one node beats that API from {wins}"
        )
