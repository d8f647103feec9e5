// A fast layered layout for graphs too big for dagre (whose crossing minimization takes minutes on
// a few thousand nodes): each node's column is its longest path from a source, rows are ordered by
// a few sweeps of the barycenter heuristic, edges are straight. Linear in the graph's size per sweep.
// Loaded by layout_worker.js; same input and output as its dagre path.

function layeredLayout({ nodes, edges }, { nodesep, ranksep }) {
  const byId = new Map(nodes.map((n) => [n.id, { ...n, rank: 0, order: 0, srcs: [], users: [] }]));
  for (const e of edges) {
    byId.get(e.to).srcs.push(byId.get(e.from));
    byId.get(e.from).users.push(byId.get(e.to));
  }
  // columns: longest path from a source (nodes arrive sources first)
  const all = [...byId.values()];
  const topo = topological(all);
  for (const n of topo) n.rank = n.srcs.reduce((r, s) => Math.max(r, s.rank + 1), 0);
  const ranks = [];
  for (const n of topo) (ranks[n.rank] ??= []).push(n);
  ranks.forEach((rank) => rank.forEach((n, i) => (n.order = i)));

  // rows: sort each column by the mean row of its neighbours, alternating directions
  const mean = (list, fallback) => (list.length ? list.reduce((t, m) => t + m.order, 0) / list.length : fallback);
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? ranks : [...ranks].reverse();
    for (const rank of order) {
      const key = new Map(rank.map((n) => [n, mean(down ? n.srcs : n.users, n.order)]));
      rank.sort((a, b) => key.get(a) - key.get(b));
      rank.forEach((n, i) => (n.order = i));
    }
  }

  // coordinates: columns as wide as their widest node, each column centered vertically
  let x = 0;
  const columnHeights = ranks.map((rank) => rank.reduce((h, n) => h + n.height + nodesep, -nodesep));
  const tallest = Math.max(...columnHeights);
  ranks.forEach((rank, r) => {
    const width = Math.max(...rank.map((n) => n.width));
    let y = (tallest - columnHeights[r]) / 2;
    for (const n of rank) {
      n.x = x + width / 2;
      n.y = y + n.height / 2;
      y += n.height + nodesep;
    }
    x += width + ranksep;
  });
  const out = {};
  for (const n of all) out[n.id] = { x: n.x, y: n.y };
  const edgePoints = edges.map((e) => {
    const a = byId.get(e.from), b = byId.get(e.to);
    return [{ x: a.x + a.width / 2, y: a.y }, { x: b.x - b.width / 2, y: b.y }];
  });
  return { nodes: out, edges: edgePoints, width: x - ranksep, height: tallest };
}

// Nodes with every source before its users (Kahn's algorithm).
function topological(nodes) {
  const pending = new Map(nodes.map((n) => [n, n.srcs.length]));
  const ready = nodes.filter((n) => n.srcs.length === 0);
  const out = [];
  while (ready.length) {
    const n = ready.pop();
    out.push(n);
    for (const u of n.users) {
      pending.set(u, pending.get(u) - 1);
      if (pending.get(u) === 0) ready.push(u);
    }
  }
  return out;
}
