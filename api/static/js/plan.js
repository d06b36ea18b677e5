// "Plan a fleet": a workload mix (YAML or JSON, edited here or uploaded) → each workload on the offer that
// runs its month cheapest (POST /v1/plan), the mixed fleet against one card type, and the plan over the
// last 90 days (POST /v1/plan/history). The server parses the text, so a bad mix gets the CLI's message.
import { postJSON } from "./api.js";
import { markDemo } from "./banner.js";
import { emptyChart, frameScale, markStart, mountChart, pointsFor, timeFrame, timeValue, usdTicks, usdValue } from "./charts.js";
import { clear, el, showError, svg, table } from "./dom.js";
import { PRICING_LABEL, SERIES_COLORS, hours, seconds, usd } from "./format.js";

// The seed's mix (examples/mixed-fleet.yaml, shortened): light work beside heavy work.
const EXAMPLE = `workloads:
  - name: small-finetune
    kind: fine-tune
    job: {model: llama-3.1-8b, method: qlora, tokens: 22.5M}
    volume: {runs_per_month: 20}
  - name: big-training
    kind: pretrain
    job: {model: llama-3.1-70b, method: full, tokens: 200M, seq_len: 4096}
    volume: {training_tokens_per_month: 400M}
    constraints: {min_gpus: 8, deadline_hours: 240}
  - name: nightly-batch
    kind: fine-tune
    job: {model: llama-3.2-3b, method: lora, tokens: 5M}
    volume: {runs_per_month: 30, peak_to_average: 2}
    constraints: {pricing: [on_demand, spot]}
  - name: big-serving
    kind: inference
    job: {model: llama-3.1-70b, precision: fp8, prompt_tokens: 1000, output_tokens: 200, concurrency: 64}
    volume: {tokens_per_month: 5B}
`;
const section = document.getElementById("view-plan");
const $ = (id) => document.getElementById(id);
let started = false;
let token = 0;

window.dashboard = window.dashboard || {};

function init() {
  const source = $("plan-source");
  source.value = EXAMPLE;
  source.style.width = "100%"; // CSSOM, not a style attribute: the page's CSP allows it
  source.style.fontFamily = "monospace";
  $("plan-form").addEventListener("submit", (e) => { e.preventDefault(); run(); });
  $("plan-file").addEventListener("change", async (e) => {
    const file = e.target.files && e.target.files[0];
    if (file) source.value = await file.text();
  });
}

export async function show() {
  if (!started) {
    started = true;
    init();
  }
  if (section.dataset.state === "idle") section.dataset.state = "ready-form";
}

function body() {
  const out = { source: $("plan-source").value };
  const budget = $("plan-budget").value.trim();
  const overhead = $("plan-overhead").value.trim();
  if (budget) out.power_budget_kw = Number(budget);
  if (overhead) out.overhead_factor = Number(overhead);
  return out;
}

async function run() {
  const mine = ++token;
  section.dataset.state = "loading";
  $("plan-submit").disabled = true;
  const request = body();
  try {
    const result = await postJSON("/v1/plan", request);
    if (mine !== token) return;
    showError($("plan-error"), null);
    render(result);
    section.dataset.state = "ready";
    await history(request, mine);
  } catch (error) {
    if (mine !== token) return;
    showError($("plan-error"), error);
    $("plan-result").hidden = true;
    section.dataset.state = "error";
  } finally {
    $("plan-submit").disabled = false;
  }
}

function place(c) {
  return `${c.gpus_per_node}× ${c.gpu}`;
}

function render(result) {
  window.dashboard.plan = result;
  $("plan-result").hidden = false;
  const planned = result.workloads.filter((w) => w.status === "ok").length;
  const p = result.power;
  const budget = p.budget_kw == null ? "" : p.within_budget
    ? ` · within the ${p.budget_kw} kW budget (the cap costs ${usd(p.cap_cost)}/month)`
    : ` · over the ${p.budget_kw} kW budget: ${p.reason || ""}`;
  $("plan-summary").textContent =
    `${planned} of ${result.workloads.length} workloads planned on ${result.live_offers.toLocaleString("en-US")} live offers` +
    ` · fleet ${usd(result.fleet.monthly_cost)}/month · ${p.power_kw == null ? "unknown" : p.power_kw.toFixed(1)} kW at peak${budget}`;
  table($("plan-table"), [
    { label: "Workload", cell: (w) => el("strong", {}, w.name) },
    { label: "Kind", cell: (w) => w.kind, opt: true },
    { label: "Card", cell: (w) => (w.choice ? place(w.choice) : el("span", { class: "unfit" }, `${w.status}: ${w.reason}`)), wrap: true },
    { label: "$ / month", cell: (w) => (w.choice ? el("strong", {}, usd(w.choice.monthly_cost)) : "—"), num: true },
    { label: "Provider", cell: (w) => (w.choice ? w.choice.provider : "—") },
    { label: "Pricing", cell: (w) => (w.choice ? PRICING_LABEL[w.choice.pricing] || w.choice.pricing : "—"), opt: true },
    { label: "Nodes at peak", cell: (w) => (w.choice ? String(w.choice.nodes_at_peak) : "—"), num: true, opt: true },
    { label: "Hours / run", cell: (w) => (w.choice && w.choice.hours_per_run != null ? hours(w.choice.hours_per_run) : "—"), num: true, opt: true },
    { label: "Runner-up", cell: (w) => (w.runner_up ? `${place(w.runner_up)}: ${w.runner_up.why_lost}` : "—"), opt: true, wrap: true },
  ], result.workloads, (w) => ({ class: w.status === "ok" ? undefined : "unfit" }));
  table($("plan-fleet"), [
    { label: "Card", cell: (c) => c.gpu },
    { label: "GPUs at peak", cell: (c) => String(c.gpus_at_peak), num: true },
    { label: "GPU-hours / month", cell: (c) => c.gpu_hours_per_month.toLocaleString("en-US", { maximumFractionDigits: 1 }), num: true },
    { label: "$ / month", cell: (c) => usd(c.monthly_cost), num: true },
    { label: "kW", cell: (c) => (c.power_kw == null ? "—" : c.power_kw.toFixed(2)), num: true },
    { label: "Workloads", cell: (c) => c.workloads.join(", "), opt: true },
  ], result.fleet.cards);
  const single = result.single_card;
  $("plan-compare").textContent = single.best
    ? `Best single card type: ${single.best.gpu} at ${usd(single.best.monthly_cost)}/month; the mixed fleet saves ` +
      `${usd(single.saving)} (${single.saving_pct.toFixed(1)}%).`
    : `Single card type: ${single.note || "nothing planned"}.`;
  bars(result);
  markDemo("plan", result.workloads.some((w) => w.choice && w.choice.demo));
}

// Stacked bars drawn as SVG (uPlot has no stacked bars): one bar per fleet, one segment per workload.
function bars(result) {
  const box = $("plan-bars");
  clear(box);
  const planned = result.workloads.filter((w) => w.choice);
  const fleets = [{ label: "Mixed fleet", parts: planned.map((w) => ({ name: w.name, gpu: w.choice.gpu, cost: Number(w.choice.monthly_cost) })) }];
  for (const f of result.single_card.fleets.slice(0, 3)) {
    fleets.push({ label: `Only ${f.gpu}`, parts: f.assignments.map((a) => ({ name: a.workload, gpu: f.gpu, cost: Number(a.monthly_cost) })) });
  }
  const bars = fleets.map((f) => ({ ...f, total: f.parts.reduce((s, p) => s + p.cost, 0) }));
  window.dashboard.planBars = bars;
  if (!planned.length) {
    box.append(el("div", { class: "empty" }, "No workload could be planned."));
    return;
  }
  const width = Math.max(box.clientWidth - 2, 300);
  const label = 150;
  const rowH = 34;
  const height = bars.length * rowH + 40;
  const max = Math.max(...bars.map((b) => b.total)) || 1;
  const node = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", class: "plan-bars" });
  const color = new Map(planned.map((w, i) => [w.name, SERIES_COLORS[i % SERIES_COLORS.length]]));
  bars.forEach((b, row) => {
    const y = 8 + row * rowH;
    const text = svg("text", { x: 4, y: y + 18, "font-size": 12, fill: "currentColor" });
    text.textContent = b.label;
    node.append(text);
    let x = label;
    for (const part of b.parts) {
      const w = ((width - label - 90) * part.cost) / max;
      const rect = svg("rect", { x, y, width: Math.max(w, 0.5), height: rowH - 10, fill: color.get(part.name) || "#888", class: "segment" });
      const title = svg("title", {});
      title.textContent = `${part.name} on ${part.gpu}: ${usd(part.cost)}/month`;
      rect.append(title);
      node.append(rect);
      x += w;
    }
    const total = svg("text", { x: x + 6, y: y + 18, "font-size": 12, fill: "currentColor" });
    total.textContent = usd(b.total);
    node.append(total);
  });
  let lx = label;
  for (const [name, c] of color) {
    node.append(svg("rect", { x: lx, y: height - 24, width: 10, height: 10, fill: c }));
    const t = svg("text", { x: lx + 14, y: height - 15, "font-size": 11, fill: "currentColor" });
    t.textContent = name;
    node.append(t);
    lx += 24 + name.length * 6.5;
  }
  box.append(node);
}

async function history(request, mine) {
  const box = $("plan-chart");
  let result;
  try {
    result = await postJSON("/v1/plan/history", { ...request, days: 90 });
  } catch (error) {
    if (mine !== token) return;
    emptyChart("plan", box, `No history: ${error.message || error}`);
    return;
  }
  if (mine !== token) return;
  const points = result.points.filter((p) => p.monthly_cost != null || p.single_card_monthly_cost != null);
  const s = result.summary;
  $("plan-history-note").textContent = `Today's placements repriced at each card's daily ${result.statistic} $/GPU-hour` +
    (s.days_compared ? `: the mixed fleet was cheaper on ${s.days_with_saving} of ${s.days_compared} days.` : ".");
  if (!points.length) {
    emptyChart("plan", box, "No price history for the cards of this plan in the last 90 days.");
    return;
  }
  // The 90 days ending now, every day on the axis: a day without prices is a gap, never a line across it.
  const end = Date.now() / 1e3;
  const frame = timeFrame(points.map((p) => seconds(p.day)), end - 90 * 86400, end, 86400);
  const byDay = new Map(points.map((p) => [seconds(p.day), p]));
  const value = (key) => frame.times.map((t) => (byDay.get(t)?.[key] == null ? null : Number(byDay.get(t)[key])));
  const data = [frame.times, value("monthly_cost"), value("single_card_monthly_cost")];
  mountChart("plan", box, {
    series: [{ label: "Day", value: timeValue(false) },
      { label: "Mixed fleet", stroke: SERIES_COLORS[0], width: 2, value: usdValue, points: pointsFor(data[1]) },
      { label: "Best single card type", stroke: SERIES_COLORS[1], width: 2, dash: [6, 4], value: usdValue,
        points: pointsFor(data[2]) }],
    scales: { x: frameScale(frame) },
    axes: [{}, { values: usdTicks, size: 72 }],
  }, data);
  markStart("plan", box, frame, end - 90 * 86400);
}
