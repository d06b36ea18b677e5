// Providers & alerts: each provider's last run and freshness; alert rules with their states when the
// alerts API is there and readable (it needs the API token; without it the view says so and carries on).
import { ApiError, getJSON } from "./api.js";
import { markDemo } from "./banner.js";
import { badge, clear, el, showError, table } from "./dom.js";
import { PRICING_LABEL, age, ageSince, count, usd } from "./format.js";

const TOKEN_KEY = "gpu-tracker-api-token";
const STATUS_BADGE = { ok: "ok", failed: "bad", quarantined: "warn", skipped: "muted", running: "muted" };
const STATE_BADGE = { firing: "bad", pending: "warn", resolved: "ok", inactive: "muted", no_data: "warn" };
const section = document.getElementById("view-health");
const alertsBox = document.getElementById("alerts");

export async function show() {
  section.dataset.state = "loading";
  await Promise.all([providers(), alerts()]);
  section.dataset.state = "ready";
}

async function providers() {
  try {
    const body = await getJSON("/v1/providers");
    showError(document.getElementById("providers-error"), null);
    // Trouble first (failed or stale after having run), then healthy, then providers that never ran.
    const rank = (p) => (!p.last_run ? 2 : p.stale || p.last_run.status !== "ok" ? 0 : 1);
    const rows = body.providers.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name));
    table(document.getElementById("providers-table"), [
      { label: "Provider", cell: (p) => [p.title || p.name, p.kind === "static_sheet" ? [" ", badge("ref", "sheet")] : null], wrap: true },
      { label: "Kind", cell: (p) => p.kind.replace("_", " "), opt: true },
      { label: "Last run", cell: (p) => p.last_run
        ? [badge(STATUS_BADGE[p.last_run.status] || "muted", p.last_run.status), " ", ageSince(p.last_run.started_at),
          p.last_run.source && p.last_run.source !== "live"
            ? [" ", badge("demo", p.last_run.source === "demo" ? "demo replay" : "replay",
              "recorded responses replayed (scrape --demo / --replay), not the provider asked live")] : null]
        : badge("muted", "never") },
      // The server's freshness rule decides `stale`; the page only says which window applied.
      { label: "Last success", cell: (p) => [age(p.age_s), p.stale ? [" ", badge("bad", "stale", `prices no longer live: no success within ${every(p.fresh_for_s)}`)] : null] },
      { label: "Offers", cell: (p) => count(p.current_offers), num: true },
      { label: "Unknown names", cell: (p) => count(p.unknown_names), num: true, opt: true },
      { label: "Every", cell: (p) => every(p.interval_s ?? p.default_interval_s), num: true, opt: true },
      { label: "Credentials", cell: (p) => (p.credentials.length ? (p.credentials_set ? "set" : "missing") : "none needed"), opt: true },
      { label: "Last error", cell: (p) => p.last_run?.error || "", wrap: true, opt: true },
    ], rows);
    const replayed = rows.filter((p) => p.last_run && p.last_run.source && p.last_run.source !== "live").length;
    const note = document.getElementById("providers-note") || el("p", { id: "providers-note", class: "note" });
    const ran = rows.filter((p) => p.last_run).length;
    note.textContent = replayed
      ? `${replayed === ran ? `All ${count(ran)}` : `${count(replayed)} of ${count(ran)}`} last runs were demo replays`
        + " of recorded responses, not the providers asked live: their prices are not today's market."
      : "";
    note.hidden = !replayed;
    document.getElementById("providers-table").closest(".table-wrap").before(note);
    markDemo("providers", replayed > 0);
  } catch (error) {
    showError(document.getElementById("providers-error"), error);
  }
}

function every(s) {
  return s >= 86400 ? `${s / 86400} d` : s >= 3600 ? `${s / 3600} h` : `${Math.round(s / 60)} min`;
}

function tokenForm(message) {
  const input = el("input", { type: "password", placeholder: "API token", "aria-label": "API token", autocomplete: "off" });
  return el("form", { class: "toolbar", onsubmit: (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value);
    alerts();
  } }, el("span", { class: "note" }, message), input, el("button", { type: "submit" }, "Show alerts"));
}

async function alerts() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  alertsBox.dataset.state = "loading";
  let body;
  try {
    body = await getJSON("/v1/alerts", {}, token ? { authorization: `Bearer ${token}` } : {});
  } catch (error) {
    clear(alertsBox);
    if (error instanceof ApiError && error.status === 404) {
      alertsBox.append(el("p", { class: "note" }, "Alerts are not available on this server."));
      alertsBox.dataset.state = "unavailable";
    } else if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
      // 403: the server has no token configured, so asking for one would not help.
      alertsBox.append(error.status === 403
        ? el("p", { class: "note" }, `Alerts are not readable here: ${error.message}.`)
        : tokenForm(token ? "That token was refused." : "Alerts need the API token."));
      alertsBox.dataset.state = "locked";
    } else {
      alertsBox.append(el("div", { class: "error" }, `Alerts could not be loaded: ${error.message}`));
      alertsBox.dataset.state = "error";
    }
    return;
  }
  const rules = body.alerts || body.rules || [];
  clear(alertsBox);
  if (!rules.length) {
    alertsBox.append(el("p", { class: "note" }, "No alert rules yet (`gpu-tracker alerts add`, or POST /v1/alerts)."));
  } else {
    const wrap = el("div", { class: "table-wrap" });
    const t = el("table", { class: "data" });
    wrap.append(t);
    alertsBox.append(wrap);
    table(t, [
      { label: "Rule", cell: (r) => [r.name, r.enabled === false ? [" ", badge("muted", "disabled")] : null] },
      { label: "State", cell: (r) => [badge(STATE_BADGE[r.state] || "muted", r.state), " ", ageSince(r.state_since)] },
      // A plan rule watches a saved workload mix, not one card: its workloads, and its best single card.
      { label: "Card", cell: (r) => r.subject === "plan"
        ? `plan of ${((r.plan || {}).workloads || []).length} workloads${r.best_card ? ` · ${r.best_card}` : ""}`
        : `${r.gpu} · ${PRICING_LABEL[r.pricing] || r.pricing}` },
      { label: "Condition", cell: (r) => r.condition === "changes"
        ? `${r.metric} changes` : `${r.metric} ${r.condition} ${usd(r.threshold)}`, opt: true },
      { label: "Last value", cell: (r) => usd(r.last_value), num: true },
      { label: "Evaluated", cell: (r) => ageSince(r.last_evaluated_at), opt: true },
    ], rules);
  }
  alertsBox.dataset.state = "ready";
}
