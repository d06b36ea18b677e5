// Number, time and label formatting shared by every view.

export const PRICING = ["on_demand", "spot", "reserved"];
export const PRICING_LABEL = { on_demand: "On-demand", spot: "Spot", reserved: "Reserved" };
// Colour per pricing type: the same in tiles, charts and legends.
export const PRICING_COLOR = { on_demand: "#2563eb", spot: "#d97706", reserved: "#059669" };
export const SERIES_COLORS = ["#2563eb", "#d97706", "#059669", "#9333ea", "#dc2626", "#0891b2", "#65a30d", "#db2777"];

export function num(value) {
  return value === null || value === undefined ? null : Number(value);
}

export function usd(value, digits = 2) {
  const v = num(value);
  if (v === null || Number.isNaN(v)) return "—";
  const d = v !== 0 && Math.abs(v) < 0.1 ? Math.max(digits, 3) : digits;
  return `$${v.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d })}`;
}

export function pct(value) {
  const v = num(value);
  if (v === null) return "—";
  return `${v > 0 ? "+" : v < 0 ? "−" : "±"}${Math.abs(v).toFixed(1)}%`;
}

export function deltaClass(value) {
  const v = num(value);
  if (v === null) return "none";
  if (Math.abs(v) < 0.05) return "flat";
  return v < 0 ? "down" : "up";
}

export function age(seconds) {
  const s = num(seconds);
  if (s === null) return "never";
  if (s < 90) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

export function ageSince(iso, now = Date.now()) {
  return iso ? age((now - Date.parse(iso)) / 1000) : "never";
}

export function hours(value) {
  const v = num(value);
  if (v === null) return "—";
  return v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US");
}

export function count(value) {
  return num(value) === null ? "—" : Number(value).toLocaleString("en-US");
}

export function seconds(iso) {
  return Date.parse(iso) / 1000;
}

export function gpus(value) {
  const v = num(value);
  return v === null ? "—" : Number.isInteger(v) ? `${v}×` : `${v.toFixed(2)}×`;
}
