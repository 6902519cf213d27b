/**
 * What the model read and what SnapKV kept (issue 14, section 4): kept positions per (layer, KV
 * head) map to the packed files' token spans. A hand-built prompt with hand-computed shares,
 * the guards, and the pipeline on the tiny model, checked against the file sections found again
 * in the session's own tokens.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { formatFileSection } from '../../src/context/section';
import { loadModel, type EngineModel } from '../../src/engine/model';
import type { PackResult } from '../../src/context/pack';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { byKeptShare, contextReport, keptPerSpan, percent, sectionSpans, summaryText, type ContextReport, type KeptPositions } from '../../src/pipeline/context-report';
import { checkTinyModel } from '../helpers/models';

/*
 * The hand-built prompt (L = 13):
 *   positions 0-1   head (system prompt, BOS)
 *   positions 2-4   a.ts (3 tokens)
 *   positions 5-9   b.ts (5 tokens)
 *   positions 10-12 question (the window w = 2 is 11-12)
 * 2 layers × 2 KV heads, B = 4 (the window's 2 positions plus 2 chosen):
 *   L0 H0: 0 2 11 12  → a.ts 1, b.ts 0
 *   L0 H1: 3 4 11 12  → a.ts 2, b.ts 0
 *   L1 H0: 5 9 11 12  → a.ts 0, b.ts 2
 *   L1 H1: 2 6 11 12  → a.ts 1, b.ts 1
 * a.ts: 4 kept of 3 × 2 × 2 = 12 → 1/3;  b.ts: 3 of 5 × 2 × 2 = 20 → 3/20.
 */
const KEPT: KeptPositions = {
  positions: Int32Array.from([0, 2, 11, 12, 3, 4, 11, 12, 5, 9, 11, 12, 2, 6, 11, 12]),
  nLayer: 2,
  nHeadKv: 2,
};
const PACK = {
  sections: [
    { kind: 'file', path: 'a.ts', tokens: 3 },
    { kind: 'file', path: 'b.ts', tokens: 5 },
  ],
  skipped: [
    { path: 'big.ts', reason: 'over-budget' as const, tokens: 900, detail: 'needs 900 tokens, 2 of 10 left (larger files are dropped first)' },
    { path: 'logo.png', reason: 'binary' as const },
  ],
  ignoredCount: 7,
};

test('kept positions per (layer, KV head) map to the files of a hand-built prompt with hand-computed shares', () => {
  assert.deepEqual(sectionSpans(2, [3, 5]), [
    { start: 2, end: 5 },
    { start: 5, end: 10 },
  ]);
  assert.deepEqual(keptPerSpan(KEPT, sectionSpans(2, [3, 5]), 13), [4, 3]);
  const r = contextReport({ pack: PACK, headTokens: 2, L: 13, attention: { kind: 'snapkv', kept: KEPT } });
  assert.deepEqual(r.files, [
    { path: 'a.ts', status: 'full', tokens: 3, keptShare: 4 / 12 },
    { path: 'b.ts', status: 'full', tokens: 5, keptShare: 3 / 20 },
    { path: 'big.ts', status: 'left-out', tokens: 0, keptShare: null, reason: 'over-budget', detail: 'needs 900 tokens, 2 of 10 left (larger files are dropped first)' },
    { path: 'logo.png', status: 'left-out', tokens: 0, keptShare: null, reason: 'binary' },
  ]);
  assert.deepEqual(r.summary, { packedFiles: 2, totalFiles: 4, mappedFiles: 0, retrievedFiles: 0, ignored: 7, fileTokens: 8, promptTokens: 13, attention: 'snapkv', keptPerHead: 4, keptRatio: 4 / 13 });
  assert.deepEqual(r.sections, []);
  assert.equal(summaryText(r.summary), 'Packed 2 of 4 files (8 tokens) · SnapKV kept 4 per head (31 %)');
  assert.deepEqual(byKeptShare(r.files).map((f) => f.path), ['a.ts', 'b.ts']);
});

test('the ranked packing: a file tree before the files and a repository map after them get their own spans and shares', () => {
  // positions 2-3 the tree (2 tokens), 4-6 a.ts (3), 7-9 the map (3), 10-12 the question; the same kept rows:
  //   L0 H0: 0 2 11 12 → tree 1;  L0 H1: 3 4 11 12 → tree 1, a.ts 1;  L1 H0: 5 9 11 12 → a.ts 1, map 1;  L1 H1: 2 6 11 12 → tree 1, a.ts 1
  const pack = { sections: [{ kind: 'tree', tokens: 2 }, { kind: 'file', path: 'a.ts', tokens: 3 }, { kind: 'map', tokens: 3 }], skipped: [], ignoredCount: 0 };
  const r = contextReport({ pack, headTokens: 2, L: 13, attention: { kind: 'snapkv', kept: KEPT } });
  assert.deepEqual(r.files, [{ path: 'a.ts', status: 'full', tokens: 3, keptShare: 3 / 12 }]);
  assert.deepEqual(r.sections, [
    { kind: 'tree', tokens: 2, keptShare: 3 / 8 },
    { kind: 'map', tokens: 3, keptShare: 1 / 12 },
  ]);
  assert.equal(r.summary.fileTokens, 3);
  assert.equal(r.summary.packedFiles, 1);
});

test('a non-uniform allocation: −1 padding counts for nothing and kept per head is the mean over heads', () => {
  // rows of 4 cells; L0 H0 keeps 2, L0 H1 keeps 4, L1 H0 keeps 3, L1 H1 keeps 3 → 12 / 4 heads = 3 per head
  const kept: KeptPositions = { positions: Int32Array.from([11, 12, -1, -1, 5, 6, 7, 12, 2, 3, 4, -1, 8, 9, 11, -1]), nLayer: 2, nHeadKv: 2 };
  // a.ts [2, 5): L1 H0 keeps 2, 3, 4 → 3 of 12;  b.ts [5, 10): 5, 6, 7 + 8, 9 → 5 of 20
  const r = contextReport({ pack: PACK, headTokens: 2, L: 13, attention: { kind: 'snapkv', kept } });
  assert.deepEqual(r.files.slice(0, 2).map((f) => f.keptShare), [3 / 12, 5 / 20]);
  assert.equal(r.summary.keptPerHead, 3);
  assert.equal(r.summary.keptRatio, 3 / 13);
  assert.deepEqual(byKeptShare([...r.files].reverse()).map((f) => f.path), ['b.ts', 'a.ts'], 'ties keep prompt order; 0.25 = 0.25');
});

test('full attention keeps every position (share 1); a continued thread does not know its shares', () => {
  const full = contextReport({ pack: PACK, headTokens: 2, L: 13, attention: { kind: 'full' } });
  assert.deepEqual(full.files.map((f) => f.keptShare), [1, 1, null, null]);
  assert.equal(full.summary.keptPerHead, 13);
  assert.equal(full.summary.keptRatio, 1);
  assert.equal(summaryText(full.summary), 'Packed 2 of 4 files (8 tokens) · full attention (all 13 kept)');
  const cont = contextReport({ pack: PACK, headTokens: 2, L: 13, attention: { kind: 'continued' } });
  assert.deepEqual(cont.files.map((f) => f.keptShare), [null, null, null, null]);
  assert.equal(summaryText(cont.summary), "Packed 2 of 4 files (8 tokens) · continued the thread's SnapKV cache");
});

test('kept positions that do not match the prompt are refused, not miscounted', () => {
  assert.throws(() => keptPerSpan({ ...KEPT, nHeadKv: 3 }, [], 13), /16 kept positions are not 2 layers × 3 KV heads/);
  assert.throws(() => keptPerSpan(KEPT, sectionSpans(2, [3, 5]), 12), /kept position 12 is outside the prompt \[0, 12\)/);
  assert.throws(() => keptPerSpan(KEPT, [{ start: 2, end: 5 }, { start: 4, end: 6 }], 13), /span 1 \[4, 6\) overlaps span 0 at position 4/);
  assert.throws(() => contextReport({ pack: PACK, headTokens: 6, L: 13, attention: { kind: 'full' } }), /the packed sections end at token 14, past the prompt's 13 tokens/);
  assert.throws(() => sectionSpans(0, [3, -1]), RangeError);
});

test('percentages: one decimal only near 0 % and 100 %', () => {
  assert.deepEqual([0, 0.004, 0.08, 0.5, 0.996, 1].map(percent), ['0 %', '0.4 %', '8 %', '50 %', '99.6 %', '100 %']);
});

let model: EngineModel;
let tmp: string;
before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-context-'));
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

/**
 * Asks on the tiny model and checks the report against the session itself: each section of the
 * prompt is found again in the session's tokens (file sections formatted from the files on disk,
 * the tree and map from the pack's text), independently of the pipeline's spans, and each share
 * is the count of kept positions inside it ÷ (tokens × layers × KV heads).
 */
async function checkAgainstSession(repo: string, packing: 'smallest-first' | 'ranked', contextSize: number): Promise<ContextReport> {
  let tokens: number[] = [];
  let kept = new Int32Array(0);
  const heads = model.info.nLayer * model.info.nHeadKv;
  let pack: PackResult | undefined;
  const stats = await askRepository(
    {
      repo, question: 'Which part is the largest?', model, snap: { ...DEFAULT_SNAP, budget: 128 }, contextSize, maxTokens: 4,
      session: { threads: 2 }, pack: { order: 'path', packing },
      afterSnap: (s) => {
        tokens = [...s.tokens];
        kept = Int32Array.from(s.snapKept());
      },
    },
    (e) => {
      if (e.kind === 'packed') pack = e.pack;
    },
  );
  assert.equal(kept.length, heads * 128, '[nLayer][nHeadKv][B]');
  const report = stats.context!;
  assert.ok(stats.B < stats.L, `SnapKV compressed: B ${stats.B} < L ${stats.L}`);
  assert.equal(report.summary.attention, 'snapkv');
  assert.equal(report.summary.keptPerHead, 128, 'a uniform budget keeps B per head');
  assert.equal(report.summary.promptTokens, stats.L);
  const packed = report.files.filter((f) => f.status === 'full');
  assert.ok(packed.length >= 2, `${packed.length} files packed`);
  assert.deepEqual(report.files.filter((f) => f.status === 'left-out').map((f) => [f.path, f.reason]).find((x) => x[0] === 'image.png'), ['image.png', 'binary']);
  // the prompt's sections, in order, as the report names them
  const rows = pack!.sections.map((sec) =>
    sec.kind === 'file'
      ? { name: sec.path!, text: formatFileSection(sec.path!, fs.readFileSync(path.join(repo, sec.path!), 'utf8')), share: packed.find((f) => f.path === sec.path)!.keptShare, tokens: packed.find((f) => f.path === sec.path)!.tokens! }
      : { name: sec.kind, text: sec.text, share: report.sections.find((x) => x.kind === sec.kind)!.keptShare, tokens: report.sections.find((x) => x.kind === sec.kind)!.tokens },
  );
  let at = tokens.length;
  const starts: number[] = [];
  for (const r of [...rows].reverse()) {
    const section = Array.from(model.tokenize(r.text));
    assert.equal(section.length, r.tokens, `${r.name}: tokens`);
    let s = at - section.length; // the last occurrence before the next section
    while (s >= 0 && !section.every((t, k) => tokens[s + k] === t)) s--;
    assert.ok(s >= 0, `${r.name} found in the prompt`);
    starts.unshift(s);
    at = s;
  }
  rows.forEach((r, i) => {
    let n = 0;
    for (const p of kept) if (p >= starts[i]! && p < starts[i]! + r.tokens) n++;
    assert.equal(r.share, n / (r.tokens * heads), `${r.name}: ${n} kept of ${r.tokens} × ${heads}`);
  });
  assert.ok(rows.some((r) => r.share! < 1), 'some section lost positions');
  return report;
}

test('the pipeline: each file\'s span is its section in the prompt, and its share counts the snap\'s kept positions there', async () => {
  const repo = path.join(tmp, 'repo');
  fs.mkdirSync(repo);
  for (let i = 0; i < 12; i++) fs.writeFileSync(path.join(repo, `part${i}.ts`), `export const part${i} = ${i};\n`.repeat(8 + i));
  fs.writeFileSync(path.join(repo, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
  const report = await checkAgainstSession(repo, 'smallest-first', 1024);
  assert.deepEqual(report.sections, []);
});

test('the pipeline with the ranked packing: the file tree before the files and the map after them are found at their spans too', async () => {
  const repo = path.join(tmp, 'ranked');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'src', 'core.ts'), `export function coreTotal(xs: number[]): number {\n  return xs.reduce((a, b) => a + b, 0);\n}\n`);
  for (let i = 0; i < 30; i++) {
    fs.writeFileSync(path.join(repo, 'src', `use${i}.ts`), `import { coreTotal } from './core';\nexport function use${i}(): number {\n  return coreTotal([${i}, ${i + 1}]);\n}\n`);
  }
  fs.writeFileSync(path.join(repo, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
  const report = await checkAgainstSession(repo, 'ranked', 2048);
  assert.deepEqual(report.sections.map((x) => x.kind), ['tree', 'map']);
});
