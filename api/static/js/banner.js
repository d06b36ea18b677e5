// The demo-data banner: shown as soon as any view has seen a demo price, so nobody mistakes it for a market.
const seen = new Set();

export function markDemo(source, present) {
  if (present) seen.add(source);
  else seen.delete(source);
  document.getElementById("demo-banner").hidden = seen.size === 0;
}
