// "Cheapest for my job": a fine-tuning job → offers ranked by cost per run (POST /v1/rank), and that
// job's cost per run per card over time (POST /v1/rank/history).
import { getJSON, postJSON } from "./api.js";
import { markDemo } from "./banner.js";
import {
  destroyChart, emptyChart, frameScale, markStart, mountChart, pointsFor, timeFrame, timeValue, usdTicks, usdValue,
} from "./charts.js";
import { badge, el, showError, table } from "./dom.js";
import { PRICING, PRICING_LABEL, SERIES_COLORS, age, gpus, hours, seconds, usd } from "./format.js";
import { costCell } from "./costs.js";

const MAX_CHART_CARDS = 6;
const section = document.getElementById("view-job");
const form = document.getElementById("job-form");
const $ = (id) => document.getElementById(id);
let started = false;
let lastJob = null;
let chartToken = 0;

function init() {
  for (const p of PRICING) {
    $("job-pricing").append(el("label", { class: "check" },
      el("input", { type: "checkbox", value: p, checked: p !== "reserved" }), PRICING_LABEL[p]));
  }
  for (const radio of form.querySelectorAll("input[name=amount]")) radio.addEventListener("change", toggleAmount);
  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  $("job-statistic").addEventListener("change", chart);
  $("job-chart-pricing").addEventListener("change", chart);
  getJSON("/v1/models").then((body) => {
    $("job-models").append(...body.models.map((m) => el("option", { value: m.id }, m.name)));
  }).catch(() => {}); // suggestions only: the form works without them
}

function toggleAmount() {
  const tokens = form.querySelector("input[name=amount]:checked").value === "tokens";
  form.querySelector(".amount-tokens").hidden = !tokens;
  form.querySelector(".amount-dataset").hidden = tokens;
}

export async function show() {
  if (!started) {
    started = true;
    init();
  }
  if (section.dataset.state === "idle") section.dataset.state = "ready-form";
}

function job() {
  const body = { model: $("job-model").value.trim(), method: $("job-method").value };
  if (form.querySelector("input[name=amount]:checked").value === "tokens") {
    body.tokens = $("job-tokens").value.trim();
  } else {
    body.examples = Number($("job-examples").value);
    body.tokens_per_example = Number($("job-tpe").value);
    body.epochs = Number($("job-epochs").value);
  }
  return body;
}

async function run() {
  section.dataset.state = "loading";
  $("job-submit").disabled = true;
  const pricing = [...$("job-pricing").querySelectorAll("input:checked")].map((i) => i.value);
  lastJob = job();
  try {
    const result = await postJSON("/v1/rank", {
      ...lastJob, pricing: pricing.length ? pricing : null, include_reference: $("job-reference").checked,
      best_per_card: $("job-best").checked, limit: 50,
    });
    showError($("job-error"), null);
    render(result);
    section.dataset.state = result.rows.length ? "ready" : "empty";
    if (pricing.length && !pricing.includes($("job-chart-pricing").value)) $("job-chart-pricing").value = pricing[0];
    await chart();
  } catch (error) {
    showError($("job-error"), error);
    $("job-result").hidden = true;
    section.dataset.state = "error";
  } finally {
    $("job-submit").disabled = false;
  }
}

function mtok(tokens) {
  return tokens ? `${(Number(tokens) / 1e6).toLocaleString("en-US", { maximumFractionDigits: 2 })}M tokens` : "";
}

// The estimate's uncertainty band (90 %, from the calibration's leave-one-source-out errors of the
// job's stack on that card's class; wider for a class with no measured run): "$4.10–$7.90".
function range(low, high, fmt) {
  return low === null || low === undefined || high === null || high === undefined ? null : `${fmt(low)}–${fmt(high)}`;
}

function bandCell(r, first) {
  const band = range(r.cost_per_run_low, r.cost_per_run_high, usd);
  if (!band) return "—";
  const title = `90 % band of the estimate; hours ${range(r.hours_low, r.hours_high, hours)}`;
  const near = r.within_band_of_best && r !== first
    ? [" ", badge("near", "≈ best", "cost band overlaps the cheapest offer's: their order is within the model's error")]
    : null;
  return [el("span", { title }, band), near];
}

function render(result) {
  $("job-result").hidden = false;
  $("job-summary").textContent =
    `${result.job?.model_name || lastJob.model}, ${result.job?.method || lastJob.method}, ${mtok(result.job?.tokens)}: ` +
    `${result.fitting} of ${result.considered} live offers fit` +
    ` · assumptions "${result.assumptions}" · ${result.rows.length ? "cheapest first" : "no offer fits"}` +
    (result.rows.some((r) => r.cost_per_run_low !== null && r.cost_per_run_low !== undefined)
      ? " · ranges are the estimate's 90 % band; ≈ best: within the cheapest offer's band"
      : "");
  const first = result.rows.find((r) => r.fits && r.cost_per_run !== null) || null;
  table($("job-table"), [
    // The answer (cost per run) sits next to the card, so a phone shows it without scrolling sideways.
    { label: "#", cell: (r) => String(result.rows.indexOf(r) + 1), num: true },
    { label: "GPUs × card", cell: (r) => `${gpus(r.gpus)} ${r.gpu}` },
    { label: "Cost / run", cell: (r) => el("strong", {}, usd(r.cost_per_run)), num: true },
    { label: "Cost band", cell: (r) => bandCell(r, first), num: true, opt: true },
    { label: "Breakdown", cell: costCell, opt: true, wrap: true }, // costs.js: the whole run, by component
    { label: "Hours", cell: (r) => hours(r.hours), num: true },
    { label: "$ / Mtoken", cell: (r) => usd(r.usd_per_mtok, 3), num: true, opt: true },
    { label: "$ / GPU-h", cell: (r) => usd(r.price_per_gpu_hour), num: true, opt: true },
    { label: "Provider", cell: (r) => [r.provider, r.reference ? [" ", badge("ref", "ref", "static reference sheet")] : null,
      r.demo ? [" ", badge("demo", "demo", "replayed demo data")] : null,
      // Ranked after every offer not known to be sold out (tracker.market.rank): say why it is down there.
      r.unavailable ? [" ", badge("warn sold-out", "sold out", "the provider says it cannot be rented now")] : null] },
    { label: "Pricing", cell: (r) => PRICING_LABEL[r.pricing] + (r.reserved_term ? ` ${r.reserved_term}` : ""), opt: true },
    { label: "Fits", cell: (r) => (r.fits ? "✓" : r.reason), opt: true },
    { label: "Region", cell: (r) => r.region || "—", opt: true },
    { label: "Price age", cell: (r) => age(r.price_age_s), opt: true },
  ], result.rows, (r) => ({ class: [r.fits ? "" : "unfit", r.reference ? "reference" : "",
    r.unavailable ? "sold-out" : ""].join(" ").trim() || undefined }));
  markDemo("job", result.rows.some((r) => r.demo));
}

async function chart() {
  if (!lastJob) return;
  const token = ++chartToken;
  const box = $("job-chart");
  const note = $("job-chart-note");
  let result;
  try {
    result = await postJSON("/v1/rank/history", {
      ...lastJob, pricing: $("job-chart-pricing").value, statistic: $("job-statistic").value, days: 90,
      include_reference: $("job-reference").checked,
    });
  } catch (error) {
    if (token !== chartToken) return;
    destroyChart("job");
    showError(note, error);
    return;
  }
  if (token !== chartToken) return;
  // The cards cheapest on their latest day: a readable handful of lines.
  const last = (s) => Number(s.points[s.points.length - 1].cost_per_run);
  const series = result.series.filter((s) => s.fits && s.points.length).sort((a, b) => last(a) - last(b)).slice(0, MAX_CHART_CARDS);
  note.hidden = false;
  note.textContent = series.length
    ? `Cheapest ${series.length} cards on their smallest machine that fits (${series.map((s) => `${s.gpu} ×${s.gpus}`).join(", ")}).`
    : "";
  if (!series.length) {
    emptyChart("job", box, "No card that fits this job has prices of this type in the last 90 days.");
    return;
  }
  // Every day of the 90 ending now on the axis: a day without prices is a gap, and nothing runs into the future.
  const end = Date.now() / 1e3;
  const observed = [...new Set(series.flatMap((s) => s.points.map((p) => seconds(p.day))))].sort((a, b) => a - b);
  const frame = timeFrame(observed, end - 90 * 86400, end, 86400);
  const index = new Map(frame.times.map((t, i) => [t, i]));
  const data = [frame.times];
  for (const s of series) {
    const column = new Array(frame.times.length).fill(null);
    for (const p of s.points) column[index.get(seconds(p.day))] = Number(p.cost_per_run);
    data.push(column);
  }
  mountChart("job", box, {
    series: [{ label: "Day", value: timeValue(false) },
      ...series.map((s, i) => ({ label: `${s.gpu} ×${s.gpus}`, stroke: SERIES_COLORS[i % SERIES_COLORS.length], width: 2,
        value: usdValue, points: pointsFor(data[i + 1]) }))],
    scales: { x: frameScale(frame) },
    axes: [{}, { values: usdTicks, size: 64 }],
  }, data);
  markStart("job", box, frame, end - 90 * 86400);
}
