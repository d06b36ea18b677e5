// Index view: the open GPU price index per day (global, US, EU, APAC) for one card family, with the
// global p25–p75 band, the latest values and their providers, and a CSV link (GET /v1/index).
import { getJSON, query } from "./api.js";
import { mountChart, emptyChart, timeValue, usdTicks, usdValue, pointsFor } from "./charts.js";
import { clear, el, showError, table } from "./dom.js";
import { seconds, usd } from "./format.js";

const RANGES = { "30d": 30, "90d": 90, "1y": 365 };
const AREAS = ["global", "us", "eu", "apac"];
const COLOR = { global: "#2563eb", us: "#16a34a", eu: "#d97706", apac: "#db2777" };
const section = document.getElementById("view-index");
const select = document.getElementById("index-card");
const rangeBox = document.getElementById("index-range");
const state = { card: "H100", range: "30d" };
let started = false;
let loadToken = 0;

async function init() {
  for (const name of Object.keys(RANGES)) {
    rangeBox.append(el("button", { type: "button", dataset: { range: name },
      onclick: () => { location.hash = `#index/${encodeURIComponent(state.card)}/${name}`; } }, name));
  }
  select.addEventListener("change", () => { location.hash = `#index/${encodeURIComponent(select.value)}/${state.range}`; });
  const catalog = await getJSON("/v1/gpus");
  const families = [...new Set(catalog.gpus.map((g) => g.family))].sort();
  clear(select).append(...families.map((f) => el("option", { value: f }, f)));
}

export async function show(args) {
  try {
    if (!started) {
      started = true;
      await init();
    }
  } catch (error) {
    showError(document.getElementById("index-error"), error);
  }
  if (args[0]) state.card = args[0];
  if (args[1] && RANGES[args[1]]) state.range = args[1];
  for (const b of rangeBox.querySelectorAll("button")) b.classList.toggle("active", b.dataset.range === state.range);
  if (![...select.options].some((o) => o.value === state.card)) select.append(el("option", { value: state.card }, state.card));
  select.value = state.card;
  await load();
}

async function load() {
  const token = ++loadToken;
  const params = { card: state.card, days: RANGES[state.range] };
  section.dataset.state = "loading";
  let body;
  try {
    body = await getJSON("/v1/index", params);
    showError(document.getElementById("index-error"), null);
  } catch (error) {
    if (token !== loadToken) return;
    showError(document.getElementById("index-error"), error);
    section.dataset.state = "error";
    return;
  }
  if (token !== loadToken) return;
  document.getElementById("index-title").textContent = `${state.card} price index (${body.version}), $/GPU-hour, ${state.range}`;
  clear(document.getElementById("index-csv")).append(
    el("a", { href: `/v1/index${query({ ...params, format: "csv" })}`, download: "" }, "Download CSV"));
  draw(body.values);
}

function draw(values) {
  const chartBox = document.getElementById("index-chart");
  const days = [...new Set(values.map((v) => seconds(`${v.day}T00:00:00Z`)))].sort((a, b) => a - b);
  const published = values.filter((v) => v.published);
  if (!published.length) {
    // The API says why per day ("no offers", "2 provider(s), fewer than the 3 needed"): quote it, most common first.
    const counts = new Map();
    for (const v of values) if (v.area === "global" && v.reason) counts.set(v.reason, (counts.get(v.reason) || 0) + 1);
    const reasons = [...counts].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} (${n} day${n === 1 ? "" : "s"})`);
    emptyChart("index", chartBox, `No published value in this range: ${reasons.join("; ") || "no values"}.`);
    clear(document.getElementById("index-table"));
    section.dataset.state = "empty";
    return;
  }
  const at = new Map(days.map((t, i) => [t, i]));
  const column = (area, key) => {
    const out = new Array(days.length).fill(null);
    for (const v of values) if (v.area === area && v.published) out[at.get(seconds(`${v.day}T00:00:00Z`))] = Number(v[key]);
    return out;
  };
  const data = [days, column("global", "p75"), column("global", "p25")];
  const series = [
    { label: "Day", value: timeValue(false) },
    { label: "global p75", stroke: `${COLOR.global}55`, width: 1, value: usdValue, points: { show: false } },
    { label: "global p25", stroke: `${COLOR.global}55`, width: 1, value: usdValue, points: { show: false } },
  ];
  for (const area of AREAS) {
    const c = column(area, "value");
    if (!c.some((v) => v != null)) continue;
    data.push(c);
    series.push({ label: area, stroke: COLOR[area], width: area === "global" ? 2.5 : 1.5, value: usdValue, points: pointsFor(c) });
  }
  mountChart("index", chartBox, {
    series, bands: [{ series: [1, 2], fill: `${COLOR.global}18` }], axes: [{}, { values: usdTicks, size: 64 }],
  }, data);
  const last = days[days.length - 1];
  const latest = values.filter((v) => seconds(`${v.day}T00:00:00Z`) === last);
  const money = (v, digits) => (v.published ? usd(v.value, digits) : "—");
  table(document.getElementById("index-table"), [
    { label: "Area", cell: (v) => v.area },
    { label: "Day", cell: (v) => v.day },
    { label: "Index", num: true, cell: (v) => money(v, 3) },
    { label: "p25–p75", cell: (v) => (v.published ? `${usd(v.p25)}–${usd(v.p75)}` : v.reason) },
    { label: "Providers (offers, weight)", wrap: true, cell: (v) =>
      v.providers.map((p) => `${p.provider} (${p.offers}, ${Math.round(p.weight * 100)} %)`).join(", ") || "—" },
  ], latest);
  section.dataset.state = "ready";
}
