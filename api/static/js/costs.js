// What a run really costs on each ranked offer (POST /v1/rank → row.cost, tracker.costs): a stacked bar
// of its components — GPU time, billing rounding, storage, download, upload, expected interruption
// loss — with each segment saying whether its terms came from the provider (API or dated sheet) or
// are a default; on spot rows, the expected cost with its range (no interruption … 95th percentile).
// Styles are set through the CSSOM, never as markup, like every element of the page (dom.js).
import { el } from "./dom.js";
import { usd } from "./format.js";

export const COMPONENTS = [
  ["gpu_time", "GPU time", "var(--accent)"],
  ["rounding", "billing rounding", "#a16207"],
  ["storage", "storage", "#7c3aed"],
  ["ingress", "download", "#0e7490"],
  ["egress", "upload", "#0891b2"],
  ["interruption", "expected interruption loss", "var(--up)"],
];
const SOURCE_LABEL = { api: "from the provider's API", sheet: "from the provider's price sheet", default: "a default" };

function segment(key, label, color, value, known, total) {
  const title = `${label}: ${usd(value, 4)} (${SOURCE_LABEL[known] || known})`;
  const node = el("span", { class: `cost-seg ${key}`, title, dataset: { component: key, known } });
  Object.assign(node.style, {
    display: "inline-block", height: "100%", width: `${(100 * value / total).toFixed(3)}%`, background: color,
    opacity: known === "default" ? "0.45" : "1",
  });
  return node;
}

function bar(cost) {
  const total = Number(cost.total);
  const parts = COMPONENTS.map(([key, label, color]) => [key, label, color, Number(cost.components[key]), cost.known[key]])
    .filter((p) => p[3] > 0);
  const node = el("span", { class: "cost-bar", role: "img", "aria-label": parts.map((p) => `${p[1]} ${usd(p[3], 4)}`).join(", ") },
    total > 0 ? parts.map((p) => segment(...p, total)) : null);
  Object.assign(node.style, {
    display: "inline-flex", width: "7rem", height: ".7rem", verticalAlign: "middle", overflow: "hidden",
    borderRadius: "2px", background: "var(--line)",
  });
  return node;
}

// The biggest part beyond GPU time, so the row says why it costs what it does.
function beyond(r, cost) {
  const extra = Number(cost.total) - Number(cost.components.gpu_time);
  if (!(extra >= 0.005)) return null;
  const [, label] = COMPONENTS.slice(1).reduce((best, c) => (Number(cost.components[c[0]]) > Number(cost.components[best[0]]) ? c : best));
  return el("span", { class: "cost-beyond" }, ` +${usd(extra)} (mostly ${label})`);
}

function spotLine(cost) {
  const s = cost.spot;
  if (!s) return null;
  const range = `${usd(s.range.low)}–${usd(s.range.high)}`;
  const deadline = s.p_within_deadline === null || s.p_within_deadline === undefined
    ? "" : ` · ${(100 * s.p_within_deadline).toFixed(0)} % by the deadline`;
  return el("div", { class: "cost-spot", title: `${s.expected_interruptions} interruptions expected at ${s.interruptions_per_hour.toFixed(3)}/h` },
    `spot: expected ${usd(cost.total)}, ${range} · ${(100 * s.p_no_interruption).toFixed(0)} % no interruption${deadline}`);
}

export function costCell(r) {
  const cost = r.cost;
  if (!cost) return "—";
  return [bar(cost), beyond(r, cost), spotLine(cost)];
}
