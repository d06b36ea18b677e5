// "Cheapest for my job", serving: an inference job → the best offer per card by $ per million output
// tokens (POST /v1/rank, kind inference), and each top card's $/Mtok-vs-concurrency curve from the
// serving estimate on its machine at its offer's price (POST /v1/estimate, rows[0].curve): the
// trade-off people pick a batch size by — more users in flight cost less per token, each user waits longer.
// Beside them, the serverless APIs that serve the model (the answer's api_alternatives): their $/Mtok for
// this prompt/answer shape as flat dashed lines on the chart, and the monthly volume from which renting wins.
import { postJSON } from "./api.js";
import { destroyChart, emptyChart, mountChart } from "./charts.js";
import { el, showError, table } from "./dom.js";
import { SERIES_COLORS, gpus, usd } from "./format.js";

const MAX_CURVES = 6;
const $ = (id) => document.getElementById(id);
let started = false;
let runToken = 0;

export async function show() {
  if (started) return;
  started = true;
  const form = $("serving-form");
  form.addEventListener("submit", (e) => { e.preventDefault(); run(); });
  $("serving-section").dataset.state = "ready-form";
}

function job() {
  const body = {
    kind: "inference",
    model: $("serving-model").value.trim(),
    precision: $("serving-precision").value,
    engine: $("serving-engine").value,
    prompt_tokens: Number($("serving-prompt").value),
    output_tokens: Number($("serving-output").value),
  };
  const users = $("serving-concurrency").value.trim();
  if (users) body.concurrency = Number(users);
  const load = $("serving-load").value.trim();
  if (load) body.tokens_per_month = load;
  return body;
}

async function run() {
  const token = ++runToken;
  const section = $("serving-section");
  section.dataset.state = "loading";
  $("serving-submit").disabled = true;
  const body = job();
  try {
    const ranked = await postJSON("/v1/rank", {
      ...body, sort_by: "usd_per_mtok", best_per_card: true, include_reference: $("job-reference").checked, limit: 30,
    });
    if (token !== runToken) return;
    showError($("serving-error"), null);
    render(ranked);
    const top = ranked.rows.filter((r) => r.fits && r.usd_per_mtok !== null).slice(0, MAX_CURVES);
    await curves(body, top, token, (ranked.api_alternatives || {}).apis || []);
    if (token === runToken) section.dataset.state = ranked.rows.length ? "ready" : "empty";
  } catch (error) {
    if (token !== runToken) return;
    showError($("serving-error"), error);
    $("serving-result").hidden = true;
    destroyChart("serving");
    section.dataset.state = "error";
  } finally {
    if (token === runToken) $("serving-submit").disabled = false;
  }
}

function render(result) {
  $("serving-result").hidden = false;
  const j = result.job || {};
  $("serving-summary").textContent =
    `${j.model_name || ""}, ${j.precision} weights, ${j.prompt_tokens} in / ${j.output_tokens} out, ` +
    `${j.concurrency ? `${j.concurrency} users` : "most users that fit"} on ${j.engine}: ` +
    `${result.fitting} of ${result.considered} live offers fit · cheapest $/Mtok first (the whole price over output tokens)`;
  table($("serving-table"), [
    { label: "#", cell: (r) => String(result.rows.indexOf(r) + 1), num: true },
    { label: "GPUs × card", cell: (r) => `${gpus(r.gpus)} ${r.gpu}` },
    { label: "$ / Mtok out", cell: (r) => el("strong", {}, usd(r.usd_per_mtok, 3)), num: true },
    // A card that cannot run the job has no speed: its row says why under "Fits".
    { label: "Output tok/s", cell: (r) => (r.tokens_per_second == null ? "—" : Math.round(r.tokens_per_second).toLocaleString("en-US")), num: true },
    { label: "Layout", cell: (r) => r.layout || "", opt: true },
    { label: "$ / month", cell: (r) => (r.monthly_cost == null ? "—" : usd(r.monthly_cost, 0)), num: true, opt: true },
    { label: "$ / GPU-h", cell: (r) => usd(r.price_per_gpu_hour), num: true, opt: true },
    // A spot row is priced at the share of hours it serves between interruptions: say it beside the pricing.
    { label: "Pricing", cell: (r) => (r.pricing || "").replace("_", "-") +
      (r.uptime != null && r.uptime < 1 ? ` (${(r.uptime * 100).toFixed(1)} % up)` : ""), opt: true },
    { label: "Provider", cell: (r) => (r.unavailable ? `${r.provider} (sold out)` : r.provider) },
    { label: "Fits", cell: (r) => (r.fits ? "✓" : r.reason), opt: true },
  ], result.rows, (r) => ({ class: [r.fits ? "" : "unfit", r.unavailable ? "sold-out" : ""].join(" ").trim() || undefined }));
  renderApis(result.api_alternatives);
}

function volume(be) {
  if (!be) return "—";
  if (be.break_even_tokens_per_month === null) return "never";
  const billions = be.break_even_tokens_per_month / 1e9;
  return `${billions.toLocaleString("en-US", { maximumFractionDigits: 2 })}B (${Math.round(be.break_even_utilisation * 100)} % busy)`;
}

// The model's APIs against the cheapest on-demand offer per token: "renting wins from" a month's output tokens.
function renderApis(alt) {
  const box = $("serving-apis");
  box.hidden = !(alt && alt.apis.length);
  if (box.hidden) return;
  const own = alt.self_hosted;
  const stale = alt.sheet.stale ? " (stale: check the sources)" : "";
  $("serving-apis-note").textContent = (own
    ? `Against ${gpus(own.gpus)} ${own.gpu} at ${own.provider}, ${usd(own.price_per_hour)}/h = ` +
      `${usd(own.machine_usd_per_month, 0)}/month, ${usd(own.usd_per_mtok, 3)}/Mtok at full load. `
    : "No priced offer to compare. ") +
    `API prices as published, read ${alt.sheet.read_on}${stale}; $/Mtok includes each answer's prompt. ` +
    "Renting wins from that many output tokens a month (the machine's utilisation there; band: slow–fast estimate).";
  table($("serving-apis-table"), [
    { label: "API", cell: (a) => el("a", { href: a.source_url, rel: "noopener noreferrer" }, a.provider) },
    { label: "Model", cell: (a) => a.api_model, opt: true },
    { label: "$ / Mtok job", cell: (a) => el("strong", {}, usd(a.usd_per_mtok, 3)), num: true },
    { label: "in / out", cell: (a) => `${usd(a.input_usd_per_mtok, 3)} / ${usd(a.output_usd_per_mtok, 3)}`, num: true,
      opt: true },
    { label: "Renting wins from", cell: (a) => volume(a.break_even), num: true },
    { label: "Band", cell: (a) => (a.break_even_band
      ? `${volume(a.break_even_band.low)} – ${volume(a.break_even_band.high)}` : "—"), num: true, opt: true },
  ], alt.apis);
}

// One serving estimate per top card, on the ranked offer's machine and price: its curve's points.
async function curves(body, top, token, apis = []) {
  const box = $("serving-chart");
  const note = $("serving-chart-note");
  if (!top.length) {
    emptyChart("serving", box, "No offer fits this serving job.");
    note.hidden = true;
    return;
  }
  const answers = await Promise.all(top.map((r) => postJSON("/v1/estimate", {
    ...body, concurrency: undefined, gpu: r.gpu, gpus: r.gpus, price: r.price_per_gpu_hour,
  })));
  if (token !== runToken) return;
  const concurrencies = answers[0].curve_concurrencies;
  const data = [concurrencies];
  const series = [{ label: "Users in flight" }];
  answers.forEach((answer, i) => {
    const row = answer.rows[0];
    const at = new Map(row.curve.map((p) => [p.concurrency, Number(p.usd_per_mtok)]));
    data.push(concurrencies.map((c) => (at.has(c) ? at.get(c) : null)));
    series.push({
      label: `${top[i].gpu} ×${gpus(top[i].gpus)}`, stroke: SERIES_COLORS[i % SERIES_COLORS.length], width: 2,
      value: (u, v) => (v == null ? "—" : usd(v, 3)), points: { show: true },
    });
  });
  apis.slice(0, MAX_CURVES).forEach((api, i) => {  // an API's price does not depend on the users in flight
    data.push(concurrencies.map(() => Number(api.usd_per_mtok)));
    series.push({
      label: `${api.provider} API`, stroke: SERIES_COLORS[(answers.length + i) % SERIES_COLORS.length], width: 1,
      dash: [6, 4], value: (u, v) => (v == null ? "—" : usd(v, 3)), points: { show: false },
    });
  });
  note.hidden = false;
  note.textContent = "$ per million output tokens against users in flight, per card at its best offer's price; " +
    "a line ends where the KV cache is full. Dashed: serverless APIs at their published price.";
  mountChart("serving", box, {
    series,
    scales: { x: { time: false, distr: 3, log: 2 }, y: { distr: 3, log: 10 } },
    axes: [{ label: "users in flight" }, { values: (u, vals) => vals.map((v) => (v == null ? "" : usd(v, 2))), size: 64 }],
  }, data);
}
