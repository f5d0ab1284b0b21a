// deadbolt's status page: follows /events (server-sent events, one JSON
// state per push) and renders it. No dependencies, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
let state = null;

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function ms(n) {
  if (n === undefined || n === null || n < 0) return "—";
  if (n < 1000) return n + " ms";
  if (n < 60000) return (n / 1000).toFixed(1) + " s";
  return Math.round(n / 60000) + " min";
}

function clock(t) {
  const d = new Date(t);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function renderMembers(s) {
  const body = $("members").tBodies[0];
  body.replaceChildren();
  for (const m of s.members) {
    const tr = el("tr");
    tr.dataset.id = m.id;
    if (m.role === "Leader") tr.classList.add("leader");
    if (m.self) tr.classList.add("self");
    const cells = [m.id + (m.self ? " (this node)" : ""), m.role || "?", m.term || "—", m.last_index || "—",
      m.commit_index || "—", m.applied_index || "—", m.role ? m.lag : "—", m.role === "Leader" ? "—" : ms(m.last_contact_ms)];
    for (const c of cells) tr.append(el("td", c));
    tr.append(el("td", m.health, "h-" + m.health.replace(" ", "-")));
    tr.append(el("td", m.resp_addr || ""));
    body.append(tr);
  }
}

function holders(l) {
  return (l.holders || []).map((h) => h.id + (h.count > 1 ? "×" + h.count : "")).join(", ");
}

function renderLocks(s) {
  const f = $("filter").value.trim().toLowerCase();
  const body = $("locks").tBodies[0];
  body.replaceChildren();
  let shown = 0;
  for (const l of s.locks) {
    const text = (l.name + " " + l.kind + " " + holders(l)).toLowerCase();
    if (f && !text.includes(f)) continue;
    shown++;
    const tr = el("tr");
    tr.append(el("td", l.name, "wrap"), el("td", l.kind + (l.mode ? " (" + l.mode + ")" : "")),
      el("td", holders(l), "wrap"), el("td", l.waiters < 0 ? "polls" : l.waiters),
      el("td", (l.queue || []).length), el("td", ms(l["lease-ms"])),
      el("td", l["held-since-ms"] > 0 ? ms(s.time_ms - l["held-since-ms"]) : "—"));
    body.append(tr);
  }
  let count = shown + " of " + s.locks.length;
  if (s.locks.length >= s.locks_limit) count += " (the first " + s.locks_limit + "; /api/locks?match= searches them all)";
  $("lockcount").textContent = count;
  $("lockerr").textContent = s.locks_error ? "lock list: " + s.locks_error + (s.locks_age_ms ? " (showing the list of " + ms(s.locks_age_ms) + " ago)" : "") : "";
}

function renderTimeline(s) {
  const ol = $("timeline");
  ol.replaceChildren();
  for (const e of s.timeline.slice().reverse()) {
    const li = el("li");
    li.dataset.kind = e.kind;
    li.dataset.leader = e.leader;
    li.append(el("time", clock(e.time_ms)), el("span", e.reason, "k-" + e.kind));
    ol.append(li);
  }
}

function render(s) {
  if (!s || !s.members) return;
  state = s;
  $("node").textContent = s.node;
  $("role").textContent = s.role;
  $("leader").textContent = s.leader || "none";
  $("term").textContent = s.single ? "—" : s.term;
  $("ready").textContent = s.ready ? "ready" : "not ready: " + s.ready_reason;
  renderMembers(s);
  renderLocks(s);
  renderTimeline(s);
}

function connect() {
  const es = new EventSource("events");
  es.onopen = () => { $("conn").textContent = "live"; $("conn").className = "conn live"; };
  es.onmessage = (m) => {
    try { render(JSON.parse(m.data)); } catch (e) { /* a partial or empty push */ }
  };
  es.onerror = () => { $("conn").textContent = "reconnecting…"; $("conn").className = "conn down"; };
}

$("filter").addEventListener("input", () => { if (state) renderLocks(state); });
connect();
