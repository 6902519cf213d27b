/**
 * PageRank (issue 15) against ranks computed independently: a 2-node graph solved by hand, and a
 * 4-node weighted graph with a dangling node and a personalization vector solved as a linear
 * system by Gaussian elimination in float64 (no power iteration), plus the aider edge weights.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { FileTags } from '../../src/context/map/tags';
import { buildReferenceGraph } from '../../src/context/rank/graph';
import { pagerank, type WeightedEdge } from '../../src/context/rank/pagerank';
import { rankFiles } from '../../src/context/rank/rank';

/**
 * Solves x = α (Wᵀ x + (Σ_dangling x) p) + (1 − α) p with Σ x = 1 directly: the equations
 * (I − α Wᵀ − α p dᵀ) x = (1 − α) p, where d marks the dangling nodes, by Gaussian elimination
 * with partial pivoting.
 */
function solvePageRank(n: number, edges: readonly WeightedEdge[], p: readonly number[], alpha = 0.85): number[] {
  const out = new Array<number>(n).fill(0);
  for (const e of edges) out[e.from]! += e.weight;
  const psum = p.reduce((a, b) => a + b, 0);
  const pn = p.map((v) => v / psum);
  const A: number[][] = Array.from({ length: n }, (_, i) => Array.from({ length: n + 1 }, (_, j) => (j === i ? 1 : 0)));
  for (const e of edges) A[e.to]![e.from]! -= (alpha * e.weight) / out[e.from]!;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) if (out[j] === 0) A[i]![j]! -= alpha * pn[i]!;
    A[i]![n] = (1 - alpha) * pn[i]!;
  }
  for (let c = 0; c < n; c++) {
    let best = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(A[r]![c]!) > Math.abs(A[best]![c]!)) best = r;
    [A[c], A[best]] = [A[best]!, A[c]!];
    for (let r = 0; r < n; r++) {
      if (r === c) continue;
      const f = A[r]![c]! / A[c]![c]!;
      for (let k = c; k <= n; k++) A[r]![k]! -= f * A[c]![k]!;
    }
  }
  return A.map((row, i) => row[n]! / A[i]![i]!);
}

test('two nodes, A → B, B dangling: ranks 20/57 and 37/57 (solved by hand)', () => {
  // x_A = 0.85 · x_B / 2 + 0.15 / 2 and x_A + x_B = 1  →  1.425 x_A = 0.5  →  x_A = 20/57
  const x = pagerank(2, [{ from: 0, to: 1, weight: 1 }], { tolerance: 1e-12 });
  assert.ok(Math.abs(x[0]! - 20 / 57) < 1e-9, `${x[0]}`);
  assert.ok(Math.abs(x[1]! - 37 / 57) < 1e-9, `${x[1]}`);
});

test('a weighted 4-node graph with a dangling node, parallel edges and personalization matches the linear system', () => {
  const edges: WeightedEdge[] = [
    { from: 0, to: 1, weight: 3 },
    { from: 0, to: 2, weight: 1 },
    { from: 1, to: 2, weight: 2 },
    { from: 1, to: 2, weight: 1 }, // parallel: adds up to 3
    { from: 2, to: 0, weight: 0.5 },
    { from: 2, to: 2, weight: 0.5 }, // self-loop
    // node 3 has no out-edges (dangling) and nothing points to it
  ];
  const p = [1, 0, 0, 3];
  const expected = solvePageRank(4, edges, p);
  assert.ok(Math.abs(expected.reduce((a, b) => a + b, 0) - 1) < 1e-12);
  const x = pagerank(4, edges, { personalization: p, tolerance: 1e-13, maxIterations: 10_000 });
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(x[i]! - expected[i]!) < 1e-9, `node ${i}: ${x[i]} vs ${expected[i]}`);
  const uniform = solvePageRank(4, edges, [1, 1, 1, 1]);
  const xu = pagerank(4, edges, { tolerance: 1e-13, maxIterations: 10_000 });
  for (let i = 0; i < 4; i++) assert.ok(Math.abs(xu[i]! - uniform[i]!) < 1e-9, `uniform node ${i}: ${xu[i]} vs ${uniform[i]}`);
});

test('bad input is refused with the reason', () => {
  assert.throws(() => pagerank(2, [{ from: 0, to: 2, weight: 1 }]), /outside the 2 nodes/);
  assert.throws(() => pagerank(2, [{ from: 0, to: 1, weight: 0 }]), /weights must be finite and > 0/);
  assert.throws(() => pagerank(2, [], { personalization: [0, 0] }), /positive sum/);
  assert.deepEqual([...pagerank(0, [])], []);
});

function tags(definitions: string[], references: Array<[string, number]>): FileTags {
  return { grammar: 'typescript', definitions: definitions.map((name, i) => ({ kind: 'function', name, line: i + 1, endLine: i + 1, signature: name })), references };
}

test("edges are weighted as aider's repository map: √refs, ×10 for long compound names, ×0.1 for _private, ×50 from recent files; no self-edges", () => {
  const files = [
    { path: 'a.ts', tags: tags(['loadConfig', 'x'], [['parseArgs', 4]]) },
    { path: 'b.ts', tags: tags(['parseArgs', '_hidden'], [['loadConfig', 1], ['_hidden', 9], ['x', 1]]) },
    { path: 'README.md' },
    { path: 'c.ts', tags: tags(['_hidden'], []) },
  ];
  const edges = buildReferenceGraph(files, { recent: new Set(['b.ts']) });
  assert.deepEqual(edges, [
    // '_hidden' (b → c; b's own definition gets no self-edge): ×0.1 for the underscore, ×50 as b is recent, √9 = 3
    { from: 1, to: 3, weight: 0.1 * 50 * 3 },
    // 'loadConfig' (b → a): camelCase of 10 characters ×10, recent ×50, √1
    { from: 1, to: 0, weight: 10 * 50 },
    // 'parseArgs' (a → b): camelCase of 9 characters ×10, √4 = 2
    { from: 0, to: 1, weight: 10 * 2 },
    // 'x' (b → a): short name, recent ×50
    { from: 1, to: 0, weight: 50 },
  ]);
  // no recent files: the same edges without the ×50; a name nobody references adds nothing
  const plain = buildReferenceGraph([{ path: 'd.ts', tags: tags(['lonely'], []) }, ...files]);
  assert.deepEqual(plain, [
    { from: 2, to: 4, weight: 0.1 * 3 },
    { from: 2, to: 1, weight: 10 },
    { from: 1, to: 2, weight: 20 },
    { from: 2, to: 1, weight: 1 },
  ]);
});

test('recent files pull the rank towards what they reference', () => {
  const files = [
    { path: 'core.ts', tags: tags(['coreThing'], []) },
    { path: 'util.ts', tags: tags(['utilThing'], []) },
    { path: 'app.ts', tags: tags([], [['utilThing', 1]]) },
    { path: 'cli.ts', tags: tags([], [['coreThing', 1]]) },
  ];
  const toCli = rankFiles(files, ['cli.ts']);
  const toApp = rankFiles(files, ['app.ts']);
  assert.ok(toCli[0]! > toCli[1]!, 'cli.ts references core.ts');
  assert.ok(toApp[1]! > toApp[0]!, 'app.ts references util.ts');
  const sum = [...toCli].reduce((a, b) => a + b, 0);
  assert.ok(Math.abs(sum - 1) < 1e-9);
});
