// What one step of a rewrite looks like as a drawn graph: which nodes are shown, their labels,
// colors and edges. Constants can go into their users' labels and movement chains into the node
// they feed, so graphs of thousands of nodes stay readable.

const MOVEMENT = new Set(["RESHAPE", "PERMUTE", "EXPAND", "PAD", "SHRINK", "FLIP"]);
const ALU = new Set(["CAST", "BITCAST", "EXP2", "LOG2", "SIN", "SQRT", "RECIPROCAL", "NEG", "TRUNC", "ADD", "MUL",
  "SUB", "FDIV", "IDIV", "MOD", "MAX", "CMPLT", "CMPNE", "CMPEQ", "AND", "OR", "XOR", "SHL", "SHR", "WHERE"]);
const COLORS = {
  BUFFER: "#b0bdff", PARAM: "#ffe0b0", CONST: "#e0e0e0", RANGE: "#c8a0e0", SPECIAL: "#c0c0ff", SINK: "#d0d0d0",
  END: "#a89f96", AFTER: "#b8a896", INDEX: "#e8ffa0", LOAD: "#ffc0c0", STORE: "#87ceeb", REDUCE: "#ff7b7b",
  CALL: "#6fcf97", LINEAR: "#9ae6b4", COPY: "#d08ad0", CONTIGUOUS: "#ffc14d", VECTORIZE: "#f6ccff", GEP: "#f0d0ff",
};
const MAX_LINE = 48;

export function nodeColor(op) {
  if (COLORS[op]) return COLORS[op];
  if (MOVEMENT.has(op)) return "#d8f9e4";
  if (ALU.has(op)) return "#ffffc0";
  return "#ffffff";
}

// Every node reachable from root (sources of sources...), not looking past `stops`.
export function reachable(nodes, root, stops = new Set()) {
  const seen = new Set([root]);
  const stack = [root];
  while (stack.length) {
    const id = stack.pop();
    if (stops.has(id)) continue;
    for (const s of nodes[id].src) {
      if (!seen.has(s)) {
        seen.add(s);
        stack.push(s);
      }
    }
  }
  return seen;
}

// One line of text for a node, e.g. "CONST 1.5" or "RESHAPE (4,4)".
export function nodeText(n) {
  return n.arg ? `${n.op} ${n.arg}` : n.op;
}

function wrap(text) {
  const lines = [];
  for (let i = 0; i < text.length; i += MAX_LINE) lines.push(text.slice(i, i + MAX_LINE));
  return lines;
}

// The graph after `step` (0: the input) as {nodes: [{id, lines, color, changed, current}], edges:
// [{from, to, changed}]}. A node is `changed` when the step made it (it was not in the graph
// before); `current` is the step's replacement itself. The sources of `collapsed` nodes are drawn
// only if something else reaches them.
export function displayGraph(trace, step, { hideConsts, foldChains, collapsed = new Set() }) {
  const nodes = trace.nodes;
  const root = trace.roots[step];
  const shown = reachable(nodes, root, collapsed);
  const before = step > 0 ? reachable(nodes, trace.roots[step - 1]) : shown;
  const current = step > 0 ? trace.steps[step - 1].after : -1;
  const users = new Map();
  for (const id of shown) for (const s of nodes[id].src) users.set(s, (users.get(s) || 0) + 1);
  const inlined = (id) => hideConsts && id !== root && nodes[id].op === "CONST";
  const folded = (id) => foldChains && id !== root && MOVEMENT.has(nodes[id].op) && nodes[id].src.length === 1 &&
    users.get(id) === 1;
  const isNew = (id) => !before.has(id);

  const out = { nodes: [], edges: [] };
  for (const id of shown) {
    if (inlined(id) || folded(id)) continue;
    const n = nodes[id];
    const lines = [n.op + (n.dtype === "void" ? "" : ` ${n.dtype}`)];
    if (n.arg) lines.push(...wrap(n.arg));
    if (n.shape) lines.push(n.shape);
    if (collapsed.has(id)) {
      const hidden = [...reachable(nodes, id)].filter((h) => !shown.has(h)).length;
      lines.push(`[+${hidden} nodes collapsed]`);
      out.nodes.push({ id, lines, color: nodeColor(n.op), changed: isNew(id) && step > 0, current: id === current });
      continue;
    }
    let changed = isNew(id);
    n.src.forEach((s, i) => {
      // follow a folded chain down to the node it reads
      const chain = [];
      while (folded(s)) {
        chain.push(nodeText(nodes[s]));
        changed ||= isNew(s);
        s = nodes[s].src[0];
      }
      if (inlined(s)) {
        lines.push(...wrap(`src${i}: ${[...chain, nodeText(nodes[s])].join(" ← ")}`));
        return;
      }
      if (chain.length) lines.push(...wrap(`src${i} ← ${chain.join(" ← ")}`));
      out.edges.push({ from: s, to: id, changed: isNew(s) && isNew(id) });
    });
    out.nodes.push({ id, lines, color: nodeColor(n.op), changed: changed && step > 0, current: id === current });
  }
  return out;
}

// A short expression for a node: its text and its sources' texts, two levels deep, at most
// MAX_EXPR_SOURCES sources each.
const MAX_EXPR_SOURCES = 8;
export function nodeExpr(nodes, id, depth = 2) {
  const n = nodes[id];
  if (depth === 0 || n.src.length === 0) return nodeText(n);
  const shown = n.src.slice(0, MAX_EXPR_SOURCES).map((s) => nodeExpr(nodes, s, depth - 1));
  if (n.src.length > MAX_EXPR_SOURCES) shown.push(`… ${n.src.length - MAX_EXPR_SOURCES} more`);
  return `${nodeText(n)}(${shown.join(", ")})`;
}
