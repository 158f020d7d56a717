/*
 * dashboard.js - the atoll dashboard's page logic (doc/dashboard.md).
 *
 * Polls /api/status?since=T of the monitor that served the page every
 * 2 s (the first time T = 0: every sample of the last minutes the leader
 * kept; then only the newer ones) and redraws every section from it.  Rates are computed here from
 * successive samples of counters (objects recovered, bytes stored, and
 * whatever the status command reports under client_io), so the charts
 * need nothing from the monitor but its state.  Data is only ever put in
 * the page as text (textContent), never as HTML.
 *
 * When this monitor stops leading, its /api/status redirects to the
 * leader, on another origin, which the browser refuses to follow for a
 * script: the page then asks /api/leader (of this monitor, or of the
 * others it knows from the last snapshot) and moves to the leader.
 */
"use strict";

const POLL_MS = 2000;
const WINDOW_MS = 10 * 60 * 1000;
const COLORS = ["#2f6fdb", "#c0392b", "#1f8a4c", "#8e44ad", "#c98400", "#16a085"];

const state = {
  samples: [],          /* [{t, ...}] oldest first, t in ms */
  dashboards: [],       /* every monitor's dashboard URL (last snapshot) */
  peak: 0,              /* largest degraded+misplaced of this recovery */
  failures: 0,
};

/* ---- small DOM helpers ------------------------------------------------ */

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "style") Object.assign(e.style, v);  /* CSSOM: allowed by the CSP */
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function replace(id, ...children) {
  const box = document.getElementById(id);
  box.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
}

function bytes(n) {
  if (n === undefined || n === null || isNaN(n)) return "-";
  const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : Math.round(n)) + " " + u[i];
}

function num(n, digits) {
  if (n === undefined || n === null || isNaN(n)) return "-";
  if (Math.abs(n) >= 1e6) return (n / 1e6).toFixed(1) + "M";
  if (Math.abs(n) >= 1e4) return (n / 1e3).toFixed(1) + "k";
  return digits ? n.toFixed(digits) : String(Math.round(n));
}

function duration(s) {
  s = Math.round(s);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

/* A bar filled to frac; full is red when fullIsBad (space used). */
function bar(frac, label, big, fullIsBad) {
  const f = Math.max(0, Math.min(1, frac || 0));
  const fill = el("div", { style: { width: (f * 100).toFixed(1) + "%" } });
  if (fullIsBad && f > 0.85) fill.style.background = "#c62828";
  return el("div", { class: big ? "bar big" : "bar" }, fill, el("span", {}, label));
}

/* ---- sections ----------------------------------------------------------- */

function renderHeader(s) {
  const st = s.status || {};
  const health = (s.health && s.health.status) || st.health || "unknown";
  const badge = document.getElementById("health-status");
  badge.textContent = health;
  badge.className = "badge " + health;
  document.body.dataset.health = health;
  const osds = st.osds || {};
  const u = st.usage || {};
  document.getElementById("summary").textContent =
    `${osds.up ?? "?"}/${osds.total ?? "?"} OSDs up, ${osds.in ?? "?"} in · ` +
    `${st.pools ?? "?"} pools · ${bytes(u.used)} used of ${bytes(u.total)} · ` +
    `map epoch ${st.epoch ?? "?"} · served by mon.${s.monitor}`;
  document.getElementById("updated").textContent =
    "updated " + new Date(s.generated_ms).toLocaleTimeString();
}

function renderHealth(h) {
  const checks = (h && h.checks) || [];
  if (!checks.length) {
    replace("health-checks", el("p", { class: "ok-line" }, "HEALTH_OK: no check raised"));
    return;
  }
  replace("health-checks", ...checks.map((c) => {
    /* the first lines, the others folded (a check can name every PG) */
    const lines = c.detail || [];
    const details = lines.slice(0, 5).map((d) => el("li", {}, d));
    if (lines.length > 5)
      details.push(el("li", {}, el("details", {}, el("summary", {}, (lines.length - 5) + " more"),
        el("ul", {}, ...lines.slice(5).map((d) => el("li", {}, d))))));
    return el("div", { class: "check " + c.severity, id: "check-" + c.code, "data-code": c.code },
      el("div", {}, el("span", { class: "code" }, c.code), " ", c.summary),
      el("div", { class: "fix" }, "What to do: ", el("code", {}, c.fix)),
      el("div", { class: "muted" }, "See " + c.doc),
      details.length ? el("ul", {}, ...details) : null);
  }));
}

function renderOsds(t) {
  const body = document.querySelector("#osd-tree tbody");
  const rows = [];
  for (const h of (t && t.hosts) || []) {
    rows.push(el("tr", { class: "host" },
      el("td", { colspan: "8" }, (h.name || "(not booted)") + "  weight " + num(h.weight, 2))));
    for (const o of h.osds || []) {
      const used = o.used_bytes || 0, total = o.total_bytes || 0;
      rows.push(el("tr", { id: "osd-" + o.id, "data-status": o.status, "data-in": String(o.in) },
        el("td", {}, "osd." + o.id),
        el("td", {}, h.name),
        el("td", { class: o.status === "up" ? "up" : "down" }, o.status),
        el("td", { class: o.in ? "" : "out" }, o.in ? "in" : "out"),
        el("td", {}, num(o.weight, 2)),
        el("td", {}, num(o.reweight, 2)),
        el("td", {}, total ? bar(used / total, bytes(used) + " / " + bytes(total), false, true) :
          el("span", { class: "muted" }, "no beacon")),
        el("td", { class: "muted" }, o.addr || "")));
    }
  }
  body.replaceChildren(...rows);
}

function renderPools(pools) {
  const body = document.querySelector("#pools tbody");
  body.replaceChildren(...(pools || []).map((p) => el("tr", { id: "pool-" + p.name },
    el("td", {}, p.name), el("td", {}, p.id), el("td", {}, p.size), el("td", {}, p.min_size),
    el("td", {}, p.pg_num),
    el("td", { class: p.pgs_clean === p.pg_num ? "up" : "out" }, p.pgs_clean + "/" + p.pg_num),
    el("td", {}, num(p.objects)), el("td", {}, bytes(p.bytes)),
    el("td", {}, p.failure_domain))));
}

function renderPgs(pg) {
  if (!pg) return;
  const states = Object.entries(pg.states || {}).sort((a, b) => b[1] - a[1]);
  const rows = states.map(([name, n]) => el("tr", {},
    el("td", { class: name === "active+clean" ? "up" : "out" }, name), el("td", {}, n),
    el("td", {}, bar(pg.pgs ? n / pg.pgs : 0, ((pg.pgs ? n / pg.pgs : 0) * 100).toFixed(0) + "%"))));
  replace("pg-body",
    el("p", {}, `${pg.pgs} PGs, ${num(pg.recovery && pg.recovery.objects)} objects, ` +
      `${bytes(pg.bytes)} stored` + (pg.inactive ? `, ${pg.inactive} inactive (no I/O)` : "") +
      (pg.inconsistent ? `, ${pg.inconsistent} inconsistent` : "")),
    el("table", { id: "pg-states" },
      el("thead", {}, el("tr", {}, el("th", {}, "state"), el("th", {}, "PGs"), el("th", {}, "share"))),
      el("tbody", {}, ...rows)));
}

function renderRecovery(pg, status) {
  /* pg stat's recovery, with what `atoll status` adds (bytes left, bytes/s, ETA) */
  const r = Object.assign({}, (pg && pg.recovery) || {}, (status && status.recovery) || {});
  const left = (r.degraded || 0) + (r.misplaced || 0);
  if (!left && !r.unfound && !r.recovering_pgs) {
    state.peak = 0;
    replace("recovery-body", el("p", { class: "ok-line", id: "recovery-state" },
      "Nothing to recover: every object copy is in place."));
    return;
  }
  state.peak = Math.max(state.peak, left);
  const frac = state.peak ? 1 - left / state.peak : 0;
  let eta = "no recovery running";
  if (r.eta_s !== undefined) eta = "about " + duration(r.eta_s) + " left";
  else if (r.recovering_pgs) eta = "recovering, no object copied lately";
  replace("recovery-body",
    el("div", { id: "recovery-state" }, bar(frac, (frac * 100).toFixed(0) + "% of this recovery done", true)),
    el("p", {}, `${num(r.degraded)} of ${num(r.object_copies)} object copies degraded, ` +
      `${num(r.misplaced)} misplaced, ${num(r.unfound)} unfound; ` +
      `${r.recovering_pgs || 0} PGs recovering at ${num(r.objects_per_s, 1)} objects/s` +
      (r.bytes_per_s !== undefined ? ` (${bytes(r.bytes_per_s)}/s, ${bytes(r.bytes_left)} left)` : "")),
    el("p", { id: "recovery-eta" }, "ETA: " + eta));
}

function mdsLine(d, role) {
  const age = d.last_beacon_ms >= 0 ? (d.last_beacon_ms / 1000).toFixed(1) + " s ago" : "never";
  return el("tr", {}, el("td", {}, "mds." + d.name), el("td", {}, role),
    el("td", { class: d.state === "active" || d.state === "standby" ? "up" : "out" }, d.state),
    el("td", {}, d.addr), el("td", {}, age),
    el("td", {}, d.journal_segment + ":" + d.journal_seq));
}

function renderFs(m, fsinfo) {
  const fss = (m && m.filesystems) || [];
  if (!fss.length) {
    replace("fs-body", el("p", { class: "muted" }, "No MDS daemon: no file system."));
    return;
  }
  replace("fs-body", ...fss.map((fs) => {
    const rows = [];
    if (fs.active) rows.push(mdsLine(fs.active, "active"));
    for (const s of fs.standbys || []) rows.push(mdsLine(s, "standby"));
    const info = fs.active && fsinfo && (fsinfo.filesystems || []).find((x) => x.mds === fs.active.name);
    let clients;
    if (info && info.error) {
      clients = el("p", { class: "down" }, "Clients unknown: " + info.error);
    } else if (info && info.clients) {
      clients = el("div", {},
        el("p", {}, `${info.clients.length} clients connected, ${info.sessions} sessions, ` +
          `${num(info.inodes)} inodes, ${num(info.requests)} requests served`),
        info.clients.length ? el("table", { class: "fs-clients" },
          el("thead", {}, el("tr", {}, ...["client", "address", "requests", "connected for"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ...info.clients.map((c) => el("tr", {},
            el("td", {}, "client." + c.id), el("td", {}, c.addr), el("td", {}, num(c.requests)),
            el("td", {}, duration(c.connected_ms / 1000)))))) : null);
    } else if (fsinfo && fsinfo.error) {
      clients = el("p", { class: "down" }, "Clients unknown: " + fsinfo.error);
    } else {
      clients = el("p", { class: "muted" }, "Asking the active MDS for its clients…");
    }
    return el("div", { class: "fs" },
      el("p", {}, `pools ${fs.meta_pool} (metadata) + ${fs.data_pool} (data), granted in epoch ${fs.grant_epoch}` +
        (fs.active ? "" : " — NO ACTIVE MDS")),
      el("table", {}, el("thead", {}, el("tr", {}, ...["daemon", "role", "state", "address",
        "last beacon", "journal"].map((h) => el("th", {}, h)))), el("tbody", {}, ...rows)),
      clients);
  }));
}

function renderMons(q) {
  if (!q) return;
  replace("mon-body", el("p", {}, `leader mon.${q.leader}, term ${q.term}, commit index ${q.commit_index}`),
    el("table", {}, el("thead", {}, el("tr", {}, ...["monitor", "role", "address", "voter"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...(q.members || []).map((m) => el("tr", {},
        el("td", {}, "mon." + m.name), el("td", { class: m.role === "leader" ? "up" : "" }, m.role || ""),
        el("td", {}, m.addr), el("td", {}, m.voter ? "yes" : "no"))))));
}

function renderImages(im) {
  if (!im) {
    replace("images-body", el("p", { class: "muted" }, "Listing images (a worker of the monitor reads them from the OSDs)…"));
    return;
  }
  const parts = [];
  if (im.error) parts.push(el("p", { class: "down" }, "Images cannot be listed: " + im.error));
  const rows = [];
  for (const p of im.pools || []) {
    if (p.error) {
      rows.push(el("tr", {}, el("td", {}, p.pool), el("td", { colspan: "4", class: "down" }, p.error)));
      continue;
    }
    for (const i of p.images || []) {
      let lock = el("span", { class: "muted" }, "none");
      if (i.lock_owner) {
        const left = (i.lock_expires_ms - Date.now()) / 1000;
        lock = el("span", {}, "client." + i.lock_owner +
          (left > 0 ? ` (lease ${left.toFixed(0)} s left)` : " (lease expired: holder gone?)"));
      }
      rows.push(el("tr", { id: "image-" + p.pool + "-" + i.name },
        el("td", {}, p.pool), el("td", {}, i.name),
        el("td", {}, i.error ? i.error : bytes(i.size)), el("td", {}, i.snapshots ?? ""), el("td", {}, lock)));
    }
  }
  if (rows.length)
    parts.push(el("table", { id: "images" }, el("thead", {}, el("tr", {},
      ...["pool", "image", "size", "snapshots", "lock holder"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows)));
  else if (!im.error) parts.push(el("p", { class: "muted" }, "No block image in any pool."));
  parts.push(el("p", { class: "muted" }, "listed " + new Date(im.updated_ms).toLocaleTimeString() +
    " as " + im.entity));
  replace("images-body", ...parts);
}

/* ---- charts (canvas, drawn by hand) -------------------------------------- */

/* Rate of a counter between successive samples: [[t, per second]]. */
function rate(get) {
  const out = [];
  for (let i = 1; i < state.samples.length; i++) {
    const a = state.samples[i - 1], b = state.samples[i];
    const va = get(a), vb = get(b), dt = (b.t - a.t) / 1000;
    if (va === undefined || vb === undefined || dt <= 0) continue;
    out.push([b.t, Math.max(0, (vb - va) / dt)]);
  }
  return out;
}

function level(get) {
  return state.samples.filter((s) => get(s) !== undefined).map((s) => [s.t, get(s)]);
}

function latest() {
  return state.samples.length ? state.samples[state.samples.length - 1].t : Date.now();
}

function niceMax(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function drawChart(id, series, fmt) {
  const c = document.getElementById(id);
  const dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth || 560, h = c.clientHeight || 180;
  c.width = Math.round(w * dpr);
  c.height = Math.round(h * dpr);
  const g = c.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const L = 58, R = 8, T = 8, B = 20;
  /* the leader's clock, not the browser's: its samples are stamped by it */
  const now = latest(), t0 = now - WINDOW_MS;
  let max = 0, points = 0;
  for (const s of series) for (const [t, v] of s.points) if (t >= t0) { max = Math.max(max, v); points++; }
  max = niceMax(max);
  g.font = "11px sans-serif";
  g.strokeStyle = "#e3e6ec";
  g.fillStyle = "#677084";
  g.lineWidth = 1;
  for (let i = 0; i <= 4; i++) {
    const y = T + (h - T - B) * (1 - i / 4);
    g.beginPath(); g.moveTo(L, y); g.lineTo(w - R, y); g.stroke();
    g.fillText(fmt(max * i / 4), 4, y + 4);
  }
  for (let m = 0; m <= 10; m += 2) {
    const x = L + (w - L - R) * (1 - m / 10);
    g.fillText(m ? "-" + m + " min" : "now", Math.min(x - 12, w - R - 24), h - 5);
  }
  series.forEach((s, k) => {
    g.strokeStyle = s.color || COLORS[k % COLORS.length];
    g.lineWidth = 1.6;
    g.beginPath();
    let started = false;
    for (const [t, v] of s.points) {
      if (t < t0) continue;
      const x = L + (w - L - R) * (t - t0) / WINDOW_MS;
      const y = T + (h - T - B) * (1 - v / max);
      if (started) g.lineTo(x, y); else { g.moveTo(x, y); started = true; }
    }
    g.stroke();
  });
  c.dataset.points = String(points);
  c.dataset.series = String(series.length);
  const legend = document.getElementById(id.replace("chart-", "legend-"));
  legend.replaceChildren(...series.map((s, k) => {
    const last = s.points.length ? s.points[s.points.length - 1][1] : undefined;
    return el("span", {}, el("i", { style: { background: s.color || COLORS[k % COLORS.length] } }),
      s.name + ": " + (last === undefined ? "-" : fmt(last)));
  }));
}

function renderCharts() {
  const last = state.samples[state.samples.length - 1] || {};
  let client;
  const io = last.client_io;
  if (io && typeof io === "object" && Object.keys(io).some((k) => /bytes_per_s$/.test(k))) {
    /* what `atoll status` reports as client I/O ("io"): bytes per
       second charted, operations per second in the caption */
    client = Object.keys(io).filter((k) => /bytes_per_s$/.test(k)).map((k) =>
      ({ name: k.replace(/_bytes_per_s$/, "").replace(/_/g, " "),
        points: level((s) => s.client_io ? s.client_io[k] : undefined) }));
    const ops = Object.keys(io).filter((k) => /ops_per_s$/.test(k))
      .map((k) => num(io[k], io[k] < 10 ? 1 : 0) + " " + k.replace(/_ops_per_s$/, "").replace(/_/g, " ") + " op/s");
    document.getElementById("client-caption").textContent = "Client I/O" +
      (ops.length ? " — now " + ops.join(", ") : "") + (io.window_s ? ` (${io.window_s} s averages)` : "");
  } else {
    client = [{ name: "stored bytes/s", points: rate((s) => s.bytes) },
      { name: "objects/s", points: rate((s) => s.objects), color: COLORS[3] }];
    document.getElementById("client-caption").textContent = "Client writes (growth of the data stored)";
  }
  const byteish = client.some((s) => /byte/.test(s.name));
  drawChart("chart-client", client, byteish ? (v) => bytes(v) + "/s" : (v) => num(v, v < 10 ? 1 : 0));
  drawChart("chart-recovery", [
    { name: "objects recovered/s", points: rate((s) => s.recovered) },
    { name: "30 s average", points: level((s) => s.recovery_objects_per_s), color: COLORS[3] }],
    (v) => num(v, v < 10 ? 1 : 0));
  drawChart("chart-degraded", [
    { name: "degraded", points: level((s) => s.degraded), color: COLORS[1] },
    { name: "misplaced", points: level((s) => s.misplaced), color: COLORS[4] }],
    (v) => (v < 10 && v % 1 ? v.toFixed(1) : num(v)));
}

function addSamples(list) {
  for (const s of list || []) {
    const last = state.samples[state.samples.length - 1];
    if (!s || typeof s.t !== "number" || (last && s.t <= last.t)) continue;
    state.samples.push(s);
  }
  const t0 = latest() - WINDOW_MS - 60000;
  while (state.samples.length && state.samples[0].t < t0) state.samples.shift();
}

/* ---- polling and failover --------------------------------------------- */

function banner(text) {
  const b = document.getElementById("banner");
  b.textContent = text || "";
  b.hidden = !text;
}

async function askLeader(base) {
  const r = await fetch(base + "/api/leader", { cache: "no-store" });
  if (!r.ok) return null;
  const j = await r.json();
  return j.leader_url || null;
}

/* This monitor no longer answers as the leader: find the one that does. */
async function findLeader() {
  const bases = [window.location.origin, ...state.dashboards.filter((u) => u !== window.location.origin)];
  for (const b of bases) {
    try {
      const url = await askLeader(b);
      if (url && url !== window.location.origin) {
        window.location.href = url + "/";
        return true;
      }
      if (url === window.location.origin) return false;
    } catch (e) {
      /* that monitor is down too: try the next */
    }
  }
  return false;
}

function render(j) {
  const s = j.status;
  addSamples(j.history);
  state.dashboards = s.dashboards || state.dashboards;
  renderHeader(s);
  renderHealth(s.health);
  renderOsds(s.osd_tree);
  renderPools(s.pools);
  renderPgs(s.pg);
  renderRecovery(s.pg, s.status);
  renderFs(s.mds, j.fs);
  renderMons(s.quorum);
  renderImages(j.images);
  renderCharts();
}

async function poll() {
  let j = null;
  try {
    const last = state.samples[state.samples.length - 1];
    const r = await fetch("/api/status?since=" + (last ? last.t : 0), { cache: "no-store" });
    if (r.status === 503) {
      banner("This monitor has just started to lead; data follows in a moment.");
    } else if (!r.ok) {
      throw new Error("HTTP " + r.status);
    } else {
      j = await r.json();
    }
  } catch (e) {
    /* no answer, or a redirect to the leader the browser would not
       follow: find the leader (not a page error, nothing logged) */
    state.failures++;
    banner("The monitor at " + window.location.origin + " does not answer as the leader; " +
      "looking for the one that leads…");
    if (!(await findLeader()) && state.failures > 1)
      banner("No monitor answers as the leader (election under way, or the quorum is lost); retrying every 2 s.");
  }
  if (j) {
    state.failures = 0;
    banner("");
    try {
      render(j);
    } catch (e) {
      /* a bug of this page: said on the console, where tests look */
      console.error("dashboard: cannot show the data:", e);
      banner("This page cannot show the monitor's data (see the browser console).");
    }
  }
  setTimeout(poll, POLL_MS);
}

window.addEventListener("load", poll);
