// The wfctl console: a page over the JSON API under /api/. Everything shown is built with
// text nodes (never parsed as markup): payloads and states are user data.
"use strict";

const main = () => document.getElementById("main");

/// An element with attributes and children (strings become text nodes).
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/// JSON as compact text, for table cells and state views.
function text(value) {
  if (value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value);
}

function time(value) {
  if (value && typeof value === "object" && "nanosecondsSinceEpoch" in value) {
    return new Date(value.nanosecondsSinceEpoch / 1e6).toISOString();
  }
  return value === undefined || value === null ? "" : String(value);
}

async function api(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" }, credentials: "same-origin" });
  const body = await response.json().catch(() => ({ error: { message: "the answer was not JSON", status: response.status } }));
  if (!response.ok) throw new Error(body.error ? body.error.message : "HTTP " + response.status);
  return body;
}

function show(...nodes) {
  main().replaceChildren(...nodes);
}

function failure(error) {
  return el("p", { class: "error", role: "alert" }, String(error.message || error));
}

function table(headers, rows) {
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((header) => el("th", {}, header)))),
    el("tbody", {}, rows));
}

const instanceLink = (id) => "#/instance/" + encodeURIComponent(id);
const apiInstance = (id) => "/api/instances/" + encodeURIComponent(id);

// MARK: The store line

/// What /api/store said last (whether control is allowed, the registered types).
let storeInfo = null;

/// The token this page was opened with (`/?token=`), for the control requests' header.
const tokenKey = "wfctl-console-token";
{
  const given = new URLSearchParams(location.search).get("token");
  if (given) sessionStorage.setItem(tokenKey, given);
}

async function showStore() {
  try {
    const store = await api("/api/store");
    storeInfo = store;
    document.getElementById("store").replaceChildren(
      el("span", { id: "store-location" }, store.location),
      ` · ${store.backend} · ${store.instances} instances · ${store.logEntries} entries` + (store.control ? " · control allowed" : " · read-only"));
  } catch (error) {
    document.getElementById("store").replaceChildren(failure(error));
  }
}

// MARK: Instances

const filterNames = ["status", "type", "version", "failed", "updatedSince"];

async function showInstances(parameters) {
  const form = el("form", { id: "filters", onsubmit: (event) => {
    event.preventDefault();
    const query = new URLSearchParams();
    for (const name of filterNames) {
      const value = form.elements[name].value.trim();
      if (value) query.set(name, value);
    }
    location.hash = "#/?" + query.toString();
  } },
  el("label", {}, "Status ", el("select", { name: "status" },
    ["", "running", "completed", "failed", "cancelled", "paused", "terminated"].map((status) =>
      el("option", { value: status, selected: parameters.get("status") === status }, status || "any")))),
  el("label", {}, "Type ", el("input", { name: "type", value: parameters.get("type") || "", size: 16 })),
  el("label", {}, "Version ", el("input", { name: "version", value: parameters.get("version") || "", size: 10 })),
  el("label", {}, "Failed with ", el("input", { name: "failed", value: parameters.get("failed") || "", size: 14, placeholder: "kind" })),
  el("label", {}, "Updated since ", el("input", { name: "updatedSince", value: parameters.get("updatedSince") || "", size: 12, placeholder: "15m, 2h, ISO" })),
  el("button", { type: "submit" }, "Filter"));
  const list = el("div", { id: "instances" }, el("p", {}, "Loading…"));
  const summary = el("section", { id: "summary" });
  const rates = el("section", { id: "rates" });
  const latency = el("section", { id: "latency" });
  show(el("h1", {}, "Instances"), summary, rates, latency, form, list);
  const query = new URLSearchParams();
  for (const name of [...filterNames, "after"]) if (parameters.get(name)) query.set(name, parameters.get(name));
  const load = async () => {
    try {
      const page = await api("/api/instances?" + query.toString());
      const rows = page.instances.map((instance) => el("tr", { "data-id": instance.id },
        el("td", {}, el("a", { href: instanceLink(instance.id) }, instance.id)),
        el("td", {}, instance.workflowType),
        el("td", { class: "status " + instance.status }, instance.status),
        el("td", {}, instance.codeVersion || "-"),
        el("td", { class: "number" }, instance.lastSequence),
        el("td", {}, time(instance.updated)),
        el("td", {}, instance.failure || "")));
      const next = new URLSearchParams(query);
      if (page.next) next.set("after", page.next);
      list.replaceChildren(
        rows.length ? table(["Id", "Type", "Status", "Version", "Last seq", "Updated", "Failure"], rows)
          : el("p", { class: "empty" }, page.next ? "None in this stretch of the store: go on to the next." : "No instance matches."),
        el("p", { class: "paging" },
          parameters.get("after") ? el("a", { href: "#/?" + withoutAfter(query) }, "First page") : null, " ",
          page.next ? el("a", { id: "next-page", href: "#/?" + next.toString() }, "Next page") : null,
          ` (${page.examined} read)`));
    } catch (error) {
      list.replaceChildren(failure(error));
    }
  };
  refresh = async () => { await Promise.all([load(), showSummary(summary), showRates(rates), showLatency(latency)]); };
  await refresh();
}

/// The histogram of the store's instances by status (each bar filters the list to it), and the
/// age of the running instance that has waited longest.
async function showSummary(target) {
  try {
    const summary = await api("/api/summary");
    const largest = Math.max(1, ...Object.values(summary.counts));
    const statuses = ["running", "paused", "completed", "failed", "cancelled", "terminated"];
    target.replaceChildren(
      el("div", { class: "histogram", role: "img", "aria-label": "instances by status" }, statuses.map((status) =>
        el("a", { class: "bar-row", href: "#/?status=" + status, "data-status": status },
          el("span", { class: "bar-label" }, status),
          el("span", { class: "bar-track" }, el("span", { class: "bar " + status, "data-width": summary.counts[status] / largest })),
          el("span", { class: "bar-count" }, summary.counts[status])))),
      el("p", { id: "oldest" }, summary.oldestRunningUpdated
        ? `${summary.total} instances; the running one that has waited longest last changed ${age(summary.oldestRunningAgeSeconds)} ago (${summary.oldestRunningUpdated})`
        : `${summary.total} instances; none running`));
    // Widths set from the script (the page's policy allows no inline style attribute).
    for (const bar of target.querySelectorAll(".bar")) bar.style.width = (Number(bar.dataset.width) * 100).toFixed(1) + "%";
  } catch (error) {
    target.replaceChildren(failure(error));
  }
}

/// Commits and log entries per second over the last minutes, as lines (the server samples the
/// store's counters once a second).
async function showRates(target) {
  try {
    const answer = await api("/api/rates");
    if (answer.unavailable || answer.samples.length < 2) {
      target.replaceChildren(el("p", { class: "empty", id: "rates-note" }, answer.unavailable || "Commits per second: gathering samples…"));
      return;
    }
    const points = [];
    for (let index = 1; index < answer.samples.length; index++) {
      const before = answer.samples[index - 1], after = answer.samples[index];
      const seconds = Math.max(0.001, after.time - before.time);
      points.push({ time: after.time, commits: (after.transactions - before.transactions) / seconds, entries: (after.entries - before.entries) / seconds });
    }
    // Each rate holds from the sample before it: the first starts at the chart's left edge.
    points.unshift({ ...points[0], time: answer.samples[0].time });
    const width = 720, height = 120, left = answer.samples[0].time, span = Math.max(1, points[points.length - 1].time - left);
    const peak = Math.max(1, ...points.map((point) => Math.max(point.commits, point.entries)));
    const svg = (tag, attributes) => {
      const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
      for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
      return node;
    };
    const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "rates-chart", role: "img", "aria-label": "commits and entries per second" });
    chart.append(svg("line", { x1: 0, y1: height - 0.5, x2: width, y2: height - 0.5, class: "axis" }));
    for (const series of ["entries", "commits"]) {
      // The peak reaches 85% of the height: the lines stay clear of the frame.
      const line = points.map((point) => `${((point.time - left) / span * width).toFixed(1)},${(height - point[series] / peak * height * 0.85).toFixed(1)}`).join(" ");
      chart.append(svg("polyline", { points: line, class: "series " + series, fill: "none" }));
    }
    const last = points[points.length - 1];
    const round = (value) => value >= 100 ? Math.round(value) : value.toFixed(1);
    target.replaceChildren(
      el("p", { id: "rates-legend" },
        el("span", { class: "key commits" }, `commits/s ${round(last.commits)}`), " ",
        el("span", { class: "key entries" }, `entries/s ${round(last.entries)}`),
        ` · peak ${round(peak)} over the last ${Math.round(span / 60) || 1} min`),
      chart);
  } catch (error) {
    target.replaceChildren(failure(error));
  }
}

/// The engine's latency percentiles over the last five minutes, where the console runs inside the
/// service (elsewhere the server says why there are none).
async function showLatency(target) {
  try {
    const answer = await api("/api/latency?minutes=5");
    if (answer.unavailable) {
      target.replaceChildren(el("p", { class: "empty", id: "latency-note" }, "Latency: " + answer.unavailable));
      return;
    }
    const micros = (value) => value == null ? "-" : value >= 1000 ? (value / 1000).toFixed(value >= 10000 ? 0 : 1) + " ms" : Math.round(value) + " µs";
    const rows = answer.timers.map((timer) => el("tr", { "data-label": timer.label },
      el("td", {}, timer.name), el("td", { class: "number" }, timer.count),
      el("td", { class: "number" }, micros(timer.p50)), el("td", { class: "number" }, micros(timer.p90)),
      el("td", { class: "number" }, micros(timer.p99)), el("td", { class: "number" }, micros(timer.max))));
    target.replaceChildren(el("h2", {}, `Latency, last ${answer.minutes} min`), table(["Timer", "Count", "p50", "p90", "p99", "Max"], rows));
  } catch (error) {
    target.replaceChildren(failure(error));
  }
}

function age(seconds) {
  if (seconds < 90) return Math.round(seconds) + " s";
  if (seconds < 5400) return Math.round(seconds / 60) + " min";
  if (seconds < 172800) return (seconds / 3600).toFixed(1) + " h";
  return (seconds / 86400).toFixed(1) + " days";
}

function withoutAfter(query) {
  const copy = new URLSearchParams(query);
  copy.delete("after");
  return copy.toString();
}

// MARK: One instance

async function showInstance(id, parameters) {
  show(el("h1", {}, id), el("p", {}, "Loading…"));
  let described;
  try {
    described = await api(apiInstance(id));
  } catch (error) {
    show(el("h1", {}, id), failure(error));
    return;
  }
  const last = described.instance.lastSequence;
  const details = el("div", { id: "details" });
  const at = clamp(Number(parameters.get("at")) || last, 1, last);
  const diff = parameters.get("diff") ? clamp(Number(parameters.get("diff")), 0, last) : Math.max(0, at - 1);
  const travel = el("section", { id: "travel" }, el("h2", {}, "State at a sequence"));
  const timeline = el("section", { id: "timeline" }, el("h2", {}, "Timeline"));
  show(el("h1", {}, id), details, travel, timeline);
  renderDetails(details, described);
  const slider = showTravel(travel, id, last, at, diff, described.waitsKnown);
  const follow = !parameters.get("from");
  const timelineBody = el("div", {});
  timeline.append(timelineBody);
  showTimeline(timelineBody, id, Number(parameters.get("from")) || Math.max(1, last - 99), parameters);
  // Live: the record, the waits and the requests again; the timeline's last page when it is
  // shown; the slider reaches the new entries. The state shown stays where the operator put it.
  refresh = async () => {
    try {
      const now = await api(apiInstance(id));
      renderDetails(details, now);
      if (slider) {
        for (const input of slider) input.max = now.instance.lastSequence;
      }
      if (follow) showTimeline(timelineBody, id, Math.max(1, now.instance.lastSequence - 99), parameters);
    } catch (error) {
      details.replaceChildren(failure(error));
    }
  };
}

function renderDetails(target, described) {
  const instance = described.instance;
  const record = table(["Field", "Value"], [
    ["type", instance.workflowType], ["status", instance.status], ["code version", instance.codeVersion || "-"],
    ["last sequence", instance.lastSequence], ["snapshot", instance.lastSnapshot || "-"], ["created", time(instance.created)],
    ["updated", time(instance.updated)], ["failed with", instance.failure], ["paused", described.control.paused ? "yes" : "no"],
  ].filter((row) => row[1] !== undefined && row[1] !== null).map(([field, value]) =>
    el("tr", { "data-field": field }, el("th", {}, field), el("td", {}, String(value)))));
  const waits = described.waitsKnown
    ? (described.waits.length
      ? table(["Node", "Kind", "Key", "Due", "Detail", "Idempotency key"], described.waits.map((wait) => el("tr", {},
        el("td", {}, wait.node), el("td", {}, wait.kind), el("td", {}, wait.key), el("td", {}, wait.due || ""),
        el("td", {}, wait.signal || (wait.attempt ? "attempt " + wait.attempt : "") || wait.workerType || ""),
        el("td", { class: "key" }, wait.idempotencyKey))))
      : el("p", {}, "Nothing."))
    : el("p", { class: "empty" }, described.waitsError
      ? "Unknown: its replay failed: " + described.waitsError
      : "Unknown: the tool serving this console does not register " + instance.workflowType + ".");
  const requests = described.requests.length
    ? table(["#", "Verb", "Requested", "By", "Outcome", "Entry", "Detail"], described.requests.map((request) => el("tr", {},
      el("td", {}, request.number), el("td", {}, request.verb), el("td", {}, request.requested), el("td", {}, request.requestedBy),
      el("td", {}, request.outcome || "pending"), el("td", {}, request.sequence || "-"), el("td", {}, request.detail || request.reason || ""))))
    : el("p", {}, "None.");
  const actions = storeInfo && storeInfo.control
    ? el("section", { id: "actions" }, el("h2", {}, "Act on it"),
      el("p", {}, [...(instance.status === "failed" ? ["resume"] : []), "pause", "unpause", "cancel", "terminate", "delete"].map((verb) =>
        el("button", { type: "button", "data-verb": verb, onclick: () => control(instance.id, verb) }, verb)),
        " ", el("button", { type: "button", "data-verb": "fork", onclick: () => fork(instance.id, instance.lastSequence) }, "fork…")),
      el("p", { id: "control-result", role: "status" }, lastControl && lastControl.id === instance.id ? lastControl.message : null))
    : null;
  target.replaceChildren(el("section", { id: "record" }, record), actions,
    el("section", {}, el("h2", {}, "Waits"), waits),
    el("section", {}, el("h2", {}, "Control requests"), requests));
}

/// A paused copy of the instance's first entries (as `wfctl fork`), under a new id; the answer
/// links to it.
async function fork(id, last) {
  const shown = document.getElementById("at");
  const at = prompt(`Fork ${id}: keep its entries 1 to`, shown ? shown.value : String(last));
  if (at === null) return;
  const newID = prompt(`Fork ${id} at ${at} as`, `${id}-at-${at}`);
  if (newID === null) return;
  let message;
  try {
    const response = await fetch(apiInstance(id) + "/control", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + (sessionStorage.getItem(tokenKey) || "") },
      body: JSON.stringify({ verb: "fork", at: Number(at), as: newID }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : "HTTP " + response.status);
    message = `forked: ${body.detail} (${body.instance})`;
  } catch (error) {
    message = `fork failed: ${error.message || error}`;
  }
  lastControl = { id, message };
  if (refresh) await refresh();
}

/// The answer to the last control request, shown with its instance (its view is rebuilt live).
let lastControl = null;

/// A control verb, after the operator confirms it (and gives a reason, kept with the request):
/// recorded in the store and answered by the host that runs the instance, as `wfctl VERB` does.
async function control(id, verb) {
  const reason = prompt(`${verb} ${id}? A reason, kept with the request (Cancel: do nothing)`, "");
  if (reason === null) return;
  document.getElementById("control-result").textContent = verb + "…";
  lastControl = null;
  let message;
  try {
    const response = await fetch(apiInstance(id) + "/control", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + (sessionStorage.getItem(tokenKey) || "") },
      body: JSON.stringify({ verb, reason }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(body.error ? body.error.message : "HTTP " + response.status);
    message = `${verb}: ${body.outcome}` + (body.sequence ? ` as entry ${body.sequence}` : "") + ` (${body.detail}` +
      (body.answeredBy ? `; by ${body.answeredBy})` : ")");
  } catch (error) {
    message = `${verb} failed: ${error.message || error}`;
  }
  lastControl = { id, message };
  if (refresh) await refresh();
}

function clamp(value, low, high) {
  return Math.min(high, Math.max(low, Math.round(value)));
}

/// The time travel: a slider over the sequence, the state tree there, and what changed from
/// another point, field by field.
function showTravel(section, id, last, at, diff, known) {
  if (!known) {
    section.append(el("p", { class: "empty" }, "Needs the instance's workflow type registered in the tool serving this console (wfctl state does the same)."));
    return null;
  }
  const slider = el("input", { type: "range", id: "at-slider", min: 1, max: last, value: at });
  const atInput = el("input", { type: "number", id: "at", min: 1, max: last, value: at, size: 6 });
  const diffInput = el("input", { type: "number", id: "diff", min: 0, max: last, value: diff, size: 6 });
  const result = el("div", { id: "state" });
  const go = () => {
    const parameters = new URLSearchParams(location.hash.split("?")[1] || "");
    parameters.set("at", atInput.value);
    parameters.set("diff", diffInput.value);
    history.replaceState(null, "", instanceLink(id) + "?" + parameters.toString());
    renderState(result, id, Number(atInput.value), Number(diffInput.value));
  };
  slider.addEventListener("input", () => { atInput.value = slider.value; });
  slider.addEventListener("change", go);
  atInput.addEventListener("change", () => { slider.value = atInput.value; go(); });
  diffInput.addEventListener("change", go);
  section.append(el("div", { class: "travel-controls" },
    el("label", {}, "At ", atInput), slider, el("label", {}, " compared with ", diffInput)), result);
  renderState(result, id, at, diff);
  return [slider, atInput, diffInput];
}

async function renderState(target, id, at, diff) {
  target.replaceChildren(el("p", {}, "Replaying…"));
  try {
    const answer = await api(apiInstance(id) + "/state?at=" + at + "&diff=" + diff);
    const changes = answer.diff ? answer.diff.changes : [];
    target.replaceChildren(
      el("h3", {}, `Changes from ${answer.diff ? answer.diff.from : "-"} to ${answer.state.sequence}`),
      changes.length
        ? table(["Node", "Field", "Change", "Before", "After"], changes.map((change) => el("tr", { class: "change " + change.change },
          el("td", {}, change.node), el("td", { class: "field" }, change.field || "(all)"), el("td", {}, change.change),
          el("td", {}, el("code", {}, text(change.before))), el("td", {}, el("code", {}, text(change.after))))))
        : el("p", { id: "no-changes" }, "No change."),
      el("h3", {}, `Tree at ${answer.state.sequence} (digest ${answer.state.digest})`),
      table(["Node", "State"], answer.state.nodes.map((node) => el("tr", {},
        el("td", {}, node.path), el("td", {}, el("pre", {}, node.state === undefined ? "(not JSON)" : JSON.stringify(node.state, null, 2)))))));
  } catch (error) {
    target.replaceChildren(failure(error));
  }
}

async function showTimeline(body, id, from, parameters) {
  try {
    const page = await api(apiInstance(id) + "/log?from=" + from + "&limit=100");
    const link = (start, label) => {
      const query = new URLSearchParams(parameters);
      query.set("from", start);
      return el("a", { href: instanceLink(id) + "?" + query.toString() }, label);
    };
    body.replaceChildren(
      table(["Seq", "Time", "Origin", "Node", "Action", "Payload"], page.entries.map((entry) => el("tr", { "data-sequence": entry.sequence },
        el("td", { class: "number" }, entry.sequence), el("td", {}, entry.time), el("td", {}, entry.origin), el("td", {}, entry.node),
        el("td", {}, entry.action + "@" + entry.version),
        el("td", {}, el("code", {}, entry.payload === undefined ? "(" + atob(entry.payloadBase64).length + " bytes, not JSON)" : text(entry.payload)))))),
      el("p", { class: "paging" }, from > 1 ? link(Math.max(1, from - 100), "Earlier") : null, " ",
        page.next ? link(page.next, "Later") : null));
  } catch (error) {
    body.replaceChildren(failure(error));
  }
}

// MARK: Signals

/// With control allowed: a form that posts a version of a signal (by id or stable name), after
/// a confirmation, as `wfctl signal post` does.
function signalPostForm(signal) {
  if (!storeInfo || !storeInfo.control) return null;
  const result = el("p", { id: "post-result", role: "status" });
  const form = el("form", { id: "post-signal", onsubmit: async (event) => {
    event.preventDefault();
    const target = form.elements.target.value.trim(), value = form.elements.value.value;
    let parsed;
    try {
      parsed = JSON.parse(value);
    } catch (error) {
      result.replaceChildren(failure(new Error("the value is not JSON: " + error.message)));
      return;
    }
    if (!confirm(`Post ${value} to ${target}?`)) return;
    const isID = /^[0-9A-Fa-f-]{36}$/.test(target);
    try {
      const response = await fetch("/api/signals/post", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", Authorization: "Bearer " + (sessionStorage.getItem(tokenKey) || "") },
        body: JSON.stringify({ [isID ? "signal" : "stableName"]: target, value: parsed, keepConsumers: form.elements.keep.checked }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error ? body.error.message : "HTTP " + response.status);
      result.textContent = `posted version ${body.version} of ${body.signal}` + (body.name ? ` (${body.name})` : "");
    } catch (error) {
      result.replaceChildren(failure(error));
    }
  } },
  el("label", {}, "Signal (id or stable name) ", el("input", { name: "target", size: 38, value: signal || "", required: true })),
  el("label", {}, " Value (JSON) ", el("input", { name: "value", size: 30, value: "{}", required: true })),
  el("label", {}, " ", el("input", { type: "checkbox", name: "keep" }), " keep consumers"),
  el("button", { type: "submit" }, "Post"));
  return el("section", {}, el("h2", {}, "Post a version"), form, result);
}

async function showSignals() {
  show(el("h1", {}, "Signals"), el("p", {}, "Loading…"));
  try {
    const signals = await api("/api/signals");
    show(el("h1", {}, "Signals"), signalPostForm(null), signals.length
      ? table(["Signal", "Name", "Latest", "Retained", "Consumers", "Updated"], signals.map((signal) => el("tr", {},
        el("td", {}, el("a", { href: "#/signal/" + encodeURIComponent(signal.id) }, signal.id)), el("td", {}, signal.name || "-"),
        el("td", { class: "number" }, signal.latestVersion), el("td", {}, signal.retainedVersions.join(", ")),
        el("td", { class: "number" }, signal.consumers), el("td", {}, signal.updated))))
      : el("p", { class: "empty" }, "The store has no signals."));
  } catch (error) {
    show(el("h1", {}, "Signals"), failure(error));
  }
}

async function showSignal(id) {
  show(el("h1", {}, "Signal " + id), el("p", {}, "Loading…"));
  try {
    const detail = await api("/api/signals/" + encodeURIComponent(id));
    show(el("h1", {}, "Signal " + id + (detail.signal && detail.signal.name ? " (" + detail.signal.name + ")" : "")),
      signalPostForm(id),
      el("h2", {}, "Versions"),
      table(["Version", "Posted", "Terminates", "Payload"], detail.versions.map((version) => el("tr", {},
        el("td", { class: "number" }, version.version), el("td", {}, version.posted), el("td", {}, version.terminates ? "yes" : "no"),
        el("td", {}, el("code", {}, text(version.payload)))))),
      el("h2", {}, "Consumers"),
      table(["Consumer", "Owner", "Process", "Behaviour", "Delivered", "Pending"], detail.consumers.map((consumer) => {
        const pending = detail.pending.find((delivery) => delivery.consumer.id === consumer.id);
        return el("tr", {}, el("td", {}, consumer.id), el("td", {}, consumer.owner), el("td", {}, consumer.processIdentity),
          el("td", {}, consumer.behaviour), el("td", { class: "number" }, consumer.lastDelivered),
          el("td", {}, pending ? pending.versions.join(", ") : "-"));
      })));
  } catch (error) {
    show(el("h1", {}, "Signal " + id), failure(error));
  }
}

// MARK: Routing and live updates

/// What the view on screen reads again when the store changes (set by each view).
let refresh = null;

function route() {
  refresh = null;
  const [path, query] = (location.hash.slice(1) || "/").split("?");
  const parameters = new URLSearchParams(query || "");
  if (path.startsWith("/instance/")) return showInstance(decodeURIComponent(path.slice("/instance/".length)), parameters);
  if (path.startsWith("/signal/")) return showSignal(decodeURIComponent(path.slice("/signal/".length)));
  if (path === "/signals") return showSignals();
  return showInstances(parameters);
}

/// One event stream from the server: each `change` (the store committed something) reads the
/// view on screen again, at most about four times a second.
function listen() {
  const live = document.getElementById("live");
  const events = new EventSource("/api/events");
  let pending = null;
  events.addEventListener("open", () => { live.textContent = "live"; live.className = "live"; });
  events.addEventListener("error", () => { live.textContent = "offline"; live.className = "offline"; });
  events.addEventListener("change", () => {
    if (pending || !refresh) return;
    pending = setTimeout(async () => {
      pending = null;
      if (refresh) await refresh();
      showStore();
    }, 250);
  });
}

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", async () => {
  await showStore();
  route();
  listen();
});
