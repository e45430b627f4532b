// The HCG audit page: see a causal graph, review its edges, record corrections (no network).
// Data comes from the JSON element #hcg-data (written by hcg_core/audit/view.py). Every text of
// the graph is put into the page with textContent, never parsed as HTML.
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("hcg-data").textContent);
  const V = D.variables, E = D.edges, M = D.metrics, F = D.flags;
  const SVGNS = "http://www.w3.org/2000/svg";
  const LIMIT = D.settings.neighbourhood_limit;
  const MAX_LISTED = 200;

  // ------------------------------------------------------------ indexes
  const outE = V.map(() => []), inE = V.map(() => []);
  E.forEach((e, i) => { outE[e.s].push(i); inE[e.t].push(i); });
  const varIndex = new Map(V.map((v, i) => [v.name, i]));
  const edgeIndex = new Map(E.map((e, i) => [e.id, i]));
  const metricIndex = new Map(M.map((m, i) => [m.name, i]));
  const varsOfMetric = new Map(M.map((m) => [m.name, []]));
  V.forEach((v, i) => { if (!varsOfMetric.has(v.metric)) varsOfMetric.set(v.metric, []); varsOfMetric.get(v.metric).push(i); });
  const noEv = new Set(F.no_evidence), lowConf = new Set(F.low_confidence), onCycle = new Set(F.cycle_edges), isolated = new Set(F.isolated);
  const varText = V.map((v) => (v.name + " " + v.entities.join(" ") + " " + v.description).toLowerCase());
  const mechText = E.map((e) => e.mechanism.toLowerCase());

  // ------------------------------------------------------------ review state
  const state = {
    view: null,            // {kind: "overview"|"all"|"metric"|"variable", key}
    selected: null,        // {kind: "edge"|"variable"|"metric", index or name}
    corrections: [],       // the ops, in the order made
    transform: { x: 0, y: 0, k: 1 },
    rendered: { nodes: 0, edges: 0 },
  };

  // Variables a bulk action took out: "delete_variable" or "reject_variable_edges" by name.
  function variableAction(name) {
    let action = null;
    for (const c of state.corrections) {
      if (c.variable === name && (c.op === "delete_variable" || c.op === "reject_variable_edges")) action = action === "delete_variable" ? action : c.op;
    }
    return action;
  }
  function edgeStatus(i) {
    const id = E[i].id;
    let status = null;
    for (const c of state.corrections) {
      if (c.edge === id && (c.op === "reject_edge" || c.op === "accept_edge")) status = c.op;
    }
    // A bulk action on either end rejects the edge whatever its own verdict.
    if (variableAction(V[E[i].s].name) || variableAction(V[E[i].t].name)) status = "reject_edge";
    return status;
  }
  // Why a correction of edge i would find it gone under `hcg apply` (null when it would not):
  // a bulk action on an end, or (ownToo) the edge's own rejection.
  function edgeRemovedBy(i, ownToo) {
    for (const end of [E[i].s, E[i].t]) {
      const action = variableAction(V[end].name);
      if (action) return V[end].name + (action === "delete_variable" ? " is deleted" : ": every edge rejected");
    }
    if (ownToo && edgeStatus(i) === "reject_edge") return "the edge is rejected";
    return null;
  }
  // The edge verdict or edit, unless an earlier correction removes the edge (said instead).
  function edgeCorrection(i, op, ownToo) {
    const why = edgeRemovedBy(i, ownToo);
    if (why) { alertInline(why + " by an earlier correction: undo that first"); return; }
    addCorrection(op);
  }
  // What an edge correction is about, so `hcg apply` finds the edge again after a rebuild has
  // renamed its variables (and so changed its id): its two names and its evidence sentence.
  function edgeSubject(i) {
    const e = E[i];
    let sentence = e.mechanism;
    for (let j = 0; j < e.evidence.length; j++) {
      const c = D.chunks[e.evidence[j]], span = e.support[j];
      if (c && span) { sentence = c.text.slice(span[0], span[1]); break; }
    }
    return { edge: e.id, source: V[e.s].name, target: V[e.t].name, sentence: sentence.replace(/\s+/g, " ").trim() };
  }
  function edgeEdit(i) {
    const id = E[i].id;
    let mech = E[i].mechanism, conf = E[i].confidence;
    for (const c of state.corrections) {
      if (c.op === "edit_edge" && c.edge === id) {
        if (c.mechanism !== undefined) mech = c.mechanism;
        if (c.confidence !== undefined) conf = c.confidence;
      }
    }
    return { mechanism: mech, confidence: conf };
  }

  // ------------------------------------------------------------ small DOM helpers
  const $ = (id) => document.getElementById(id);
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "onclick") node.addEventListener("click", v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function metricColour(name) {
    const i = metricIndex.has(name) ? metricIndex.get(name) : 0;
    return "hsl(" + ((i * 137.508) % 360).toFixed(0) + ",55%,52%)";
  }
  function shortLabel(v) { return v.name.length > 40 ? v.name.slice(0, 38) + "\u2026" : v.name; }
  const fmt = (x, d) => (typeof x === "number" ? x.toFixed(d === undefined ? 2 : d) : String(x));

  // ------------------------------------------------------------ header: health and spec
  function renderHealth() {
    const h = D.health;
    $("domain").textContent = D.domain ? "(" + D.domain + ")" : "";
    const chips = [
      ["variables", h.variables], ["edges", h.edges], ["metrics", h.metrics], ["dimensions", h.dimensions],
      ["chunks", h.chunks], ["edges / variable", fmt(h.edges_per_variable)],
      ["largest component", fmt(100 * h.largest_wcc_share, 1) + "%"], ["components", h.components],
      ["isolated variables", h.isolated_variables, h.isolated_variables > 0],
      ["edges without evidence", h.edges_without_evidence, h.edges_without_evidence > 0],
      ["mean confidence", fmt(h.mean_confidence)],
    ];
    for (const [label, value, warn] of chips) {
      $("health").append(el("span", { class: "chip" + (warn ? " warn" : ""), "data-key": label }, label + " ", el("b", { text: String(value) })));
    }
  }

  function renderSpec() {
    for (const d of D.dimensions) {
      $("spec-dimensions").append(el("li", {}, el("b", { text: d.name }), ": " + d.entities.join(", ") + (d.description ? " (" + d.description + ")" : "")));
    }
    const body = $("spec-metrics").querySelector("tbody");
    for (const m of M) {
      const sig = m.signature.length ? "(" + m.signature.join(", ") + ")" : "";
      const row = el("tr", { "data-metric": m.name, onclick: () => selectMetric(m.name) },
        el("td", { class: "name", text: m.name + sig }), el("td", { text: m.category }), el("td", { text: m.role }),
        el("td", { text: String(m.variables) }), el("td", { text: m.description }));
      body.append(row);
      $("f-metric").append(el("option", { value: m.name, text: m.name + " (" + m.variables + ")" }));
    }
  }

  // ------------------------------------------------------------ flags
  function renderFlags() {
    const items = [
      ["Edges without evidence", F.no_evidence.map((i) => ["edge", i])],
      ["Confidence below " + F.low_confidence_threshold, F.low_confidence.map((i) => ["edge", i])],
      ["Edges on cycles (" + F.cyclic_parts + " cyclic parts)", F.cycle_edges.map((i) => ["edge", i])],
      ["Variables with no edges", F.isolated.map((i) => ["variable", i])],
      ["Metrics with no variables", F.empty_metrics.map((n) => ["metric", n])],
      ["Parallel edges of opposite signs", (F.opposite_signs || []).map((i) => ["edge", i])],
    ];
    for (const [label, list] of items) {
      $("flags").append(el("li", { class: list.length ? "hot" : "", onclick: () => showList(label, list) }, label, el("span", { class: "n", text: String(list.length) })));
    }
  }

  // ------------------------------------------------------------ results list (search, flags)
  // The sign of an edge's effect, when the builder knows it: " (decreases)" / " (increases)".
  function effectTag(e) {
    return e.effect ? " (" + e.effect + ")" : "";
  }
  function itemLabel(kind, key) {
    if (kind === "variable") return V[key].name;
    if (kind === "metric") return key;
    const e = E[key];
    return V[e.s].name + " \u2192 " + V[e.t].name + effectTag(e) + ": " + edgeEdit(key).mechanism;
  }
  function showList(title, list) {
    $("results-title").textContent = title + " (" + list.length + ")";
    const ul = $("results");
    clear(ul);
    for (const [kind, key] of list.slice(0, MAX_LISTED)) {
      ul.append(el("li", { "data-kind": kind, "data-key": String(key), onclick: () => openItem(kind, key) }, el("span", { class: "kind", text: kind }), el("span", { class: "label", text: itemLabel(kind, key) })));
    }
    if (list.length > MAX_LISTED) ul.append(el("li", { class: "muted", text: "and " + (list.length - MAX_LISTED) + " more (narrow the search)" }));
  }
  function openItem(kind, key) {
    if (kind === "variable") { ensureVisible(key); selectVariable(key); }
    else if (kind === "edge") { ensureVisible(E[key].s, E[key].t); selectEdge(key); }
    else selectMetric(key, true);
  }

  function search(q) {
    q = q.trim().toLowerCase();
    if (q.length < 2) { $("results-title").textContent = "Results"; clear($("results")); return; }
    const hits = [];
    V.forEach((v, i) => { if (varText[i].includes(q)) hits.push(["variable", i]); });
    M.forEach((m) => { if (m.name.toLowerCase().includes(q)) hits.push(["metric", m.name]); });
    E.forEach((e, i) => { if (edgePasses(i) && (mechText[i].includes(q) || e.id.toLowerCase() === q)) hits.push(["edge", i]); });
    showList("Search \u201c" + q + "\u201d", hits);
  }

  // ------------------------------------------------------------ filters
  function edgePasses(i) {
    const minConf = parseFloat($("f-conf").value) || 0;
    if (edgeEdit(i).confidence < minConf) return false;
    const ev = $("f-evidence").value;
    if (ev === "with" && !E[i].evidence.length) return false;
    if (ev === "without" && E[i].evidence.length) return false;
    return true;
  }

  // ------------------------------------------------------------ views: which nodes to draw
  function neighbourhood(seeds) {
    // The seeds first, then their direct neighbours by how many edges they have, up to LIMIT.
    const chosen = new Set(seeds.slice(0, LIMIT));
    const degree = new Map();
    for (const v of chosen) {
      for (const i of outE[v]) if (edgePasses(i) && !chosen.has(E[i].t)) degree.set(E[i].t, (degree.get(E[i].t) || 0) + 1);
      for (const i of inE[v]) if (edgePasses(i) && !chosen.has(E[i].s)) degree.set(E[i].s, (degree.get(E[i].s) || 0) + 1);
    }
    const extra = [...degree.entries()].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    for (const [v] of extra) { if (chosen.size >= LIMIT) break; chosen.add(v); }
    return { nodes: [...chosen], hidden: Math.max(0, seeds.length + extra.length - chosen.size) };
  }

  function showOverview() {
    state.view = { kind: "overview" };
    $("f-metric").value = "";
    const nodes = M.map((m) => ({ id: m.name, label: m.name, colour: metricColour(m.name), r: 6 + Math.min(14, Math.sqrt(m.variables) * 2), title: m.name + ": " + m.variables + " variables (" + m.role + ")", flag: m.variables === 0, kind: "metric" }));
    const idx = new Map(M.map((m, i) => [m.name, i]));
    const maxCount = Math.max(1, ...D.overview.map((o) => o.edges));
    const edges = D.overview.filter((o) => idx.has(o.source) && idx.has(o.target)).map((o) => ({ a: idx.get(o.source), b: idx.get(o.target), width: 1 + 7 * Math.sqrt(o.edges / maxCount), label: String(o.edges), cls: "", key: o.source + "\u2192" + o.target, kind: "template" }));
    $("view-title").textContent = "Metric overview: templates sized by their edge count";
    draw(nodes, edges, "metrics", "templates");
  }

  function showVariables(kind, key) {
    let nodes, hidden = 0, title;
    if (kind === "all") { nodes = V.map((_, i) => i); title = "All variables"; }
    else if (kind === "metric") { const r = neighbourhood(varsOfMetric.get(key) || []); nodes = r.nodes; hidden = r.hidden; title = "Metric " + key + " and its neighbours"; }
    else { const r = neighbourhood([key]); nodes = r.nodes; hidden = r.hidden; title = "Neighbourhood of " + V[key].name; }
    state.view = { kind, key };
    const pos = new Map(nodes.map((v, i) => [v, i]));
    // The variables the view is about are drawn larger than the neighbours around them.
    const focus = (v) => (kind === "metric" ? V[v].metric === key : kind === "variable" && v === key);
    const drawnNodes = nodes.map((v) => ({ id: v, label: shortLabel(V[v]), sub: V[v].metric, colour: metricColour(V[v].metric), r: focus(v) ? 10 : 7, title: V[v].name, flag: isolated.has(v), deleted: variableAction(V[v].name) === "delete_variable", kind: "variable" }));
    const drawnEdges = [];
    for (const v of nodes) {
      for (const i of outE[v]) {
        if (!pos.has(E[i].t) || !edgePasses(i)) continue;
        const st = edgeStatus(i);
        const cls = [noEv.has(i) ? "noev" : "", lowConf.has(i) ? "low" : "", onCycle.has(i) ? "cyc" : "", st === "reject_edge" ? "rejected" : ""].join(" ").trim();
        drawnEdges.push({ a: pos.get(v), b: pos.get(E[i].t), width: 0.8 + 2.2 * edgeEdit(i).confidence, cls, key: i, kind: "edge" });
      }
    }
    $("view-title").textContent = title + (hidden ? " (" + hidden + " more not drawn)" : "");
    draw(drawnNodes, drawnEdges, "variables", "edges");
  }

  function ensureVisible(...vars) {
    const v = state.view;
    const shown = v && v.kind !== "overview" && document.querySelector('#viewport .node[data-key="' + vars[0] + '"]');
    const allShown = shown && vars.every((x) => document.querySelector('#viewport .node[data-key="' + x + '"]'));
    if (!allShown) showVariables("variable", vars[0]);
  }

  // ------------------------------------------------------------ layout: layered, left to right
  function layout(n, edges) {
    // Kahn's order; on a cycle take the remaining node with the fewest unplaced parents.
    const indeg = new Array(n).fill(0), out = [...Array(n)].map(() => []);
    for (const e of edges) { if (e.a !== e.b) { indeg[e.b]++; out[e.a].push(e.b); } }
    const layer = new Array(n).fill(0), placed = new Array(n).fill(false);
    const ready = [];
    for (let i = 0; i < n; i++) if (indeg[i] === 0) ready.push(i);
    let done = 0;
    while (done < n) {
      if (!ready.length) {
        let best = -1;
        for (let i = 0; i < n; i++) if (!placed[i] && (best < 0 || indeg[i] < indeg[best])) best = i;
        ready.push(best); indeg[best] = 0;
      }
      const u = ready.pop();
      if (placed[u]) continue;
      placed[u] = true; done++;
      for (const w of out[u]) {
        if (placed[w]) continue;
        layer[w] = Math.max(layer[w], layer[u] + 1);
        if (--indeg[w] === 0) ready.push(w);
      }
    }
    const columns = [];
    layer.forEach((l, i) => { (columns[l] = columns[l] || []).push(i); });
    // Two barycentre sweeps to untangle the edges between neighbouring columns.
    const rank = new Array(n).fill(0);
    columns.forEach((c) => c.forEach((v, r) => { rank[v] = r; }));
    const preds = [...Array(n)].map(() => []);
    for (const e of edges) preds[e.b].push(e.a);
    for (let sweep = 0; sweep < 2; sweep++) {
      for (const c of columns) {
        if (!c) continue;
        const bary = new Map(c.map((v) => [v, preds[v].length ? preds[v].reduce((s, p) => s + rank[p], 0) / preds[v].length : rank[v]]));
        c.sort((a, b) => bary.get(a) - bary.get(b));
        c.forEach((v, r) => { rank[v] = r; });
      }
    }
    const xy = new Array(n);
    const maxRows = 28;   // a tall column wraps into sub-columns
    const maxCols = 8;    // a long chain of columns wraps into bands, read left to right, top down
    const used = columns.filter((c) => c);
    const tallest = Math.min(maxRows, Math.max(1, ...used.map((c) => c.length)));
    let x = 0, band = 0, inBand = 0;
    for (const c of used) {
      if (inBand === maxCols) { band++; inBand = 0; x = 0; }
      const sub = Math.ceil(c.length / maxRows), y0 = band * (tallest * 34 + 90);
      c.forEach((v, r) => {
        const col = Math.floor(r / maxRows), row = r % maxRows, rows = Math.min(maxRows, c.length - col * maxRows);
        xy[v] = [x + col * 200, y0 + (row - (rows - 1) / 2) * 34];
      });
      x += sub * 200 + 20;
      inBand++;
    }
    return xy;
  }

  // ------------------------------------------------------------ drawing
  function draw(nodes, edges, nodeWord, edgeWord) {
    const vp = $("viewport");
    clear(vp);
    const xy = layout(nodes.length, edges);
    stretch(xy);
    const eg = svg("g", { class: "edges" }), ng = svg("g", { class: "nodes" });
    for (const e of edges) {
      const [x1, y1] = xy[e.a], [x2, y2] = xy[e.b];
      const r = nodes[e.b].r + 2;
      const dx = x2 - x1, dy = y2 - y1, len = Math.hypot(dx, dy) || 1;
      const bend = x2 <= x1 ? 60 : 0;   // a back edge curves, so it does not hide a forward one
      const mx = (x1 + x2) / 2 - (dy / len) * (20 + bend), my = (y1 + y2) / 2 + (dx / len) * (20 + bend);
      const ml = Math.hypot(x2 - mx, y2 - my) || 1;
      const ex = x2 - ((x2 - mx) / ml) * r, ey = y2 - ((y2 - my) / ml) * r;
      const d = "M" + x1.toFixed(1) + "," + y1.toFixed(1) + " Q" + mx.toFixed(1) + "," + my.toFixed(1) + " " + ex.toFixed(1) + "," + ey.toFixed(1);
      const g = svg("g", { class: "edge " + e.cls, "data-key": String(e.key), "data-kind": e.kind });
      if (e.kind === "edge") g.setAttribute("data-id", E[e.key].id);
      const line = svg("path", { class: "line", d, "stroke-width": e.width.toFixed(2), "marker-end": "url(#arrow)" });
      g.append(svg("path", { class: "hit", d }), line);
      const t = svg("title");
      t.textContent = e.kind === "edge" ? V[E[e.key].s].name + " \u2192 " + V[E[e.key].t].name + effectTag(E[e.key]) + "\n" + edgeEdit(e.key).mechanism : e.key + ": " + e.label + " edges";
      g.append(t);
      if (e.label) { const lt = svg("text", { x: mx.toFixed(1), y: my.toFixed(1) }); lt.textContent = e.label; g.append(lt); }
      g.addEventListener("click", (ev) => { ev.stopPropagation(); if (e.kind === "edge") selectEdge(e.key); else selectMetric(e.key.split("\u2192")[0], false); });
      eg.append(g);
    }
    nodes.forEach((nd, i) => {
      const [x, y] = xy[i];
      const g = svg("g", { class: "node" + (nd.flag ? " flag" : "") + (nd.deleted ? " deleted" : ""), transform: "translate(" + x.toFixed(1) + "," + y.toFixed(1) + ")", "data-key": String(nd.id), "data-kind": nd.kind });
      g.append(svg("circle", { r: nd.r.toFixed(1), fill: nd.colour }));
      const t = svg("text", { x: (nd.r + 3).toFixed(1), y: "4" });
      t.textContent = nd.label;
      const tt = svg("title");
      tt.textContent = nd.title;
      g.append(t, tt);
      g.addEventListener("click", (ev) => { ev.stopPropagation(); if (nd.kind === "metric") selectMetric(nd.id, false); else selectVariable(nd.id); });
      g.addEventListener("dblclick", (ev) => { ev.stopPropagation(); if (nd.kind === "metric") selectMetric(nd.id, true); else showVariables("variable", nd.id); });
      ng.append(g);
    });
    vp.append(eg, ng);
    state.rendered = { nodes: nodes.length, edges: edges.length };
    const svgEl = $("canvas");
    svgEl.setAttribute("data-nodes", String(nodes.length));
    svgEl.setAttribute("data-edges", String(edges.length));
    $("rendered-count").textContent = nodes.length + " " + nodeWord + ", " + edges.length + " " + edgeWord + " drawn";
    fit(xy);
    markSelection();
  }

  function stretch(xy) {
    // A wide, flat layout would fit the canvas by its width and leave it empty below: spread the
    // rows (never the text) until the drawing has the canvas's proportions, at most 3 times.
    if (xy.length < 2) return;
    const box = $("canvas").getBoundingClientRect();
    const xs = xy.map((p) => p[0]), ys = xy.map((p) => p[1]);
    const w = Math.max(...xs) - Math.min(...xs) + 220, h = Math.max(...ys) - Math.min(...ys) + 80;
    const f = Math.min(3, ((box.height / Math.max(1, box.width)) * w) / h);
    if (f > 1) for (const p of xy) p[1] *= f;
  }

  function fit(xy) {
    const box = $("canvas").getBoundingClientRect();
    if (!xy.length) { setTransform(box.width / 2, box.height / 2, 1); return; }
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const [x, y] of xy) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
    const w = x1 - x0 + 220, h = y1 - y0 + 80;
    const k = Math.min(1.6, Math.max(0.05, Math.min(box.width / w, box.height / h)));
    setTransform(box.width / 2 - k * (x0 + x1 + 140) / 2, box.height / 2 - k * (y0 + y1) / 2, k);
  }
  function setTransform(x, y, k) {
    state.transform = { x, y, k };
    $("viewport").setAttribute("transform", "translate(" + x.toFixed(1) + "," + y.toFixed(1) + ") scale(" + k.toFixed(4) + ")");
  }

  function markSelection() {
    for (const n of document.querySelectorAll("#viewport .selected")) n.classList.remove("selected");
    const s = state.selected;
    if (!s) return;
    const sel = s.kind === "edge" ? '#viewport .edge[data-kind="edge"][data-key="' + s.key + '"]' : s.kind === "variable" ? '#viewport .node[data-kind="variable"][data-key="' + s.key + '"]' : null;
    const node = sel && document.querySelector(sel);
    if (node) {
      node.classList.add("selected");
      const line = node.querySelector("path.line");
      if (line) line.setAttribute("marker-end", "url(#arrow-sel)");
    }
    for (const l of document.querySelectorAll("#viewport .edge:not(.selected) path.line")) l.setAttribute("marker-end", "url(#arrow)");
  }

  // ------------------------------------------------------------ pan and zoom
  function initPanZoom() {
    const s = $("canvas");
    let drag = null;
    s.addEventListener("mousedown", (ev) => { drag = { x: ev.clientX, y: ev.clientY, t: { ...state.transform } }; s.classList.add("dragging"); });
    window.addEventListener("mousemove", (ev) => { if (drag) setTransform(drag.t.x + ev.clientX - drag.x, drag.t.y + ev.clientY - drag.y, drag.t.k); });
    window.addEventListener("mouseup", () => { drag = null; s.classList.remove("dragging"); });
    s.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const box = s.getBoundingClientRect(), t = state.transform;
      const k = Math.min(8, Math.max(0.02, t.k * Math.exp(-ev.deltaY * 0.0015)));
      const px = ev.clientX - box.left, py = ev.clientY - box.top;
      setTransform(px - ((px - t.x) * k) / t.k, py - ((py - t.y) * k) / t.k, k);
    }, { passive: false });
  }

  // ------------------------------------------------------------ details panel
  function selectEdge(i) {
    state.selected = { kind: "edge", key: i };
    markSelection();
    const e = E[i], cur = edgeEdit(i), st = edgeStatus(i);
    const d = $("details");
    clear(d);
    d.append(el("h2", {}, varLink(e.s), " \u2192 ", varLink(e.t)));
    const badges = el("div", {}, el("span", { class: "badge", text: "edge " + e.id }), el("span", { class: "badge", text: "confidence " + fmt(cur.confidence) }));
    if (noEv.has(i)) badges.append(el("span", { class: "badge bad", text: "no evidence" }));
    if (lowConf.has(i)) badges.append(el("span", { class: "badge bad", text: "low confidence" }));
    if (onCycle.has(i)) badges.append(el("span", { class: "badge bad", text: "on a cycle" }));
    if (st === "reject_edge") badges.append(el("span", { class: "badge bad", text: "rejected" }));
    if (st === "accept_edge") badges.append(el("span", { class: "badge ok", text: "accepted" }));
    d.append(badges);
    d.append(el("h3", { text: "Mechanism" }), el("p", { id: "mechanism", text: cur.mechanism || "(none)" }));
    d.append(el("div", { class: "row" },
      el("button", { id: "accept", class: "accept", type: "button", onclick: () => edgeCorrection(i, { op: "accept_edge", ...edgeSubject(i) }, false) }, "Accept"),
      el("button", { id: "reject", class: "reject", type: "button", onclick: () => edgeCorrection(i, { op: "reject_edge", ...edgeSubject(i) }, false) }, "Reject")));
    const mech = el("textarea", { id: "edit-mechanism" });
    mech.value = cur.mechanism;
    const conf = el("input", { id: "edit-confidence", type: "number", min: "0", max: "1", step: "0.05", value: String(cur.confidence) });
    d.append(el("h3", { text: "Edit" }), mech, el("div", { class: "row" }, "confidence ", conf,
      el("button", { id: "save-edit", type: "button", onclick: () => {
        const c = parseFloat(conf.value);
        if (!(c >= 0 && c <= 1)) { alertInline("confidence must be a number in [0, 1]"); return; }
        const op = { op: "edit_edge", ...edgeSubject(i) };
        if (mech.value !== e.mechanism) op.mechanism = mech.value;
        if (c !== e.confidence) op.confidence = c;
        if (op.mechanism === undefined && op.confidence === undefined) { alertInline("nothing changed"); return; }
        edgeCorrection(i, op, true);
      } }, "Save edit")));
    d.append(el("h3", { text: "Evidence (" + e.evidence.length + (e.evidence.length === 1 ? " chunk)" : " chunks)") }));
    if (!e.evidence.length) d.append(el("p", { class: "badge bad", text: "No evidence chunk: check this edge against the corpus." }));
    e.evidence.forEach((cid, j) => {
      const c = D.chunks[cid];
      const box = el("div", { class: "chunk", "data-chunk": cid }, el("div", { class: "cid", text: "chunk " + cid + (c && c.doc_id ? "  \u00b7  " + c.doc_id : "") }));
      if (!c) { box.append(el("p", { class: "muted", text: "(chunk text not in the graph)" })); d.append(box); return; }
      const span = e.support[j], p = el("p", {});
      if (span) p.append(c.text.slice(0, span[0]), el("mark", { text: c.text.slice(span[0], span[1]) }), c.text.slice(span[1]));
      else p.append(c.text);
      box.append(p);
      d.append(box);
      // A long chunk scrolls inside its box: bring the supporting sentence into view.
      const mark = p.querySelector("mark");
      if (mark) p.scrollTop = Math.max(0, mark.offsetTop - 30);
    });
  }

  function varLink(i) { return el("a", { href: "#", class: "name", onclick: (ev) => { ev.preventDefault(); ensureVisible(i); selectVariable(i); } }, V[i].name); }

  function edgeList(list) {
    const ul = el("ul", { class: "edgelist" });
    for (const i of list.slice(0, MAX_LISTED)) {
      const other = E[i].s === state.selected.key ? "\u2192 " + V[E[i].t].name : "\u2190 " + V[E[i].s].name;
      ul.append(el("li", { onclick: () => { ensureVisible(E[i].s, E[i].t); selectEdge(i); } }, other + "  (" + fmt(edgeEdit(i).confidence) + ")" + (edgeStatus(i) === "reject_edge" ? " [rejected]" : "")));
    }
    if (list.length > MAX_LISTED) ul.append(el("li", { class: "muted", text: "and " + (list.length - MAX_LISTED) + " more" }));
    return ul;
  }

  function selectVariable(i) {
    state.selected = { kind: "variable", key: i };
    markSelection();
    const v = V[i], d = $("details");
    clear(d);
    d.append(el("h2", { class: "name", text: v.name }));
    const action = variableAction(v.name);
    d.append(el("div", {}, el("span", { class: "badge", text: "metric " + v.metric }), isolated.has(i) ? el("span", { class: "badge bad", text: "no edges" }) : null,
      action ? el("span", { class: "badge bad", text: action === "delete_variable" ? "deleted" : "all edges rejected" }) : null));
    if (v.entities.length) d.append(el("p", { text: "entities: " + v.entities.join(", ") }));
    if (v.description) d.append(el("p", { text: v.description }));
    d.append(el("div", { class: "row" },
      el("button", { type: "button", onclick: () => showVariables("variable", i) }, "Show neighbourhood"),
      el("button", { type: "button", onclick: () => selectMetric(v.metric, false) }, "Metric " + v.metric)));
    d.append(el("h3", { text: "Out edges (" + outE[i].length + ")" }), edgeList(outE[i]));
    d.append(el("h3", { text: "In edges (" + inE[i].length + ")" }), edgeList(inE[i]));
    // Bulk actions: one correction instead of one reject per edge (a bogus hub variable).
    const n = outE[i].length + inE[i].length;
    d.append(el("h3", { text: "All of this variable" }), el("div", { class: "row" },
      el("button", { id: "reject-variable-edges", class: "reject", type: "button", onclick: () => variableCorrection({ op: "reject_variable_edges", variable: v.name }) }, "Reject its " + n + " edges"),
      el("button", { id: "delete-variable", class: "reject", type: "button", onclick: () => addCorrection({ op: "delete_variable", variable: v.name }) }, "Delete the variable")));
    const input = el("input", { id: "merge-into", list: "merge-names", placeholder: "variable to keep", size: "28" });
    const names = el("datalist", { id: "merge-names" });
    for (const j of varsOfMetric.get(v.metric) || []) if (j !== i) names.append(el("option", { value: V[j].name }));
    d.append(el("h3", { text: "Merge this variable into another" }), names, el("div", { class: "row" }, input,
      el("button", { id: "merge", type: "button", onclick: () => {
        const keep = input.value.trim();
        if (!varIndex.has(keep) || keep === v.name) { alertInline("name another variable of the graph"); return; }
        if (variableAction(v.name) === "delete_variable") { alertInline(v.name + " is deleted by an earlier correction: undo that first"); return; }
        const gone = state.corrections.find((c) => (c.op === "merge_variables" && c.drop === keep) || (c.op === "delete_variable" && c.variable === keep));
        if (gone) { alertInline(keep + (gone.op === "delete_variable" ? " is deleted" : " is merged into " + gone.keep) + " by an earlier correction"); return; }
        addCorrection({ op: "merge_variables", keep, drop: v.name });
      } }, "Merge")));
  }

  function selectMetric(name, neighbourhoodToo) {
    if (neighbourhoodToo) { $("f-metric").value = name; showVariables("metric", name); }
    state.selected = { kind: "metric", key: name };
    markSelection();
    const m = M[metricIndex.get(name)], d = $("details");
    clear(d);
    if (!m) return;
    d.append(el("h2", { class: "name", text: m.name + (m.signature.length ? "(" + m.signature.join(", ") + ")" : "") }));
    d.append(el("div", {}, el("span", { class: "badge", text: "category " + m.category }), el("span", { class: "badge", text: "role " + m.role }), el("span", { class: m.variables ? "badge" : "badge bad", text: m.variables + " variables" })));
    d.append(el("p", { text: m.description || "(no description)" }));
    d.append(el("div", { class: "row" }, el("button", { type: "button", onclick: () => selectMetric(name, true) }, "Show its neighbourhood")));
    const input = el("input", { id: "rename-to", placeholder: "NewMetricName", size: "24" });
    d.append(el("h3", { text: "Rename this metric" }), el("div", { class: "row" }, input,
      el("button", { id: "rename", type: "button", onclick: () => {
        const to = input.value.trim();
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(to)) { alertInline("a metric name is letters, digits and _ (CamelCase)"); return; }
        if (metricIndex.has(to)) { alertInline("metric " + to + " exists already"); return; }
        const taken = state.corrections.find((c) => c.op === "rename_metric" && c.to === to && c.metric !== name);
        if (taken) { alertInline("metric " + taken.metric + " is renamed " + to + " already"); return; }
        addCorrection({ op: "rename_metric", metric: name, to });
      } }, "Rename")));
  }

  // A bulk action, unless the variable is deleted by an earlier correction (said instead).
  function variableCorrection(op) {
    if (op.op !== "delete_variable" && variableAction(op.variable) === "delete_variable") { alertInline(op.variable + " is deleted by an earlier correction: undo that first"); return; }
    addCorrection(op);
  }

  function alertInline(text) {
    const old = $("inline-alert");
    if (old) old.remove();
    $("details").prepend(el("p", { id: "inline-alert", class: "badge bad", text }));
  }

  // ------------------------------------------------------------ corrections
  function addCorrection(op) {
    // A new accept/reject of an edge replaces the previous verdict on it; a bulk action on a
    // variable is recorded once.
    if (op.op === "reject_edge" || op.op === "accept_edge") {
      state.corrections = state.corrections.filter((c) => !((c.op === "reject_edge" || c.op === "accept_edge") && c.edge === op.edge));
    }
    if (op.op === "reject_variable_edges" || op.op === "delete_variable") {
      state.corrections = state.corrections.filter((c) => !(c.op === op.op && c.variable === op.variable));
    }
    // A second rename of a metric, or merge of a variable, would find its subject gone once the
    // first applied (hcg apply refuses it): the new one replaces the first.
    if (op.op === "rename_metric") {
      state.corrections = state.corrections.filter((c) => !(c.op === op.op && c.metric === op.metric));
    }
    if (op.op === "merge_variables") {
      state.corrections = state.corrections.filter((c) => !(c.op === op.op && c.drop === op.drop));
    }
    state.corrections.push(op);
    afterCorrections();
  }
  function afterCorrections() {
    renderCorrections();
    const sel = state.selected;
    if (state.view && state.view.kind !== "overview") {
      const t = { ...state.transform };
      showVariables(state.view.kind, state.view.key);
      setTransform(t.x, t.y, t.k);
    }
    if (sel && sel.kind === "edge") selectEdge(sel.key);
    else if (sel && sel.kind === "variable") selectVariable(sel.key);
    else if (sel && sel.kind === "metric") selectMetric(sel.key, false);
  }
  function describe(c) {
    if (c.op === "reject_edge" || c.op === "accept_edge") return (c.op === "reject_edge" ? "reject " : "accept ") + c.source + " \u2192 " + c.target;
    if (c.op === "edit_edge") return "edit " + (edgeIndex.has(c.edge) ? V[E[edgeIndex.get(c.edge)].s].name + " \u2192 " + V[E[edgeIndex.get(c.edge)].t].name : c.edge) + (c.confidence !== undefined ? " confidence " + c.confidence : "") + (c.mechanism !== undefined ? " mechanism" : "");
    if (c.op === "merge_variables") return "merge " + c.drop + " into " + c.keep;
    if (c.op === "reject_variable_edges") return "reject every edge of " + c.variable;
    if (c.op === "delete_variable") return "delete " + c.variable;
    return "rename metric " + c.metric + " to " + c.to;
  }
  function renderCorrections() {
    $("n-corr").textContent = String(state.corrections.length);
    const ul = $("corr-list");
    clear(ul);
    state.corrections.forEach((c, i) => {
      ul.append(el("li", { "data-op": c.op }, el("span", { text: describe(c) }),
        el("button", { type: "button", title: "undo", onclick: () => { state.corrections.splice(i, 1); afterCorrections(); } }, "undo")));
    });
  }
  // JSON strings are YAML double-quoted scalars, but YAML forbids raw C1 and other non-printable
  // characters, reads U+0085/U+2028/U+2029 as line breaks (folded to spaces), and its \u escapes
  // are single UTF-16 units: everything outside printable ASCII is written as \uXXXX or, above
  // the BMP, \UXXXXXXXX, so PyYAML reads back exactly the text the page holds.
  function yamlValue(v) {
    const json = JSON.stringify(v);
    let out = "";
    for (const ch of json) {
      const cp = ch.codePointAt(0);
      if (cp >= 0x20 && cp < 0x7f) out += ch;
      else if (cp <= 0xffff) out += "\\u" + cp.toString(16).padStart(4, "0");
      else out += "\\U" + cp.toString(16).padStart(8, "0");
    }
    return out;
  }
  function correctionsYaml() {
    const lines = [
      "# Review corrections of an HCG graph. Apply with: hcg apply DIR corrections.yaml --out NEW_DIR",
      "format: hcg-corrections",
      "version: 1",
      "graph: " + yamlValue(D.title),
      "created: " + yamlValue(new Date().toISOString()),
      state.corrections.length ? "corrections:" : "corrections: []",
    ];
    for (const c of state.corrections) {
      let first = true;
      for (const [k, v] of Object.entries(c)) {
        lines.push((first ? "  - " : "    ") + k + ": " + yamlValue(v));
        first = false;
      }
    }
    return lines.join("\n") + "\n";
  }
  function download() {
    const blob = new Blob([correctionsYaml()], { type: "application/x-yaml" });
    const a = el("a", { href: URL.createObjectURL(blob), download: "corrections.yaml" });
    document.body.append(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }

  // ------------------------------------------------------------ start
  function fromHash() {
    let h;
    try {
      h = decodeURIComponent(location.hash.slice(1));
    } catch (err) {
      // A malformed escape ("#variable=%E0%A4%A") is a URIError: the address is ignored.
      return false;
    }
    const eq = h.indexOf("=");
    if (eq < 0) return false;
    const kind = h.slice(0, eq), key = h.slice(eq + 1);
    if (kind === "edge" && edgeIndex.has(key)) { openItem("edge", edgeIndex.get(key)); return true; }
    if (kind === "variable" && varIndex.has(key)) { openItem("variable", varIndex.get(key)); return true; }
    if (kind === "metric" && metricIndex.has(key)) { selectMetric(key, true); return true; }
    if (kind === "search") { $("search").value = key; search(key); }
    return false;
  }
  function defaultView() {
    if (V.length <= D.settings.full_view_limit) showVariables("all");
    else showOverview();
  }

  renderHealth();
  renderSpec();
  renderFlags();
  renderCorrections();
  initPanZoom();
  let timer = null;
  $("search").addEventListener("input", (ev) => { clearTimeout(timer); timer = setTimeout(() => search(ev.target.value), 120); });
  $("f-metric").addEventListener("change", (ev) => { if (ev.target.value) selectMetric(ev.target.value, true); else defaultView(); });
  for (const id of ["f-conf", "f-evidence"]) {
    $(id).addEventListener("change", () => { if (state.view && state.view.kind !== "overview") showVariables(state.view.kind, state.view.key); search($("search").value); });
  }
  $("btn-overview").addEventListener("click", showOverview);
  const all = $("btn-all");
  if (V.length > D.settings.full_view_limit * 4) { all.disabled = true; all.title = "too many variables to draw at once: pick a metric or search"; }
  all.addEventListener("click", () => { $("f-metric").value = ""; showVariables("all"); });
  $("btn-fit").addEventListener("click", () => { if (state.view) { if (state.view.kind === "overview") showOverview(); else showVariables(state.view.kind, state.view.key); } });
  $("download").addEventListener("click", download);
  $("canvas").addEventListener("click", () => { /* a click on the background keeps the selection */ });
  defaultView();
  fromHash();
  window.addEventListener("hashchange", fromHash);
  window.hcgAudit = { state, correctionsYaml, showOverview, showVariables, selectEdge, selectVariable, selectMetric, search };
})();
