// History view: per card, median line with a p25–p75 band and the minimum, per pricing type, over a range.
import { getJSON, query } from "./api.js";
import { markDemo } from "./banner.js";
import {
  destroyChart, emptyChart, frameScale, markStart, mountChart, pointsFor, shadeSpans, timeFrame, timeValue, usdTicks, usdValue,
} from "./charts.js";
import { clear, el, showError } from "./dom.js";
import { PRICING, PRICING_COLOR, PRICING_LABEL, seconds } from "./format.js";
import * as terms from "./terms.js";

// Range → bucket size: hourly up to a month keeps daily swings visible, daily to a year, weekly for all.
const RANGES = {
  "7d": { days: 7, interval: "1h" },
  "30d": { days: 30, interval: "1h" },
  "90d": { days: 90, interval: "1d" },
  "1y": { days: 365, interval: "1d" },
  all: { days: null, interval: "1w" },
};
const ALL_START = "2015-01-01T00:00:00Z";
const STEP_S = { "1h": 3600, "1d": 86400, "1w": 7 * 86400 };
const EXTERNAL_COLOR = "#8a5cf6";
const IMPORTED_FILL = "rgba(128, 128, 128, 0.18)";

const section = document.getElementById("view-history");
const select = document.getElementById("history-gpu");
const rangeBox = document.getElementById("history-range");
const pricingBox = document.getElementById("history-pricing");
const termSelect = document.getElementById("history-term");
// A reserved history is of one term (a 1-day and a 3-year price are never one line).
const TERMS = ["1d", "7d", "1mo", "3mo", "1y", "3y"];
const reference = document.getElementById("history-reference");
const external = document.getElementById("history-external");
const chartBox = document.getElementById("history-chart");
const state = { gpu: "H100-SXM-80GB", range: "90d" };
let started = false;
let cardsLoaded = false;
let demoCards = new Set(); // cards whose live prices include replayed demo data
let loadToken = 0;

function init() {
  for (const p of ["on_demand", "spot", "reserved"]) {
    pricingBox.append(el("label", { class: "check" },
      el("input", { type: "checkbox", value: p, checked: p !== "reserved", onchange: load }), PRICING_LABEL[p]));
  }
  termSelect.append(...TERMS.map((t) => el("option", { value: t, selected: t === "1y" }, t)));
  termSelect.addEventListener("change", load);
  for (const name of Object.keys(RANGES)) {
    rangeBox.append(el("button", { type: "button", dataset: { range: name }, onclick: () => setRange(name) }, name));
  }
  select.addEventListener("change", () => { location.hash = `#history/${encodeURIComponent(select.value)}/${state.range}`; });
  reference.addEventListener("change", load);
  external.addEventListener("change", load);
}

function setRange(name) {
  location.hash = `#history/${encodeURIComponent(state.gpu)}/${name}`;
}

async function loadCards() {
  // Cards with live prices first; the rest of the catalog after them (they may have history).
  const [overview, catalog] = await Promise.all([getJSON("/v1/market/overview"), getJSON("/v1/gpus")]);
  const live = new Map();
  for (const c of overview.cards) live.set(c.gpu, c.name);
  demoCards = new Set(overview.cards.filter((c) => c.demo).map((c) => c.gpu));
  const groups = [
    el("optgroup", { label: "With live prices" },
      [...live.entries()].sort((a, b) => a[1].localeCompare(b[1])).map(([id, name]) => el("option", { value: id }, name))),
    el("optgroup", { label: "Other cards" },
      catalog.gpus.filter((g) => !live.has(g.id)).map((g) => el("option", { value: g.id }, g.name))),
  ];
  clear(select).append(...groups);
  cardsLoaded = true;
}

export async function show(args) {
  if (!started) {
    started = true;
    init();
  }
  if (args[0]) state.gpu = args[0];
  if (args[1] && RANGES[args[1]]) state.range = args[1];
  for (const b of rangeBox.querySelectorAll("button")) b.classList.toggle("active", b.dataset.range === state.range);
  try {
    if (!cardsLoaded) await loadCards();
  } catch (error) {
    showError(document.getElementById("history-error"), error);
  }
  if (![...select.options].some((o) => o.value === state.gpu)) select.append(el("option", { value: state.gpu }, state.gpu));
  select.value = state.gpu;
  await load();
}

function window_() {
  const range = RANGES[state.range];
  const end = new Date();
  const start = range.days ? new Date(end.getTime() - range.days * 86400e3).toISOString() : ALL_START;
  return { start, end: end.toISOString(), interval: range.interval };
}

async function load() {
  const token = ++loadToken;
  const pricing = [...pricingBox.querySelectorAll("input:checked")].map((i) => i.value);
  const { start, end, interval } = window_();
  const name = select.selectedOptions[0]?.textContent || state.gpu;
  document.getElementById("history-title").textContent = `${name}: $/GPU-hour, ${state.range}`;
  section.dataset.state = "loading";
  markDemo("history", demoCards.has(state.gpu));
  const term = termSelect.value;
  const params = (p) => ({
    gpu: state.gpu, pricing: p, ...(p === "reserved" ? { term } : {}), interval, start, end, include_reference: reference.checked,
  });
  terms.show(state.gpu, name, reference.checked).catch((error) => console.error(error));
  let results;
  let extra;
  try {
    [extra, ...results] = await Promise.all([
      getJSON("/v1/market/reference", { gpu: state.gpu, start, end }),
      ...pricing.map((p) => getJSON("/v1/market/history", params(p))),
    ]);
    showError(document.getElementById("history-error"), null);
  } catch (error) {
    if (token !== loadToken) return;
    showError(document.getElementById("history-error"), error);
    destroyChart("history");
    section.dataset.state = "error";
    return;
  }
  if (token !== loadToken) return; // a newer request replaced this one
  const csv = document.getElementById("history-csv");
  clear(csv).append("Download CSV: ", ...pricing.map((p) =>
    el("a", { href: `/v1/market/history${query({ ...params(p), format: "csv" })}`, download: "" }, pricingName(p, term))));
  draw(pricing, results, interval, extra, { start: seconds(start), end: seconds(end) });
}

const pricingName = (p, term) => (p === "reserved" ? `${PRICING_LABEL[p]} ${term}` : PRICING_LABEL[p]);

// An external series' median per bucket of ours (the mean of its points in the bucket), on our time axis.
function externalColumn(points, times, stepS) {
  const sums = new Map();
  for (const p of points) {
    const at = seconds(p.at);
    const i = times.findLastIndex((t) => t <= at);
    if (i < 0 || at >= times[i] + stepS || p.median == null) continue;
    const [sum, n] = sums.get(i) || [0, 0];
    sums.set(i, [sum + Number(p.median), n + 1]);
  }
  return times.map((_, i) => (sums.has(i) ? sums.get(i)[0] / sums.get(i)[1] : null));
}

function draw(pricing, results, interval, extra, window) {
  // Every bucket of the window on one time axis: a missing bucket is a gap, never an interpolation.
  const observed = [...new Set(results.flatMap((r) => r.buckets.map((b) => seconds(b.bucket))))].sort((a, b) => a - b);
  const key = document.getElementById("history-key");
  clear(key);
  if (observed.length === 0) {
    emptyChart("history", chartBox, "No prices for this card and pricing type in this range.");
    section.dataset.state = "empty";
    return;
  }
  const ownFirst = observed[0];
  if (external.checked && observed.length) {
    // The external series may start before our own history: the axis reaches back to it, on our bucket grid.
    const step = STEP_S[interval];
    const earliest = Math.min(...extra.series.flatMap((s) => s.points.map((p) => seconds(p.at))));
    if (earliest < observed[0]) {
      const from = Math.max(earliest, window.start);
      observed.unshift(observed[0] - Math.ceil((observed[0] - from) / step) * step);
    }
  }
  const frame = timeFrame(observed, window.start, window.end, STEP_S[interval]);
  frame.first = ownFirst; // "history starts" speaks of our own history
  const { times } = frame;
  const index = new Map(times.map((t, i) => [t, i]));
  const data = [times];
  const series = [{ label: "Time", value: timeValue(interval === "1h") }];
  const bands = [];
  results.forEach((result, k) => {
    const p = pricing[k];
    const color = PRICING_COLOR[p];
    const column = (key) => {
      const out = new Array(times.length).fill(null);
      for (const b of result.buckets) out[index.get(seconds(b.bucket))] = Number(b[key]);
      return out;
    };
    const base = data.length;
    data.push(column("p75"), column("median"), column("p25"), column("min"));
    const label = pricingName(p, termSelect.value);
    series.push(
      { label: `${label} p75`, stroke: `${color}66`, width: 1, value: usdValue, points: { show: false } },
      { label: `${label} median`, stroke: color, width: 2, value: usdValue, points: pointsFor(data[base + 1]) },
      { label: `${label} p25`, stroke: `${color}66`, width: 1, value: usdValue, points: { show: false } },
      { label: `${label} min`, stroke: color, width: 1, dash: [5, 4], value: usdValue, points: { show: false } },
    );
    bands.push({ series: [base, base + 2], fill: `${color}22` });
  });
  if (external.checked) {
    for (const s of extra.series) {
      const column = externalColumn(s.points, times, STEP_S[interval]);
      if (!column.some((v) => v != null)) continue;
      data.push(column);
      series.push({ label: `${s.source} median (external)`, stroke: EXTERNAL_COLOR, width: 1.5, dash: [2, 3],
        value: usdValue, points: pointsFor(column) });
    }
  }
  const spans = extra.imported.map((s) => ({ from: seconds(s.from), to: seconds(s.to), provider: s.provider, kind: s.kind }));
  mountChart("history", chartBox, {
    series,
    bands,
    scales: { x: frameScale(frame) },
    axes: [{}, { values: usdTicks, size: 64 }],
    cursor: { drag: { x: true, y: false } },
    hooks: shadeSpans(spans, IMPORTED_FILL),
  }, data);
  markStart("history", chartBox, frame, window.start);
  if (spans.length) {
    const names = [...new Set(spans.map((s) => `${s.provider} (${s.kind})`))].join(", ");
    key.append(el("span", { class: "imported" }), ` imported history: ${names}; the rest observed live`);
  }
  section.dataset.state = "ready";
}
