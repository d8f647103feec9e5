// Draws a display graph (display_graph.js) as SVG: layout in a worker (cached per graph), zoom with
// the wheel around the pointer, pan by dragging, search that highlights and centers matches;
// double-clicking a node calls onToggle(id) (the page collapses or expands it).

const CHAR_WIDTH = 6.7, LINE_HEIGHT = 13, PAD = 6;

const escapeXml = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function nodeSize(lines) {
  const chars = Math.max(...lines.map((l) => l.length));
  return { width: chars * CHAR_WIDTH + 2 * PAD, height: lines.length * LINE_HEIGHT + 2 * PAD };
}

export class GraphView {
  constructor(svg, status, onToggle) {
    this.svg = svg;
    this.status = status;
    svg.addEventListener("dblclick", (ev) => {
      const g = ev.target.closest("g.node");
      if (g) onToggle(Number(g.dataset.id));
    });
    this.worker = new Worker("/js/layout_worker.js");
    this.pending = new Map();  // layout key -> resolve
    this.layouts = new Map();  // layout key -> layout
    this.worker.onmessage = ({ data }) => {
      this.layouts.set(data.key, data);
      this.pending.get(data.key)?.(data);
      this.pending.delete(data.key);
    };
    this.view = { x: 0, y: 0, w: 1, h: 1 };
    this.matches = [];
    this.matchIndex = -1;
    this.shownKey = null;
    this.listenForZoomAndPan();
  }

  layout(key, graph) {
    if (this.layouts.has(key)) return Promise.resolve(this.layouts.get(key));
    return new Promise((resolve) => {
      this.pending.set(key, resolve);
      this.worker.postMessage({
        key,
        nodes: graph.nodes.map((n) => ({ id: n.id, ...nodeSize(n.lines) })),
        edges: graph.edges.map((e) => ({ from: e.from, to: e.to })),
      });
    });
  }

  // Draws `graph`; `key` names its layout (the same key draws from the cache). Keeps the zoom when
  // the graph is a step of the one shown (`keepView`). Resolves once drawn.
  async show(key, graph, keepView) {
    this.shownKey = key;
    if (!this.layouts.has(key)) this.status.textContent = `laying out ${graph.nodes.length} nodes…`;
    const layout = await this.layout(key, graph);
    if (this.shownKey !== key) return false;  // another graph was asked for meanwhile
    this.status.textContent = layout.fast ? "large graph: fast layered layout" : "";
    const parts = [`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6"
      orient="auto"><path d="M0,0L10,5L0,10z" fill="#6b7280"/></marker></defs>`];
    graph.edges.forEach((e, i) => {
      const d = layout.edges[i].map((p, j) => `${j ? "L" : "M"}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join("");
      parts.push(`<path class="edge${e.changed ? " changed" : ""}" d="${d}" marker-end="url(#arrow)"/>`);
    });
    for (const n of graph.nodes) {
      const { width, height } = nodeSize(n.lines);
      const { x, y } = layout.nodes[n.id];
      const cls = ["node", n.changed && "changed", n.current && "current"].filter(Boolean).join(" ");
      const text = n.lines.map((l, i) =>
        `<tspan x="${PAD}" y="${PAD + (i + 1) * LINE_HEIGHT - 3}">${escapeXml(l)}</tspan>`).join("");
      parts.push(`<g class="${cls}" data-id="${n.id}" transform="translate(${(x - width / 2).toFixed(1)},${(y - height / 2).toFixed(1)})">` +
        `<title>${escapeXml(n.lines.join("\n"))}</title><rect width="${width}" height="${height}" fill="${n.color}"/>` +
        `<text>${text}</text></g>`);
    }
    this.svg.innerHTML = parts.join("");
    this.bounds = { w: Math.max(layout.width, 1), h: Math.max(layout.height, 1) };
    if (!keepView) this.fit();
    else this.applyView();
    this.search(this.query || "", false);
    return true;
  }

  fit() {
    const pad = 20;
    this.view = { x: -pad, y: -pad, w: this.bounds.w + 2 * pad, h: this.bounds.h + 2 * pad };
    this.applyView();
  }

  applyView() {
    const { x, y, w, h } = this.view;
    this.svg.setAttribute("viewBox", `${x} ${y} ${w} ${h}`);
  }

  // Highlights nodes whose text contains `query` (case-insensitive); `next` centers the next one.
  // Returns the number of matches.
  search(query, next) {
    this.query = query;
    const q = query.trim().toLowerCase();
    this.matches = [];
    for (const g of this.svg.querySelectorAll("g.node")) {
      const hit = q !== "" && g.textContent.toLowerCase().includes(q);
      g.classList.toggle("match", hit);
      if (hit) this.matches.push(g);
    }
    if (next && this.matches.length) {
      this.matchIndex = (this.matchIndex + 1) % this.matches.length;
      this.center(this.matches[this.matchIndex]);
    }
    return this.matches.length;
  }

  center(g) {
    const box = g.getBBox();
    const m = g.transform.baseVal.consolidate().matrix;
    const w = Math.min(this.view.w, 1200), h = w * (this.view.h / this.view.w);
    this.view = { x: m.e + box.width / 2 - w / 2, y: m.f + box.height / 2 - h / 2, w, h };
    this.applyView();
  }

  listenForZoomAndPan() {
    const svg = this.svg;
    // the pointer's position in graph coordinates
    const toGraph = (ev) => {
      const r = svg.getBoundingClientRect();
      const scale = Math.max(this.view.w / r.width, this.view.h / r.height);
      const ox = (r.width * scale - this.view.w) / 2, oy = (r.height * scale - this.view.h) / 2;
      return { x: this.view.x - ox + (ev.clientX - r.left) * scale, y: this.view.y - oy + (ev.clientY - r.top) * scale, scale };
    };
    svg.addEventListener("wheel", (ev) => {
      ev.preventDefault();
      const p = toGraph(ev);
      const k = Math.exp(ev.deltaY * 0.0015);
      this.view = { x: p.x - (p.x - this.view.x) * k, y: p.y - (p.y - this.view.y) * k, w: this.view.w * k, h: this.view.h * k };
      this.applyView();
    }, { passive: false });
    // window listeners rather than pointer capture, so clicks still reach the nodes
    let drag = null;
    svg.addEventListener("pointerdown", (ev) => {
      drag = { x: ev.clientX, y: ev.clientY, view: { ...this.view }, scale: toGraph(ev).scale };
      svg.classList.add("panning");
    });
    window.addEventListener("pointermove", (ev) => {
      if (!drag) return;
      this.view = { ...drag.view, x: drag.view.x - (ev.clientX - drag.x) * drag.scale, y: drag.view.y - (ev.clientY - drag.y) * drag.scale };
      this.applyView();
    });
    const stop = () => {
      drag = null;
      svg.classList.remove("panning");
    };
    window.addEventListener("pointerup", stop);
    window.addEventListener("pointercancel", stop);
  }
}
