// uPlot charts (vendored, no CDN) sized to their container, plus SVG sparklines for the market tiles.
/* global uPlot */
import { clear, el, svg } from "./dom.js";
import { usd } from "./format.js";

// Exposed so tests (and curious users in the console) can inspect what a chart holds.
window.dashboard = window.dashboard || {};
const registry = (window.dashboard.charts = window.dashboard.charts || {});
const observers = new Map();
const PHONE = window.matchMedia("(max-width: 640px)");

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function size(container) {
  return { width: Math.max(container.clientWidth - 2, 260), height: PHONE.matches ? 240 : 340 };
}

// Bucket times are UTC days/hours: show them in UTC so a day never shifts by the viewer's offset.
export const utc = (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC");
const fmtDay = () => uPlot.fmtDate("{YYYY}-{MM}-{DD}");
const fmtHour = () => uPlot.fmtDate("{YYYY}-{MM}-{DD} {HH}:{mm} UTC");

export function timeValue(hourly) {
  const fmt = hourly ? fmtHour() : fmtDay();
  return (u, ts) => (ts == null ? "—" : fmt(utc(ts)));
}

export const usdValue = (u, v) => (v == null ? "—" : usd(v));
export const usdTicks = (u, values) => values.map((v) => (v == null ? "" : usd(v)));

export function destroyChart(name) {
  observers.get(name)?.disconnect();
  observers.delete(name);
  registry[name]?.destroy();
  delete registry[name];
}

export function emptyChart(name, container, message) {
  destroyChart(name);
  clear(container).append(el("div", { class: "empty" }, message));
}

export function mountChart(name, container, opts, data) {
  destroyChart(name);
  clear(container);
  const axis = { stroke: cssVar("--muted"), grid: { stroke: cssVar("--line"), width: 1 }, ticks: { stroke: cssVar("--line") } };
  const u = new uPlot(
    { ...size(container), tzDate: utc, ...opts, axes: (opts.axes || [{}, {}]).map((a) => ({ ...axis, ...a })) },
    data,
    container,
  );
  const observer = new ResizeObserver(() => {
    const next = size(container);
    if (Math.abs(next.width - u.width) > 1 || next.height !== u.height) u.setSize(next);
  });
  observer.observe(container);
  observers.set(name, observer);
  registry[name] = u;
  return u;
}

// A 30-day sparkline: median solid, minimum dashed, on a shared vertical scale.
export function sparkline(points, width = 110, height = 34) {
  // Drawn in a fixed coordinate box and scaled by CSS to the tile's room (never past its border).
  const node = svg("svg", {
    class: "spark", width, height, viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img",
  });
  const values = points.flatMap((p) => [Number(p.median), Number(p.min)]).filter((v) => Number.isFinite(v));
  if (points.length === 0 || values.length === 0) return node;
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const t0 = Date.parse(points[0].day);
  const t1 = Date.parse(points[points.length - 1].day);
  const x = (p) => (t1 === t0 ? width / 2 : 2 + ((Date.parse(p.day) - t0) / (t1 - t0)) * (width - 4));
  const y = (v) => (hi === lo ? height / 2 : height - 3 - ((v - lo) / (hi - lo)) * (height - 6));
  for (const key of ["min", "median"]) {
    let coords = points.map((p) => `${x(p).toFixed(1)},${y(Number(p[key])).toFixed(1)}`);
    if (coords.length === 1) coords = [`2,${y(Number(points[0][key])).toFixed(1)}`, `${width - 2},${y(Number(points[0][key])).toFixed(1)}`];
    node.append(svg("polyline", { class: key, points: coords.join(" ") }));
  }
  const title = svg("title", {});
  title.textContent = `30 days: median ${usd(points[0].median)} → ${usd(points[points.length - 1].median)}`
    + ` (solid line); lowest ${usd(points[points.length - 1].min)} now (dotted line)`;
  node.prepend(title);
  return node;
}

// A time chart's frame. `times` is every bucket from the first with data to the last before `end`, so a
// bucket without data is a null, drawn as a gap (an outage is never a line across it); `range` is the
// selected window ending now, or from the first observation when the history is shorter: never the future.
export function timeFrame(observed, startS, endS, stepS) {
  const first = observed[0];
  const times = [];
  for (let t = first; t <= endS && times.length < 50000; t += stepS) times.push(t);
  const all = [...new Set([...times, ...observed])].sort((a, b) => a - b);
  const lo = Math.max(startS, first);
  return { times: all, first, range: [Math.min(lo, endS - stepS), endS] };
}

// The x scale of a frame: fixed to its range whatever the data (uPlot would otherwise pad a lone point by years).
export const frameScale = (frame) => ({ time: true, range: () => frame.range });

// Points on a series that has too few values to draw a line (one observation is a point, not nothing).
export function pointsFor(column) {
  const values = column.filter((v) => v != null).length;
  return values <= 2 ? { show: true, size: 9 } : undefined;
}

// Where the history begins inside the window: a label over the chart, "history starts <date>".
export function markStart(name, container, frame, startS) {
  const chart = registry[name];
  if (!chart || frame.first <= startS) return;
  const day = fmtDay()(utc(frame.first));
  const label = el("div", { class: "chart-start", dataset: { first: String(frame.first) } }, `history starts ${day}`);
  container.append(label);
  // Placed at the history's first bucket (the plotting area's offset in the container plus the value's x),
  // once the chart has laid out its scales.
  requestAnimationFrame(() => {
    const offset = chart.over.getBoundingClientRect().left - container.getBoundingClientRect().left;
    const x = offset + chart.valToPos(frame.first, "x");
    if (Number.isFinite(x)) label.style.left = `${Math.max(0, Math.min(x, container.clientWidth - label.offsetWidth))}px`;
  });
  chart.historyStarts = day;
}

// Imported stretches shaded behind the lines (uPlot draw hook), so imported and live segments differ.
export function shadeSpans(spans, color) {
  return {
    drawClear: [(u) => {
      const { ctx, bbox } = u;
      ctx.save();
      ctx.fillStyle = color;
      for (const s of spans) {
        const x0 = Math.max(u.valToPos(s.from, "x", true), bbox.left);
        const x1 = Math.min(u.valToPos(s.to, "x", true), bbox.left + bbox.width);
        if (x1 > x0) ctx.fillRect(x0, bbox.top, x1 - x0, bbox.height);
      }
      ctx.restore();
    }],
  };
}

// What a sparkline's two lines are, drawn with the same strokes: shown once above the tiles.
export function sparkLegend() {
  const sample = (key) => {
    const node = svg("svg", { class: "spark", width: 24, height: 10, viewBox: "0 0 24 10", "aria-hidden": "true" });
    node.append(svg("polyline", { class: key, points: "1,5 23,5" }));
    return node;
  };
  const legend = document.createElement("p");
  legend.className = "spark-legend";
  legend.append("Sparklines, last 30 days: ", sample("median"), " median price · ", sample("min"),
    " lowest price (the cheapest offer each day)");
  return legend;
}
