// The VIZ page: the list of recorded rewrites and kernels (grouped by context), one rewrite's graph
// step by step, a kernel's source, and the schedule timeline. Data comes from the server's /api/.
import { displayGraph, nodeExpr, reachable } from "./display_graph.js";
import { GraphView } from "./graph_view.js";
import { renderSchedules } from "./schedule_view.js";

const $ = (id) => document.getElementById(id);
const escapeHtml = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

async function getJson(url) {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url} answered ${r.status}: ${await r.text()}`);
  return r.json();
}

const state = {
  groups: [],
  traces: new Map(),  // id -> trace (fetched on first open)
  kernels: null,      // every kernel's source, fetched on first need
  trace: null,        // the rewrite shown
  step: 0,
  collapsed: new Map(),  // trace id -> the node ids collapsed in it
  selected: "",       // "trace:<id>" or "kernel:<id>"
};
const graph = new GraphView($("graph"), $("graph-status"), toggleCollapsed);

function collapsedIn(t) {
  if (!state.collapsed.has(t.id)) state.collapsed.set(t.id, new Set());
  return state.collapsed.get(t.id);
}

function toggleCollapsed(id) {
  const set = collapsedIn(state.trace);
  if (!set.delete(id)) set.add(id);
  setStep(state.step);
}

function show(section) {
  for (const id of ["graph-view", "kernel-view", "schedule-view", "welcome"]) $(id).hidden = id !== section;
}

// ** the list

function renderList() {
  const filter = $("list-filter").value.toLowerCase();
  const list = $("list");
  list.innerHTML = "";
  for (const g of state.groups) {
    const entries = [...g.traces.map((t) => ({ kind: "trace", ...t })), ...g.kernels.map((k) => ({ kind: "kernel", ...k }))];
    const visible = entries.filter((e) => `${g.context} ${e.name}`.toLowerCase().includes(filter));
    if (!visible.length) continue;
    const group = document.createElement("div");
    group.className = "group";
    group.innerHTML = `<div class="context">${escapeHtml(g.context || "(no context)")}</div>`;
    for (const e of visible) {
      const item = document.createElement("div");
      item.className = `item ${e.kind}${e.error ? " error" : ""}`;
      item.dataset.key = `${e.kind}:${e.id}`;
      item.style.paddingLeft = `${16 + 12 * (e.depth || 0)}px`;
      item.innerHTML = e.kind === "trace"
        ? `${escapeHtml(e.name)} <span class="count">${e.steps} steps · ${e.nodes} nodes</span>`
        : `source: ${escapeHtml(e.name)}`;
      item.title = e.error || item.textContent;
      item.onclick = () => (e.kind === "trace" ? openTrace(e.id) : openKernel(e.id));
      group.append(item);
    }
    list.append(group);
  }
  markSelected();
}

function markSelected() {
  for (const item of $("list").querySelectorAll(".item")) {
    const on = item.dataset.key === state.selected;
    item.classList.toggle("selected", on);
    if (on) item.scrollIntoView({ block: "nearest" });
  }
}

// ** one rewrite

async function openTrace(id) {
  state.selected = `trace:${id}`;
  markSelected();
  if (!state.traces.has(id)) state.traces.set(id, await getJson(`/api/trace/${id}`));
  state.trace = state.traces.get(id);
  const t = state.trace;
  $("trace-title").textContent = `${t.name}${t.context ? " — " + t.context : ""}`;
  $("step-slider").max = t.steps.length;
  show("graph-view");
  await setStep(0, false);
}

function describeStep(t, step) {
  if (step === 0) {
    $("step-rule").textContent = t.steps.length ? "the input graph" : "the input graph (no rule fired)";
    $("step-code").textContent = t.error || "";
    $("step-change").textContent = "";
    return;
  }
  const s = t.steps[step - 1];
  $("step-rule").textContent = `rule ${s.file}:${s.line}`;
  $("step-code").textContent = s.code;
  $("step-change").textContent = `${nodeExpr(t.nodes, s.before)}\n→ ${nodeExpr(t.nodes, s.after)}`;
}

async function setStep(step, keepView = true) {
  const t = state.trace;
  state.step = Math.max(0, Math.min(step, t.steps.length));
  $("step-slider").value = state.step;
  $("step-label").textContent = `step ${state.step} / ${t.steps.length}`;
  describeStep(t, state.step);
  const collapsed = collapsedIn(t);
  const opts = { hideConsts: $("hide-consts").checked, foldChains: $("fold-chains").checked, collapsed };
  const display = displayGraph(t, state.step, opts);
  const total = reachable(t.nodes, t.roots[state.step]).size;
  $("node-count").textContent = `${display.nodes.length} drawn of ${total} nodes`;
  const key = `${t.id}:${state.step}:${opts.hideConsts}:${opts.foldChains}:${[...collapsed].sort()}`;
  if (await graph.show(key, display, keepView)) {
    $("search-count").textContent = $("node-search").value ? `${graph.matches.length} found` : "";
    $("graph").dataset.rendered = `${t.id}:${state.step}`;  // the browser test waits on this
  }
}

// ** one kernel, the schedule

async function loadKernels() {
  state.kernels ??= await getJson("/api/kernels");
  return state.kernels;
}

async function openKernel(id) {
  state.selected = `kernel:${id}`;
  markSelected();
  const k = (await loadKernels())[id];
  $("kernel-title").textContent = `${k.name}${k.context ? " — " + k.context : ""}`;
  $("kernel-opts").textContent = k.opts.length ? `opts: ${k.opts.join(" ")}` : "no opts applied";
  $("kernel-source").textContent = k.source;
  show("kernel-view");
}

async function openSchedule() {
  state.selected = "";
  markSelected();
  renderSchedules($("schedule-view"), await getJson("/api/schedule"), openKernel);
  show("schedule-view");
}

// ** controls

// Up/down: the previous/next rewrite in the list.
function moveInList(delta) {
  const items = [...$("list").querySelectorAll(".item.trace")];
  const at = items.findIndex((i) => i.dataset.key === state.selected);
  const next = items[Math.max(0, Math.min(items.length - 1, at + delta))];
  next?.click();
}

function listen() {
  $("list-filter").addEventListener("input", renderList);
  $("show-schedule").addEventListener("click", openSchedule);
  $("step-slider").addEventListener("input", (ev) => setStep(Number(ev.target.value)));
  $("step-prev").addEventListener("click", () => setStep(state.step - 1));
  $("step-next").addEventListener("click", () => setStep(state.step + 1));
  $("hide-consts").addEventListener("change", () => setStep(state.step, false));
  $("fold-chains").addEventListener("change", () => setStep(state.step, false));
  $("fit").addEventListener("click", () => graph.fit());
  $("node-search").addEventListener("input", (ev) => {
    const n = graph.search(ev.target.value, false);
    $("search-count").textContent = ev.target.value ? `${n} found` : "";
  });
  $("node-search").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") graph.search(ev.target.value, true);
  });
  document.addEventListener("keydown", (ev) => {
    if (ev.target.tagName === "INPUT") return;  // typing, or the slider's own arrow keys
    const onGraph = !$("graph-view").hidden && state.trace;
    if (ev.key === "ArrowRight" && onGraph) setStep(state.step + 1);
    else if (ev.key === "ArrowLeft" && onGraph) setStep(state.step - 1);
    else if (ev.key === "ArrowDown") moveInList(1);
    else if (ev.key === "ArrowUp") moveInList(-1);
    else return;
    ev.preventDefault();
  });
}

async function main() {
  listen();
  state.groups = (await getJson("/api/traces")).groups;
  renderList();
  if (!state.groups.length) $("welcome").innerHTML = "<p>Nothing was recorded: was the program run with VIZ=1?</p>";
}

main().catch((e) => {
  show("welcome");
  $("welcome").textContent = `The page failed: ${e.message}`;
});
