/**
 * Retrieval chunking is linear in a file's definitions (issue 29, item 7): `chunksOf` on 10K/40K
 * one-line definitions (20 s of CPU for 40K before, each definition scanning all the others), and
 * `definitionNesting` answers exactly what the pairwise scans answered, on random nested files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Definition, DefinitionKind, FileTags } from '../../src/context/map/tags';
import { chunksOf, definitionNesting } from '../../src/context/retrieve/chunks';
import { randomChars } from './fake-secrets';

/** `n` one-line functions (`function f123() {}` each), with tags as the parser gives them. */
function oneLiners(n: number, kind: DefinitionKind = 'function'): { text: string; tags: FileTags } {
  const lines = Array.from({ length: n }, (_, i) => `function f${i}() { return ${i}; }`);
  const definitions: Definition[] = lines.map((l, i) => ({ kind, name: `f${i}`, line: i + 1, endLine: i + 1, signature: l }));
  return { text: lines.join('\n'), tags: { grammar: 'typescript', definitions, references: [] } };
}

/** CPU time [ms] (user + system) that `fn` takes in this process. */
function cpuMs(fn: () => void): number {
  const start = process.cpuUsage();
  fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

test('40K one-line definitions chunk in under a second of CPU, one chunk each', () => {
  const { text, tags } = oneLiners(40_000);
  let chunks = 0;
  const ms = cpuMs(() => void (chunks = chunksOf('big.ts', text, tags).length));
  assert.equal(chunks, 40_000);
  assert.ok(ms < 1000, `${ms.toFixed(0)} ms of CPU`);
});

test('a class of 20K methods: its header and every method, in under a second of CPU', () => {
  const n = 20_000;
  const lines = ['class Big {', ...Array.from({ length: n }, (_, i) => `  m${i}() { return ${i}; }`), '}'];
  const definitions: Definition[] = [
    { kind: 'class', name: 'Big', line: 1, endLine: n + 2, signature: 'class Big {' },
    ...Array.from({ length: n }, (_, i): Definition => ({ kind: 'method', name: `m${i}`, line: i + 2, endLine: i + 2, signature: lines[i + 1]!.trim() })),
  ];
  let chunks: ReturnType<typeof chunksOf> = [];
  const ms = cpuMs(() => void (chunks = chunksOf('big.ts', lines.join('\n'), { grammar: 'typescript', definitions, references: [] })));
  assert.equal(chunks.length, n + 1);
  assert.deepEqual([chunks[0]!.name, chunks[0]!.startLine, chunks[0]!.endLine], ['Big', 1, 1]);
  assert.ok(chunks.slice(1).every((c, i) => c.owner === 'Big' && c.name === `m${i}`));
  assert.ok(ms < 1000, `${ms.toFixed(0)} ms of CPU`);
});

const KINDS: DefinitionKind[] = ['class', 'function', 'method', 'const', 'type', 'interface'];

/** Random nested definitions over lines `lo … hi` (seeded), some sharing a range, in source order. */
function randomDefs(seed: number): Definition[] {
  let x = seed;
  const next = (n: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % n;
  };
  const out: Definition[] = [];
  const fill = (lo: number, hi: number, depth: number): void => {
    for (let line = lo; line <= hi; ) {
      const end = Math.min(hi, line + next(Math.max(1, (hi - line) >> 1) + 1));
      const copies = next(5) === 0 ? 2 : 1;
      for (let c = 0; c < copies; c++) out.push({ kind: KINDS[next(KINDS.length)]!, name: randomChars(x, 4), line, endLine: end, signature: '' });
      if (depth < 4 && end > line) fill(line + 1, end, depth + 1);
      line = end + 1 + next(2);
    }
  };
  fill(1, 60, 0);
  return out.sort((a, b) => a.line - b.line);
}

test('definitionNesting answers as the pairwise scans did, on 300 random nested files', () => {
  const isCallable = (d: Definition): boolean => d.kind === 'function' || d.kind === 'method';
  const isType = (d: Definition): boolean => d.kind === 'class' || d.kind === 'interface' || d.kind === 'type';
  const holds = (o: Definition, d: Definition): boolean => o !== d && o.line <= d.line && o.endLine >= d.endLine;
  for (let seed = 1; seed <= 300; seed++) {
    const defs = randomDefs(seed);
    const nesting = definitionNesting(defs);
    for (const d of defs) {
      assert.equal(nesting.heldByNonConst(d), defs.some((o) => o.kind !== 'const' && holds(o, d)), `seed ${seed}`);
      assert.equal(nesting.innermostType(d), defs.filter((o) => isType(o) && holds(o, d)).sort((a, b) => b.line - a.line)[0], `seed ${seed}`);
      assert.deepEqual(nesting.members(d), defs.filter((o) => holds(d, o) && (isCallable(o) || (isType(o) && defs.some((m) => isCallable(m) && holds(o, m))))), `seed ${seed}`);
    }
  }
});
