// The streamfn gateway's dashboard: no framework, no build step, nothing fetched
// but this server's own /admin routes. Every value that came from a client or an
// upstream (model and key names, error messages, events) is put in the page as text
// (textContent, attribute values), never parsed as HTML.
"use strict";

const KEY_SLOT = "streamfn-admin-key";
const SVG = "http://www.w3.org/2000/svg";
const COLORS = 8;
const $ = (id) => document.getElementById(id);
const timers = [];

function adminKey() {
  return sessionStorage.getItem(KEY_SLOT) || "";
}

// A GET of an admin route as JSON; a refused key sends the page back to the login.
async function api(path) {
  const response = await fetch(path, { headers: { Authorization: "Bearer " + adminKey() } });
  if (response.status === 401 || response.status === 403) {
    logout(await errorText(response));
    throw new Error("refused");
  }
  if (!response.ok) throw new Error(await errorText(response));
  return response.json();
}

async function errorText(response) {
  try {
    const body = await response.json();
    return (body.error && body.error.message) || response.statusText;
  } catch (_) {
    return response.status + " " + response.statusText;
  }
}

// An element with its text (never HTML) and, optionally, a class.
function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}

function fillRows(tbody, rows) {
  tbody.replaceChildren(
    ...rows.map((cells) => {
      const tr = document.createElement("tr");
      for (const cell of cells) tr.append(cell instanceof Node ? cell : el("td", cell));
      return tr;
    })
  );
}

const seconds = (value) => (value === null || value === undefined ? "" : value.toFixed(2));
const keyLabel = (row) => (row.key_id ? (row.key_name ? row.key_name + " (" + row.key_id + ")" : row.key_id) : "");
const money = (value) => "$" + (value >= 1 ? value.toFixed(2) : value.toPrecision(3));

// -- streams in flight ----------------------------------------------------------------
async function refreshFlights() {
  const answer = await api("/admin/api/flights");
  const rows = answer.flights;
  $("flights-count").textContent = "(" + (rows.length + answer.not_shown) + ")";
  $("flights-empty").hidden = rows.length > 0;
  const notes = [];
  if (answer.not_shown) notes.push(answer.not_shown + " more not listed.");
  if (!answer.whole) notes.push("Only " + answer.workers + " of the server's workers answered: the list may be short.");
  $("flights-note").textContent = notes.join(" ");
  fillRows(
    $("flights").tBodies[0],
    rows.map((f) => [
      f.id,
      f.route,
      f.model,
      keyLabel(f),
      seconds(f.age),
      seconds(f.first_token),
      f.deltas_per_second === null ? "" : f.deltas_per_second.toFixed(1),
      f.usage ? f.usage.input + " in / " + f.usage.output + " out" : f.deltas + " deltas",
      f.worker,
    ])
  );
}

// -- charts -----------------------------------------------------------------------------
// Stacked bars, one column per hour or day, one colour per series; each bar carries its
// series, column and value as data attributes and says them in its <title>.
function drawChart(chart, legend, usage, series, field, format) {
  const width = 600, height = 220, left = 56, bottom = 22, top = 8;
  chart.setAttribute("viewBox", "0 0 " + width + " " + height);
  chart.replaceChildren();
  legend.replaceChildren();
  const columns = usage.labels.length;
  const totals = new Array(columns).fill(0);
  for (const s of series) s[field].forEach((v, i) => (totals[i] += v));
  const max = Math.max(0, ...totals);
  if (max === 0) {
    chart.append(Object.assign(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "nodata" }), { textContent: "no usage in this window" }));
    return;
  }
  const plot = height - top - bottom;
  const step = (width - left) / columns;
  chart.append(svg("line", { x1: left, y1: top + plot, x2: width, y2: top + plot, class: "axis" }));
  const scale = svg("text", { x: left - 4, y: top + 10, "text-anchor": "end", class: "max" });
  scale.textContent = format(max);
  chart.append(scale);
  for (const [i, at] of [[0, "start"], [columns - 1, "end"]]) {
    const label = svg("text", { x: i === 0 ? left : width, y: height - 6, "text-anchor": at });
    label.textContent = usage.labels[i];
    chart.append(label);
  }
  const stacked = new Array(columns).fill(0);
  series.forEach((s, n) => {
    const color = "s" + (n % COLORS);
    s[field].forEach((value, i) => {
      if (!(value > 0)) return;
      const h = (value / max) * plot;
      stacked[i] += h;
      const bar = svg("rect", {
        x: left + i * step + 1, y: top + plot - stacked[i], width: Math.max(1, step - 2), height: h,
        class: "bar " + color, "data-series": s.label, "data-bucket": usage.labels[i], "data-value": value,
      });
      const title = svg("title");
      title.textContent = s.label + ", " + usage.labels[i] + ": " + format(value);
      bar.append(title);
      chart.append(bar);
    });
    const item = el("li", null, color);
    item.append(el("span", s.label + " " + format(s[field].reduce((a, b) => a + b, 0))));
    legend.append(item);
  });
}

async function refreshUsage() {
  const [span, bucket] = $("window").value.split(":");
  const since = Math.floor(Date.now() / 1000) - Number(span);
  const usage = await api("/admin/api/usage?since=" + since + "&bucket=" + bucket);
  const note = $("usage-note");
  if (!usage.store) {
    note.textContent = usage.message;
    return;
  }
  const notes = usage.partial ? ["Only the newest records were read: the oldest hours are short."] : [];
  if (usage.estimated_cost > 0) {
    notes.push(money(usage.estimated_cost) + " of this spend is estimated: upstreams that reported no usage.");
  }
  note.textContent = notes.join(" ");
  const tokens = (v) => Math.round(v).toLocaleString("en");
  for (const [by, series] of [["key", usage.by_key], ["model", usage.by_model]]) {
    drawChart($("chart-cost-" + by), $("legend-cost-" + by), usage, series, "cost", money);
    drawChart($("chart-tokens-" + by), $("legend-tokens-" + by), usage, series, "tokens", tokens);
  }
}

// -- deployments and errors ---------------------------------------------------------------
async function refreshDeployments() {
  const report = await api("/admin/api/deployments");
  const table = $("deployments");
  $("deployments-note").textContent = report.available
    ? report.error || (report.deployments.length ? "" : "No deployments reported.")
    : "This server's backend has no deployment pools.";
  table.hidden = !report.deployments.length;
  const columns = [...new Set(report.deployments.flatMap((d) => Object.keys(d)))];
  table.tHead.rows[0].replaceChildren(...columns.map((c) => el("th", c)));
  fillRows(
    table.tBodies[0],
    report.deployments.map((d) => columns.map((c) => (typeof d[c] === "object" && d[c] !== null ? JSON.stringify(d[c]) : d[c] ?? "")))
  );
}

async function refreshErrors() {
  const answer = await api("/admin/api/errors");
  const rows = answer.errors;
  $("errors-empty").hidden = rows.length > 0;
  $("errors-note").textContent = answer.whole
    ? ""
    : "This worker's errors since it started (the server keeps no usage store to read every worker's from).";
  fillRows(
    $("errors").tBodies[0],
    rows.map((e) => [
      new Date(e.at * 1000).toISOString().replace("T", " ").slice(0, 19),
      e.model,
      keyLabel(e),
      e.outcome,
      el("td", e.message ?? "(not kept: another worker or an earlier run served it)", "message"),
    ])
  );
}

// -- playground ------------------------------------------------------------------------------
async function loadModels() {
  const models = await api("/admin/api/models");
  $("model").replaceChildren(...models.map((m) => Object.assign(el("option", m), { value: m })));
}

function showEvent(type, data) {
  const item = el("li", null, "event");
  item.dataset.type = type;
  item.append(el("span", type, "type"));
  let shown = data;
  try {
    const event = JSON.parse(data);
    shown = typeof event.delta === "string" ? event.delta : JSON.stringify(event);
  } catch (_) {}
  item.append(el("span", shown, "data"));
  $("events").append(item);
}

async function runPlayground(submit) {
  submit.preventDefault();
  const status = $("playground-status");
  $("events").replaceChildren();
  $("send").disabled = true;
  status.textContent = "sending…";
  try {
    const response = await fetch("/admin/api/playground", {
      method: "POST",
      headers: { Authorization: "Bearer " + adminKey(), "Content-Type": "application/json" },
      body: JSON.stringify({
        model: $("model").value,
        context: { messages: [{ type: "user", content: $("prompt").value }] },
      }),
    });
    if (!response.ok) {
      status.textContent = "refused (" + response.status + "): " + (await errorText(response));
      return;
    }
    status.textContent = "streaming…";
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let type = "", data = "";
        for (const line of frame.split("\n")) {
          if (line.startsWith("event: ")) type = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (type) showEvent(type, data);
      }
    }
    status.textContent = "done";
  } catch (error) {
    status.textContent = "failed: " + error.message;
  } finally {
    $("send").disabled = false;
    refreshErrors().catch(() => {}); // an answer that failed shows at once
  }
}

// -- login and refresh -------------------------------------------------------------------------
function every(ms, fn) {
  const run = () => fn().catch((error) => console.warn(error.message));
  run();
  timers.push(setInterval(run, ms));
}

function start() {
  $("login").hidden = true;
  $("panels").hidden = false;
  $("logout").hidden = false;
  every(1000, refreshFlights);
  every(5000, refreshErrors);
  every(5000, refreshDeployments);
  every(30000, refreshUsage);
  loadModels().catch((error) => ($("playground-status").textContent = error.message));
}

function logout(reason) {
  sessionStorage.removeItem(KEY_SLOT);
  timers.splice(0).forEach(clearInterval);
  $("panels").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = reason || "";
}

async function login(submit) {
  submit.preventDefault();
  sessionStorage.setItem(KEY_SLOT, $("key").value);
  $("key").value = "";
  try {
    await api("/admin/api/flights");
  } catch (error) {
    if (error.message !== "refused") $("login-error").textContent = error.message;
    return; // a refused key: api() has shown why
  }
  $("login-error").textContent = "";
  start();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", login);
  $("logout").addEventListener("click", () => logout(""));
  $("playground").addEventListener("submit", runPlayground);
  $("window").addEventListener("change", () => refreshUsage().catch(() => {}));
  if (adminKey()) start();
});
