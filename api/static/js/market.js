// Market view: one tile per card, one row per pricing type (and reservation term: never blended), with 7d/30d
// change and a sparkline. Rate sheets past their age limit are named on the rows they count in and in the
// summary; resold offers (via an aggregator) can be counted, left out, or counted once per machine.
import { getJSON } from "./api.js";
import { markDemo } from "./banner.js";
import { sparkLegend, sparkline } from "./charts.js";
import { badge, clear, el, showError } from "./dom.js";
import { PRICING, PRICING_LABEL, age, count, deltaClass, pct, usd } from "./format.js";

const section = document.getElementById("view-market");
const tiles = document.getElementById("market-cards");
const filter = document.getElementById("market-filter");
const reference = document.getElementById("market-reference");
const pricingBox = document.getElementById("market-pricing");
// Built here rather than in index.html: the toolbar gains it without the page changing shape.
const aggregatedBox = el("select", { id: "market-aggregated", "aria-label": "Resold offers" },
  el("option", { value: "include" }, "Resold offers: all"),
  el("option", { value: "dedupe" }, "Resold offers: each machine once"),
  el("option", { value: "exclude" }, "Resold offers: none"));
let overview = null;
let started = false;

function init() {
  for (const p of PRICING) {
    pricingBox.append(el("label", { class: "check" },
      el("input", { type: "checkbox", value: p, checked: true, onchange: render }), PRICING_LABEL[p]));
  }
  filter.addEventListener("input", render);
  reference.addEventListener("change", load);
  reference.closest("label").after(aggregatedBox);
  aggregatedBox.addEventListener("change", load);
}

export async function show() {
  if (!started) {
    started = true;
    init();
  }
  await load();
}

async function load() {
  section.dataset.state = "loading";
  try {
    overview = await getJSON("/v1/market/overview",
      { include_reference: reference.checked, aggregated: aggregatedBox.value });
    showError(document.getElementById("market-error"), null);
    render();
  } catch (error) {
    showError(document.getElementById("market-error"), error);
    section.dataset.state = "error";
  }
}

function plural(n, word) {
  return `${count(n)} ${word}${Number(n) === 1 ? "" : "s"}`;
}

function delta(label, change, pctValue, then) {
  return el("span", {
    class: `delta ${deltaClass(pctValue)}`,
    title: then == null ? `no offers ${label} ago` : `median ${label} ago: ${usd(then)}`,
  }, `${label} ${then == null ? "—" : pct(pctValue)}`);
}

function staleNote(names) {
  const ages = new Map((overview.sheets || []).map((a) => [a.provider, a]));
  return names.map((n) => (ages.has(n) ? `${n} (read ${ages.get(n).as_of}, ${ages.get(n).age_days} days ago)` : n))
    .join(", ");
}

function pricingRow(c) {
  const stale = c.stale_sheets || [];
  return el("div", { class: "prow", dataset: { pricing: c.pricing } },
    el("div", { class: "kind" }, PRICING_LABEL[c.pricing] || c.pricing,
      c.reserved_term ? ` ${c.reserved_term}` : null,
      c.reference_only ? badge("ref", "reference", "only static reference sheets list this card") : null,
      stale.length ? badge("ref stale", "stale sheet", `counts prices read long ago: ${staleNote(stale)}`) : null,
      c.demo ? badge("demo", "demo", "includes replayed demo data") : null),
    el("div", { class: "price" },
      // The offer count beside the median: a median of one offer (a reserved term only AWS lists) is one price.
      el("strong", { title: `max ${usd(c.max)}` }, usd(c.median)),
      el("span", { class: "note" }, Number(c.offers) === 1 ? " from 1 offer" : ` median of ${count(c.offers)}`),
      el("div", { class: "sub" }, el("span", {}, `min ${usd(c.min)}`), " · ",
        el("span", { title: "interquartile range" }, `p25–p75 ${usd(c.p25)}–${usd(c.p75)}`))),
    el("div", { class: "stats" },
      el("span", {}, `${plural(c.offers, "offer")} · ${plural(c.providers, "provider")}`),
      c.aggregated_offers ? el("span", { title: "offers reaching us through an aggregator (Prime Intellect, Shadeform, …)" },
        ` (${count(c.aggregated_offers)} resold)`) : null, " · ",
      delta("7d", c.change_7d, c.change_7d_pct, c.median_7d_ago), " · ",
      delta("30d", c.change_30d, c.change_30d_pct, c.median_30d_ago),
      el("span", { class: "age" }, ` · ${age(c.age_s)}`)),
    sparkline(c.sparkline || []));
}

let legendNode = null;
function legend() {
  legendNode = legendNode || sparkLegend();
  return legendNode;
}

function render() {
  if (!overview) return;
  const wanted = new Set([...pricingBox.querySelectorAll("input:checked")].map((i) => i.value));
  const needle = filter.value.trim().toLowerCase();
  const cards = new Map();
  for (const c of overview.cards) {
    if (!wanted.has(c.pricing)) continue;
    const text = `${c.gpu} ${c.name} ${c.gpu_family} ${c.form_factor} ${c.memory_gb}gb`.toLowerCase();
    if (needle && !needle.split(/\s+/).every((w) => text.includes(w))) continue;
    if (!cards.has(c.gpu)) cards.set(c.gpu, []);
    cards.get(c.gpu).push(c);
  }
  // Most-offered cards first: they are the ones people compare.
  const ordered = [...cards.entries()].sort((a, b) =>
    b[1].reduce((n, c) => n + c.offers, 0) - a[1].reduce((n, c) => n + c.offers, 0) || a[0].localeCompare(b[0]));
  clear(tiles);
  if (ordered.length) tiles.before(legend());
  for (const [gpu, rows] of ordered) {
    rows.sort((a, b) => PRICING.indexOf(a.pricing) - PRICING.indexOf(b.pricing)
      || (a.reserved_term || "").localeCompare(b.reserved_term || ""));
    const first = rows[0];
    const refOnly = rows.every((r) => r.reference_only);
    const open = () => { location.hash = `#history/${encodeURIComponent(gpu)}`; };
    tiles.append(el("article", {
      class: `tile${refOnly ? " reference" : ""}`, tabindex: 0, dataset: { gpu },
      title: `Price history of ${first.name}`, onclick: open,
      onkeydown: (e) => { if (e.key === "Enter") open(); },
    },
    el("div", { class: "tile-head" },
      el("h3", {}, first.name),
      el("span", { class: "meta" }, `${first.gpu_family} · ${first.form_factor} · ${first.memory_gb} GB`,
        refOnly ? [" ", badge("ref", "reference only")] : null)),
    rows.map(pricingRow)));
  }
  const all = overview.cards;
  const offers = all.reduce((n, c) => n + c.offers, 0);
  const staleSheets = (overview.sheets || []).filter((a) => a.stale).map((a) => a.provider);
  document.getElementById("market-summary").textContent =
    `${cards.size} of ${new Set(all.map((c) => c.gpu)).size} cards · ${count(offers)} live offers · as of ${new Date(overview.as_of).toUTCString()}`
    + (staleSheets.length ? ` · stale reference sheets: ${staleNote(staleSheets)}` : "");
  if (cards.size === 0) tiles.append(el("p", { class: "note" }, all.length ? "No card matches the filter." : "No live prices yet: run a scrape (or `gpu-tracker up --demo`)."));
  markDemo("market", all.some((c) => c.demo));
  section.dataset.state = cards.size ? "ready" : "empty";
}
