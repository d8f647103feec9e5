// Lays graphs out with dagre off the page's thread: thousands of nodes take seconds.
// In:  {key, nodes: [{id, width, height}], edges: [{from, to}]}
// Out: {key, nodes: {id: {x, y}}, edges: [[{x, y}, ...]], width, height}  (node x, y: centers)
importScripts("/vendor/dagre.min.js");

onmessage = ({ data }) => {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  g.setGraph({ rankdir: "LR", nodesep: 12, ranksep: 40, edgesep: 6 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of data.nodes) g.setNode(String(n.id), { width: n.width, height: n.height });
  data.edges.forEach((e, i) => g.setEdge(String(e.from), String(e.to), {}, String(i)));
  dagre.layout(g);
  const nodes = {};
  for (const n of data.nodes) {
    const { x, y } = g.node(String(n.id));
    nodes[n.id] = { x, y };
  }
  const edges = data.edges.map((e, i) => g.edge(String(e.from), String(e.to), String(i)).points);
  const { width, height } = g.graph();
  postMessage({ key: data.key, nodes, edges, width, height });
};
