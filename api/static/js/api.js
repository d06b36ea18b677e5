// Fetch helpers for the tracker's JSON API: errors carry the status and the server's detail.

export class ApiError extends Error {
  constructor(status, body) {
    super(ApiError.describe(status, body));
    this.status = status;
    this.body = body;
  }

  // FastAPI detail is a string, or a list of {loc, msg} for validation errors.
  static describe(status, body) {
    const detail = body && body.detail;
    let text;
    if (Array.isArray(detail)) {
      text = detail.map((d) => `${(d.loc || []).filter((p) => p !== "body").join(".")}: ${d.msg}`).join("; ");
    } else {
      text = detail || `HTTP ${status}`;
    }
    if (body && Array.isArray(body.suggestions) && body.suggestions.length) {
      text += ` (did you mean ${body.suggestions.slice(0, 5).join(", ")}?)`;
    }
    return text;
  }
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const v of Array.isArray(value) ? value : [value]) q.append(key, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

async function parse(response) {
  const type = response.headers.get("content-type") || "";
  const body = type.includes("json") ? await response.json() : { detail: await response.text() };
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export async function getJSON(path, params, headers) {
  return parse(await fetch(path + query(params), { headers: { accept: "application/json", ...(headers || {}) } }));
}

export async function postJSON(path, body) {
  return parse(await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  }));
}
