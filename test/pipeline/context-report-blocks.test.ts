/**
 * The context report's map-only and retrieved files (issue 15): their tokens are their blocks'
 * in the map or the retrieval section, and their kept share is counted over those blocks' spans.
 * Hand-built: every span and count below is worked out by hand in the comments.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contextReport, type KeptPositions } from '../../src/pipeline/context-report';

// positions: head [0,2) · tree [2,4) · a.ts [4,7) · map [7,13) · retrieval [13,18) · question [18,20)
// map blocks: m.ts at offset 1, 2 tokens → [8,10); w.ts at offset 3, 4 tokens → [10,14), clamped to [10,13)
// retrieval blocks: r.ts at offset 1, 2 tokens → [14,16); q.ts at offset 3, 2 tokens → [16,18)
const PACK = {
  sections: [
    { kind: 'tree', tokens: 2 },
    { kind: 'file', path: 'a.ts', tokens: 3 },
    { kind: 'map', tokens: 6 },
  ],
  skipped: [
    { path: 'm.ts', reason: 'over-budget' as const, detail: 'in the repository map only' },
    { path: 'q.ts', reason: 'over-budget' as const, detail: 'neither in full nor in the repository map' },
    { path: 'r.ts', reason: 'over-budget' as const, detail: 'neither in full nor in the repository map' },
    { path: 'w.ts', reason: 'over-budget' as const, detail: 'in the repository map only' },
  ],
  ignoredCount: 0,
  packing: 'ranked' as const,
  mapped: [
    { path: 'm.ts', tokens: 2, offset: 1 },
    { path: 'w.ts', tokens: 4, offset: 3 },
  ],
};
const RETRIEVAL = {
  tokens: 5,
  files: [
    { path: 'r.ts', tokens: 2, offset: 1 },
    { path: 'q.ts', tokens: 2, offset: 3 },
  ],
};
// one layer, two KV heads, five kept positions each
const KEPT: KeptPositions = { positions: Int32Array.from([3, 8, 9, 14, 19, 8, 11, 12, 15, 17]), nLayer: 1, nHeadKv: 2 };

test("a map-only file's tokens are its map block's, a retrieved file's its chunks' blocks', and both get kept shares over those spans", () => {
  const r = contextReport({ pack: PACK, headTokens: 2, L: 20, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.deepEqual(r.files, [
    // [4,7): no kept position in either head
    { path: 'a.ts', status: 'full', tokens: 3, keptShare: 0 },
    // [8,10): 8, 9 in head 0 and 8 in head 1 → 3 of 2 × 2
    { path: 'm.ts', status: 'map', tokens: 2, keptShare: 3 / 4 },
    // [16,18): 17 in head 1 → 1 of 2 × 2
    { path: 'q.ts', status: 'retrieved', tokens: 2, keptShare: 1 / 4 },
    // [14,16): 14 in head 0, 15 in head 1 → 2 of 2 × 2
    { path: 'r.ts', status: 'retrieved', tokens: 2, keptShare: 2 / 4 },
    // clamped to [10,13), 3 tokens: 11, 12 in head 1 → 2 of 3 × 2
    { path: 'w.ts', status: 'map', tokens: 3, keptShare: 2 / 6 },
  ]);
  // the sections' own shares are unchanged: map [7,13) holds 8, 9 | 8, 11, 12 → 5 of 12
  assert.deepEqual(r.sections.map((s) => [s.kind, s.tokens, s.keptShare]), [
    ['tree', 2, 1 / 4],
    ['map', 6, 5 / 12],
    ['retrieval', 5, 3 / 10],
  ]);
});

test('with full attention every placed block keeps all of its positions; a continued thread knows none', () => {
  const full = contextReport({ pack: PACK, headTokens: 2, L: 20, attention: { kind: 'full' }, retrieval: RETRIEVAL });
  assert.deepEqual(full.files.map((f) => [f.path, f.tokens, f.keptShare]), [
    ['a.ts', 3, 1],
    ['m.ts', 2, 1],
    ['q.ts', 2, 1],
    ['r.ts', 2, 1],
    ['w.ts', 3, 1],
  ]);
  const continued = contextReport({ pack: PACK, headTokens: 2, L: 20, attention: { kind: 'continued' }, retrieval: RETRIEVAL });
  assert.deepEqual(continued.files.map((f) => [f.path, f.tokens, f.keptShare]), [
    ['a.ts', 3, null],
    ['m.ts', 2, null],
    ['q.ts', 2, null],
    ['r.ts', 2, null],
    ['w.ts', 3, null],
  ]);
});

test('a retrieved file with several chunks sums their spans; a block placed past its section takes no token', () => {
  const retrieval = { tokens: 5, files: [{ path: 'r.ts', tokens: 2, offset: 1 }, { path: 'r.ts', tokens: 2, offset: 3 }] };
  const pack = { ...PACK, skipped: PACK.skipped.filter((s) => s.path !== 'q.ts'), mapped: [{ path: 'm.ts', tokens: 2, offset: 1 }, { path: 'w.ts', tokens: 2, offset: 9 }] };
  const r = contextReport({ pack, headTokens: 2, L: 20, attention: { kind: 'snapkv', kept: KEPT }, retrieval });
  // r.ts: [14,16) ∪ [16,18): 14 | 15, 17 → 3 of 4 × 2
  assert.deepEqual(r.files.find((f) => f.path === 'r.ts'), { path: 'r.ts', status: 'retrieved', tokens: 4, keptShare: 3 / 8 });
  // w.ts at offset 9 of a 6-token map: no span; its given tokens, no share
  assert.deepEqual(r.files.find((f) => f.path === 'w.ts'), { path: 'w.ts', status: 'map', tokens: 2, keptShare: null });
});

test('a negative or fractional block offset is refused', () => {
  const pack = { ...PACK, mapped: [{ path: 'm.ts', tokens: 2, offset: -1 }] };
  assert.throws(() => contextReport({ pack, headTokens: 2, L: 20, attention: { kind: 'full' } }), RangeError);
  const retrieval = { tokens: 5, files: [{ path: 'r.ts', tokens: 2, offset: 0.5 }] };
  assert.throws(() => contextReport({ pack: PACK, headTokens: 2, L: 20, attention: { kind: 'full' }, retrieval }), RangeError);
});

test('left-out files beyond maxLeftOut are counted, not listed, with every left-out file counted by reason', () => {
  const pack = {
    sections: [{ kind: 'file', path: 'a.ts', tokens: 3 }],
    skipped: [
      { path: 'b.bin', reason: 'binary' as const },
      { path: 'c.ts', reason: 'over-budget' as const, detail: 'needs 9 tokens' },
      { path: 'd.ts', reason: 'over-budget' as const },
      { path: 'e.min.js', reason: 'minified' as const },
    ],
    ignoredCount: 0,
  };
  const r = contextReport({ pack, headTokens: 1, L: 6, attention: { kind: 'full' }, maxLeftOut: 2 });
  assert.deepEqual(r.files.map((f) => [f.path, f.status]), [
    ['a.ts', 'full'],
    ['b.bin', 'left-out'],
    ['c.ts', 'left-out'],
  ]);
  assert.equal(r.summary.totalFiles, 5);
  assert.equal(r.summary.leftOutUnlisted, 2);
  assert.deepEqual(r.summary.leftOutReasons, { binary: 1, 'over-budget': 2, minified: 1 });
  // all listed: neither field
  const all = contextReport({ pack, headTokens: 1, L: 6, attention: { kind: 'full' } });
  assert.equal(all.files.length, 5);
  assert.equal(all.summary.leftOutUnlisted, undefined);
  assert.equal(all.summary.leftOutReasons, undefined);
  assert.throws(() => contextReport({ pack, headTokens: 1, L: 6, attention: { kind: 'full' }, maxLeftOut: -1 }), RangeError);
});

test('a file in the map and retrieved has both blocks: its tokens are both, its share over both, and it counts as mapped and retrieved', () => {
  // r.ts's map block at offset 3, 2 tokens → [10,12); its chunk as before → [14,16)
  const pack = { ...PACK, mapped: [{ path: 'm.ts', tokens: 2, offset: 1 }, { path: 'r.ts', tokens: 2, offset: 3 }] };
  const r = contextReport({ pack, headTokens: 2, L: 20, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.deepEqual(r.files.find((f) => f.path === 'r.ts'), {
    path: 'r.ts',
    status: 'retrieved',
    // 2 + 2 tokens; [10,12): 11 in head 1; [14,16): 14 in head 0, 15 in head 1 → 3 of 4 × 2
    tokens: 4,
    keptShare: 3 / 8,
    parts: [
      { section: 'map', tokens: 2, keptShare: 1 / 4 },
      { section: 'retrieval', tokens: 2, keptShare: 2 / 4 },
    ],
  });
  // m.ts and r.ts are in the map; q.ts and r.ts retrieved; w.ts (no longer mapped) is left out
  assert.deepEqual([r.summary.mappedFiles, r.summary.retrievedFiles], [2, 2]);
  assert.deepEqual(r.files.map((f) => [f.path, f.status]), [['a.ts', 'full'], ['m.ts', 'map'], ['q.ts', 'retrieved'], ['r.ts', 'retrieved'], ['w.ts', 'left-out']]);
  // the map's blocks, per file: m.ts 2 + r.ts 2 of the map's 6 tokens (the rest its own lines)
  const mapTokens = r.files.reduce((n, f) => n + (f.status === 'map' ? f.tokens! : (f.parts?.find((p) => p.section === 'map')?.tokens ?? 0)), 0);
  assert.equal(mapTokens, 4);
  const full = contextReport({ pack, headTokens: 2, L: 20, attention: { kind: 'full' }, retrieval: RETRIEVAL });
  assert.deepEqual(full.files.find((f) => f.path === 'r.ts')?.keptShare, 1);
  const continued = contextReport({ pack, headTokens: 2, L: 20, attention: { kind: 'continued' }, retrieval: RETRIEVAL });
  assert.deepEqual([continued.files.find((f) => f.path === 'r.ts')?.tokens, continued.files.find((f) => f.path === 'r.ts')?.keptShare], [4, null]);
});
