/**
 * The file statuses of the ranked packing in the context report (issue 15): a file only in the
 * repository map is `map`, a file whose chunks the question retrieved is `retrieved` (with its
 * chunks' tokens; one also in the map counts there too, with both parts), the retrieval section after the prefix gets its own span and kept share; the
 * stats line, the --show-context table and the chat's Context line name them (rows with equal kept shares keep
 * prompt order: map-only and retrieved files in the packer's order). Hand-built pack.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatContext, contextLineHtml } from '../../src/chat/context-line';
import type { AnswerStats } from '../../src/chat/protocol';
import { formatContextTable } from '../../src/cli/context-table';
import { formatStats } from '../../src/cli/stats-line';
import { contextReport, type KeptPositions } from '../../src/pipeline/context-report';
import type { AskStats } from '../../src/pipeline/ask';

/*
 * The hand-built ranked prompt (L = 15):
 *   positions 0-1   head
 *   positions 2-3   the file tree (2 tokens)
 *   positions 4-6   a.ts in full (3 tokens)
 *   positions 7-9   the repository map (3 tokens): m.ts and r.ts
 *   positions 10-12 the retrieval section (3 tokens): one chunk of r.ts (2 tokens on its own)
 *   positions 13-14 the question (window w = 2)
 * 1 layer × 2 KV heads, B = 5:
 *   H0: 2 4 10 13 14 → tree 1, a.ts 1, retrieval 1
 *   H1: 7 11 12 13 14 → map 1, retrieval 2
 * tree 1/(2·2) = 1/4; a.ts 1/(3·2) = 1/6; map 1/(3·2) = 1/6; retrieval 3/(3·2) = 1/2.
 */
const KEPT: KeptPositions = { positions: Int32Array.from([2, 4, 10, 13, 14, 7, 11, 12, 13, 14]), nLayer: 1, nHeadKv: 2 };
const PACK = {
  sections: [
    { kind: 'tree', tokens: 2 },
    { kind: 'file', path: 'a.ts', tokens: 3 },
    { kind: 'map', tokens: 3 },
  ],
  skipped: [
    { path: 'm.ts', reason: 'over-budget' as const, detail: 'in the repository map only (2 definitions; files in full are chosen by rank)' },
    { path: 'r.ts', reason: 'over-budget' as const, detail: 'in the repository map only (1 definitions; files in full are chosen by rank)' },
    { path: 'x.ts', reason: 'over-budget' as const, detail: 'neither in full nor in the repository map (files are chosen by rank)' },
  ],
  ignoredCount: 0,
  packing: 'ranked' as const,
  mapped: [{ path: 'm.ts' }, { path: 'r.ts' }],
};
const RETRIEVAL = { tokens: 3, files: [{ path: 'r.ts', tokens: 2 }] };

test('map-only files are "map", files with retrieved chunks are "retrieved" (with both parts when also in the map), the rest left out; the retrieval section has its own share', () => {
  const r = contextReport({ pack: PACK, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.deepEqual(r.files, [
    { path: 'a.ts', status: 'full', tokens: 3, keptShare: 1 / 6 },
    { path: 'm.ts', status: 'map', tokens: null, keptShare: null },
    // in the map too: both blocks are its, the map's of unknown tokens (no block tokens given)
    { path: 'r.ts', status: 'retrieved', tokens: null, keptShare: null, parts: [{ section: 'map', tokens: null, keptShare: null }, { section: 'retrieval', tokens: 2, keptShare: null }] },
    { path: 'x.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'over-budget', detail: 'neither in full nor in the repository map (files are chosen by rank)' },
  ]);
  assert.deepEqual(r.sections, [
    { kind: 'tree', tokens: 2, keptShare: 1 / 4 },
    { kind: 'map', tokens: 3, keptShare: 1 / 6 },
    { kind: 'retrieval', tokens: 3, keptShare: 1 / 2 },
  ]);
  assert.deepEqual(r.summary, {
    packedFiles: 1,
    totalFiles: 4,
    packing: 'ranked',
    mappedFiles: 2,
    retrievedFiles: 1,
    ignored: 0,
    fileTokens: 3,
    promptTokens: 15,
    attention: 'snapkv',
    keptPerHead: 5,
    keptRatio: 5 / 15,
  });
});

test('without a retrieval section every mapped file is "map" and no span follows the map', () => {
  const r = contextReport({ pack: PACK, headTokens: 2, L: 15, attention: { kind: 'full' } });
  assert.deepEqual(r.files.map((f) => [f.path, f.status]), [['a.ts', 'full'], ['m.ts', 'map'], ['r.ts', 'map'], ['x.ts', 'left-out']]);
  assert.deepEqual(r.sections.map((s) => s.kind), ['tree', 'map']);
  assert.deepEqual([r.summary.mappedFiles, r.summary.retrievedFiles], [2, 0]);
});

test('the stats line says packing=ranked mapped=N retrieved=M; the smallest-first line does not', () => {
  const context = contextReport({ pack: PACK, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  const stats = {
    L: 15, prefixTokens: 10, B: 5, ratio: 1 / 3, files: 1, skipped: 3, droppedTurns: 0, packMs: 1, cache: 'off', reusedTokens: 0, prefilledTokens: 15, restoreMs: 0, prefillMs: 1,
    prefillTokS: 15000, snapMs: 1, ttftMs: 2, decodeTokens: 1, decodeMs: 1, decodeTokS: 1000, nKvBefore: 16, nKvAfter: 5, kvBytesBefore: 100, kvBytesAfter: 50, snap: true, stopReason: 'maxTokens', context,
  } as AskStats;
  assert.match(formatStats(stats), / files=1 skipped=3 packing=ranked mapped=2 retrieved=1 pack_ms=1\.0 /);
  const plain = contextReport({ pack: { sections: [{ kind: 'file', path: 'a.ts', tokens: 3 }], skipped: [], ignoredCount: 0, packing: 'smallest-first' }, headTokens: 2, L: 15, attention: { kind: 'full' } });
  assert.doesNotMatch(formatStats({ ...stats, context: plain }), /packing=|mapped=|retrieved=/);
});

test('a packing auto chose: packingAuto in the report, packing=auto:… in the stats line, a packing: line in --show-context', () => {
  const context = contextReport({ pack: { ...PACK, auto: true }, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.deepEqual([context.summary.packing, context.summary.packingAuto], ['ranked', true]);
  const stats = {
    L: 15, prefixTokens: 10, B: 5, ratio: 1 / 3, files: 1, skipped: 3, droppedTurns: 0, packMs: 1, cache: 'off', reusedTokens: 0, prefilledTokens: 15, restoreMs: 0, prefillMs: 1,
    prefillTokS: 15000, snapMs: 1, ttftMs: 2, decodeTokens: 1, decodeMs: 1, decodeTokS: 1000, nKvBefore: 16, nKvAfter: 5, kvBytesBefore: 100, kvBytesAfter: 50, snap: true, stopReason: 'maxTokens', context,
  } as AskStats;
  assert.match(formatStats(stats), / files=1 skipped=3 packing=auto:ranked mapped=2 retrieved=1 pack_ms=1\.0 /);
  assert.equal(formatContextTable(context).split('\n')[1], 'packing: auto chose ranked (not every file fits in full)');
  const fits = contextReport({ pack: { sections: [{ kind: 'file', path: 'a.ts', tokens: 3 }], skipped: [], ignoredCount: 0, packing: 'smallest-first', auto: true }, headTokens: 2, L: 15, attention: { kind: 'full' } });
  assert.equal(fits.summary.packingAuto, true);
  assert.match(formatStats({ ...stats, context: fits }), / files=1 skipped=3 packing=auto:smallest-first pack_ms=1\.0 /);
  assert.doesNotMatch(formatStats({ ...stats, context: fits }), /mapped=|retrieved=/);
  assert.deepEqual(formatContextTable(fits).split('\n').slice(0, 2), ['context: Packed 1 of 1 file (3 tokens) · full attention (all 15 kept)', 'packing: auto chose smallest-first (every file fits in full)']);
  // not chosen by auto: no packingAuto, no packing: line
  const explicit = contextReport({ pack: { ...PACK, auto: false }, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.equal('packingAuto' in explicit.summary, false);
  assert.ok(!formatContextTable(explicit).includes('packing:'));
});

test('--show-context lists "(map)" and "(retrieved)" files and the retrieved chunks as a section', () => {
  const r = contextReport({ pack: PACK, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  assert.equal(
    formatContextTable(r),
    [
      'context: Packed 1 of 4 files (3 tokens) · SnapKV kept 5 per head (33 %)',
      '  kept               tokens  file',
      '  ██········   17 %       3  a.ts',
      '                  ?       -  m.ts (map)',
      '                  ?       -  r.ts (map + retrieved)',
      '  ███·······   25 %       2  (file tree)',
      '  ██········   17 %       3  (repository map)',
      '  █████·····   50 %       3  (retrieved chunks)',
      'left out: 1 file',
      '  x.ts: did not fit the context — neither in full nor in the repository map (files are chosen by rank)',
    ].join('\n'),
  );
});

test("the chat's Context line labels map and retrieved files, a map file's tokens read –", () => {
  const r = contextReport({ pack: PACK, headTokens: 2, L: 15, attention: { kind: 'snapkv', kept: KEPT }, retrieval: RETRIEVAL });
  const html = contextLineHtml(
    { L: 15, B: 5, ratio: 1 / 3, snap: true, files: 1, packMs: 1, prefillMs: 1, prefillTokS: 15000, snapMs: 1, decodeMs: 1, decodeTokens: 1, decodeTokS: 1000, ttftMs: 2, cache: 'off' } satisfies AnswerStats,
    chatContext(r),
  );
  assert.match(html, /data-path="m\.ts"><span class="context-name">m\.ts<\/span> <span class="context-status">map<\/span><\/a><span class="context-tokens">–<\/span>/);
  assert.match(html, /data-path="r\.ts"><span class="context-name">r\.ts<\/span> <span class="context-status">map \+ retrieved<\/span><\/a><span class="context-tokens">–<\/span>/);
  assert.match(html, /<span class="context-path context-name">retrieved chunks<\/span><span class="context-tokens">3<\/span>/);
});
