// The dashboard's entry point: hash routing between the views.
import * as health from "./health.js";
import * as history from "./history.js";
import * as index from "./index.js";
import * as job from "./job.js";
import * as market from "./market.js";
import * as plan from "./plan.js";
import * as serving from "./serving.js";

const VIEWS = { market, history, index, job, plan, health };

function route() {
  const [name, ...args] = (location.hash.slice(1) || "market").split("/");
  const view = VIEWS[name] ? name : "market";
  for (const key of Object.keys(VIEWS)) document.getElementById(`view-${key}`).hidden = key !== view;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === view);
  document.title = `${document.querySelector(`#nav a[data-view=${view}]`).textContent} · GPU price tracker`;
  VIEWS[view].show(args.map(decodeURIComponent)).catch((error) => console.error(error));
  if (view === "job") serving.show().catch((error) => console.error(error)); // the serving form shares the view
}

window.addEventListener("hashchange", route);
route();
