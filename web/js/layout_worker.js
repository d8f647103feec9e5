// Lays graphs out off the page's thread: dagre for graphs of up to DAGRE_MAX_NODES nodes, beyond
// that the fast layered layout (layered_layout.js), since dagre takes minutes on thousands.
// In:  {key, nodes: [{id, width, height}], edges: [{from, to}]}
// Out: {key, nodes: {id: {x, y}}, edges: [[{x, y}, ...]], width, height, fast}  (x, y: centers)
importScripts("/vendor/dagre.min.js", "/js/layered_layout.js");

const DAGRE_MAX_NODES = 500;
const SPACING = { nodesep: 12, ranksep: 40 };

function dagreLayout(data) {
  const g = new dagre.graphlib.Graph({ multigraph: true });
  // tight-tree ranks as well here as network-simplex, and about 10x faster on hundreds of nodes
  g.setGraph({ rankdir: "LR", edgesep: 6, ranker: "tight-tree", ...SPACING });
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
  return { nodes, edges, width, height };
}

onmessage = ({ data }) => {
  const fast = data.nodes.length > DAGRE_MAX_NODES;
  const layout = fast ? layeredLayout(data, SPACING) : dagreLayout(data);
  postMessage({ key: data.key, fast, ...layout });
};
