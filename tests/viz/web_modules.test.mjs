// The VIZ page's pure parts under node's test runner (no browser): what a step's drawn graph holds
// (display_graph.js) and where the fast layout puts nodes (layered_layout.js).
//   node --test tests/viz/web_modules.test.mjs
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import vm from "node:vm";

import { displayGraph, nodeExpr, reachable } from "../../web/js/display_graph.js";

const web = new URL("../../web/js/", import.meta.url);
// layered_layout.js is a classic script for the layout worker: run it and take its function
const { layeredLayout } = vm.runInNewContext(`${readFileSync(new URL("layered_layout.js", web))}; ({ layeredLayout })`);

const node = (op, src = [], arg = "") => ({ op, dtype: "float32", arg, shape: "", src });
// 0 BUFFER, 1 CONST 2, 2 RESHAPE(0), 3 EXPAND(2), 4 MUL(3, 1), 5 SINK(4); step 1 turns MUL into ADD(3, 3)
const trace = {
  nodes: [node("BUFFER"), node("CONST", [], "2"), node("RESHAPE", [0], "(4, 1)"), node("EXPAND", [2], "(4, 4)"),
    node("MUL", [3, 1]), node("SINK", [4]), node("ADD", [3, 3]), node("SINK", [6])],
  roots: [5, 7],
  steps: [{ before: 4, after: 6 }],
};

test("constants go into their users' labels and movement chains into the node they feed", () => {
  const g = displayGraph(trace, 0, { hideConsts: true, foldChains: true });
  assert.deepEqual(g.nodes.map((n) => n.id).sort(), [0, 4, 5]);
  const mul = g.nodes.find((n) => n.id === 4);
  assert.ok(mul.lines.includes("src0 ← EXPAND (4, 4) ← RESHAPE (4, 1)"));
  assert.ok(mul.lines.includes("src1: CONST 2"));
  assert.deepEqual(g.edges.map((e) => [e.from, e.to]).sort(), [[0, 4], [4, 5]]);
  const all = displayGraph(trace, 0, { hideConsts: false, foldChains: false });
  assert.equal(all.nodes.length, reachable(trace.nodes, 5).size);
});

test("a step marks the nodes it made and its replacement", () => {
  const g = displayGraph(trace, 1, { hideConsts: false, foldChains: false });
  const byId = Object.fromEntries(g.nodes.map((n) => [n.id, n]));
  assert.ok(byId[6].changed && byId[6].current && byId[7].changed);
  assert.ok(!byId[3].changed && !byId[0].changed);
  assert.equal(nodeExpr(trace.nodes, 4), "MUL(EXPAND (4, 4)(RESHAPE (4, 1)), CONST 2)");
});

test("a collapsed node hides what only it reads", () => {
  const g = displayGraph(trace, 0, { hideConsts: false, foldChains: false, collapsed: new Set([4]) });
  assert.deepEqual(g.nodes.map((n) => n.id).sort(), [4, 5]);
  assert.ok(g.nodes.find((n) => n.id === 4).lines.includes("[+4 nodes collapsed]"));
});

test("the fast layout puts sources left of their users, without overlaps", () => {
  // a diamond plus a long edge: 0 -> 1 -> 3, 0 -> 2 -> 3, 0 -> 3
  const nodes = [0, 1, 2, 3].map((id) => ({ id, width: 50 + 10 * id, height: 20 }));
  const edges = [[0, 1], [0, 2], [1, 3], [2, 3], [0, 3]].map(([from, to]) => ({ from, to }));
  const layout = layeredLayout({ nodes, edges }, { nodesep: 10, ranksep: 30 });
  for (const { from, to } of edges) assert.ok(layout.nodes[from].x < layout.nodes[to].x, `${from} left of ${to}`);
  const [a, b] = [layout.nodes[1], layout.nodes[2]];
  assert.equal(a.x, b.x);
  assert.ok(Math.abs(a.y - b.y) >= 20 + 10);
  assert.equal(layout.edges.length, edges.length);
  assert.ok(layout.width > 0 && layout.height > 0);
});
