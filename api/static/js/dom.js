// Small DOM builders: every page element is created with these, never with innerHTML, so API text
// can never become markup.

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

export function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  return node;
}

export function showError(node, error) {
  node.hidden = !error;
  node.textContent = error ? (error.message || String(error)) : "";
}

export function table(node, columns, rows, rowAttrs) {
  // columns: [{label, cell: row => content, num?, opt?, wrap?}]
  clear(node);
  const cls = (c) => [c.num && "num", c.opt && "opt", c.wrap && "wrap"].filter(Boolean).join(" ") || undefined;
  node.append(el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: cls(c), scope: "col" }, c.label)))));
  node.append(el("tbody", {}, rows.map((r) =>
    el("tr", rowAttrs ? rowAttrs(r) : {}, columns.map((c) => el("td", { class: cls(c) }, c.cell(r)))))));
}

export function badge(kind, text, title) {
  return el("span", { class: `badge ${kind}`, title }, text);
}
