// The term curve: $/GPU-hour now against commitment length (GET /v1/market/terms), one card at a time.
// Each point is its own distribution of live offers; a term no offer carries is a gap, labelled "0 offers".
import { getJSON } from "./api.js";
import { emptyChart, mountChart, usdTicks, usdValue } from "./charts.js";
import { clear } from "./dom.js";
import { PRICING_COLOR, PRICING_LABEL } from "./format.js";

const chartBox = document.getElementById("terms-chart");
const title = document.getElementById("terms-title");
const key = document.getElementById("terms-key");
let token = 0;

const pointLabel = (p) => (p.pricing === "reserved" ? p.term : PRICING_LABEL[p.pricing]);

// Offer counts over each point (or at the foot of an empty one), drawn after the series.
function countLabels(points) {
  return {
    draw: [(u) => {
      const { ctx, bbox } = u;
      ctx.save();
      ctx.font = `${Math.round(11 * devicePixelRatio)}px sans-serif`;
      ctx.textAlign = "center";
      ctx.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--muted").trim() || "#666";
      points.forEach((p, i) => {
        const x = u.valToPos(i, "x", true);
        const top = p.p75 ?? p.median;
        const y = top == null ? bbox.top + bbox.height - 6 * devicePixelRatio : u.valToPos(Number(top), "y", true) - 8 * devicePixelRatio;
        ctx.fillText(`${p.offers} offer${p.offers === 1 ? "" : "s"}`, x, y);
      });
      ctx.restore();
    }],
  };
}

export async function show(gpu, name, includeReference) {
  const mine = ++token;
  chartBox.dataset.state = "loading";
  let body;
  try {
    body = await getJSON("/v1/market/terms", { gpu, include_reference: includeReference });
  } catch (error) {
    if (mine !== token) return;
    emptyChart("terms", chartBox, `Term structure unavailable: ${error.message || error}`);
    chartBox.dataset.state = "error";
    return;
  }
  if (mine !== token) return;
  title.textContent = `${name}: term structure now`;
  clear(key);
  const card = body.cards.find((c) => c.gpu === gpu);
  if (!card || !card.terms.some((p) => p.offers > 0)) {
    emptyChart("terms", chartBox, "No live offers of this card.");
    chartBox.dataset.state = "empty";
    return;
  }
  // Spot first and apart (its own colour, never joined to the line): it is no commitment, only pre-emptible.
  // The line runs from on-demand through each term by its length.
  const points = [...card.terms.filter((p) => p.pricing === "spot"), ...card.terms.filter((p) => p.pricing !== "spot")];
  const labels = points.map(pointLabel);
  const value = (p, k) => (p[k] == null ? null : Number(p[k]));
  const col = (k) => points.map((p) => (p.pricing === "spot" ? null : value(p, k)));
  const spot = points.map((p) => (p.pricing === "spot" ? value(p, "median") : null));
  const xs = points.map((_, i) => i);
  const color = PRICING_COLOR.reserved;
  const u = mountChart("terms", chartBox, {
    series: [
      { label: "Commitment", value: (_, i) => (i == null ? "—" : labels[i] ?? "") },
      { label: "p75", stroke: `${color}66`, width: 1, value: usdValue, points: { show: false } },
      { label: "median", stroke: color, width: 2, value: usdValue, points: { show: true, size: 8 } },
      { label: "p25", stroke: `${color}66`, width: 1, value: usdValue, points: { show: false } },
      { label: "min", stroke: color, width: 1, dash: [5, 4], value: usdValue, points: { show: true, size: 5 } },
      { label: "spot median", stroke: PRICING_COLOR.spot, width: 0, value: usdValue, points: { show: true, size: 9 } },
    ],
    bands: [{ series: [1, 3], fill: `${color}22` }],
    scales: { x: { time: false, range: () => [-0.5, points.length - 0.5] } },
    axes: [
      { splits: () => xs, values: (_, vals) => vals.map((v) => labels[v] ?? ""), label: "commitment" },
      { values: usdTicks, size: 64, label: "$/GPU-hour" },
    ],
    hooks: countLabels(points),
    legend: { live: true },
  }, [xs, col("p75"), col("median"), col("p25"), col("min"), spot]);
  u.termPoints = points.map((p, i) => ({ label: labels[i], offers: p.offers, median: p.median, providers: p.providers }));
  const offers = (n) => `${n} offer${n === 1 ? "" : "s"}`;
  key.textContent = points.map((p, i) => `${labels[i]}: ${offers(p.offers)}${p.offers ? `, median $${Number(p.median).toFixed(2)}` : ""}`)
    .join(" · ");
  chartBox.dataset.state = "ready";
}
