/**
 * The context report of a ranked answer with retrieval accounts for every token the model read,
 * on the tiny model: the files in full add up to the file sections, the map's blocks per file to
 * what the packer mapped, the retrieved blocks to what retrieval quoted, and a file that is both
 * in the map and retrieved is counted in both (before, it showed as retrieved only: its map block
 * was missing and `mappedFiles` did not count it). References: the pack itself and a second,
 * independent run of retrieval.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { PackResult } from '../../src/context/pack';
import { retrieveChunks } from '../../src/context/retrieve/retrieve';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { askRepository, DEFAULT_SNAP } from '../../src/pipeline/ask';
import { promptLayout, tokenizeLayout } from '../../src/prompt/prompt';
import { writeCoreUsersRepo } from '../helpers/core-users-repo';
import { checkTinyModel } from '../helpers/models';

let model: EngineModel;
let tmp: string;
let repo: string;

before(async () => {
  model = await loadModel(checkTinyModel());
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-context-totals-'));
  repo = path.join(tmp, 'repo');
  writeCoreUsersRepo(repo);
});
after(() => {
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

test("the report's token totals match the packed sections, the map's blocks and the retrieved chunks; a mapped and retrieved file counts in both", async () => {
  const question = 'What does use5 return?';
  let pack: PackResult | undefined;
  let promptTokens = 0;
  const stats = await askRepository(
    { repo, model, question, snap: DEFAULT_SNAP, contextSize: 2048, maxTokens: 2, session: { threads: 2 }, pack: { packing: 'ranked' }, retrievalShare: 0.15 },
    (e) => {
      if (e.kind === 'packed') [pack, promptTokens] = [e.pack, e.promptTokens];
    },
  );
  const report = stats.context!;
  const expected = await retrieveChunks(pack!.retrievable, question, { budget: Math.floor(2048 * 0.15), countTokens: (t) => model.tokenize(t).length, secrets: pack!.secrets });
  const retrievalTokens = model.tokenize(expected.text).length;
  const mapSection = pack!.sections.find((s) => s.kind === 'map')!;
  // the case at hand: use5.ts is in the map (its definitions) and retrieved (its function's chunk)
  assert.ok(pack!.mapped.some((m) => m.path === 'src/use5.ts'), JSON.stringify(pack!.mapped.map((m) => m.path)));
  assert.ok(expected.spans.some((sp) => sp.path === 'src/use5.ts'), JSON.stringify(expected.spans.map((sp) => sp.path)));

  // files in full: one row each, their section's tokens
  const fileSections = pack!.sections.filter((s) => s.kind === 'file');
  assert.deepEqual(report.files.filter((f) => f.status === 'full').map((f) => [f.path, f.tokens]), fileSections.map((s) => [s.path, s.tokens]));
  assert.equal(report.summary.fileTokens, sum(fileSections.map((s) => s.tokens)));
  // the other sections: the pack's tree and map, then the retrieval section as retrieval tokenized it
  assert.deepEqual(report.sections.map((s) => [s.kind, s.tokens]), [...pack!.sections.filter((s) => s.kind !== 'file').map((s) => [s.kind, s.tokens]), ['retrieval', retrievalTokens]]);
  // head + every section + the question part = L (no thread): the sections are what the prompt holds
  const head = tokenizeLayout(model, promptLayout(model)).head.length;
  assert.equal(head + report.summary.fileTokens + sum(report.sections.map((s) => s.tokens)), stats.prefixTokens + retrievalTokens);
  assert.equal(stats.L, promptTokens);

  // the map, per file: every mapped file has its block's tokens, in a 'map' row or a part
  const mapBlock = new Map<string, number>();
  const retrievedBlock = new Map<string, number>();
  for (const f of report.files) {
    if (f.status === 'map') mapBlock.set(f.path, f.tokens!);
    if (f.status === 'retrieved' && f.parts === undefined) retrievedBlock.set(f.path, f.tokens!);
    for (const p of f.parts ?? []) (p.section === 'map' ? mapBlock : retrievedBlock).set(f.path, p.tokens!);
  }
  for (const m of pack!.mapped) assert.ok(m.offset! + m.tokens! <= mapSection.tokens, `${m.path}'s block lies inside the map`);
  assert.deepEqual([...mapBlock].sort(), pack!.mapped.map((m) => [m.path, m.tokens]).sort());
  assert.ok(sum([...mapBlock.values()]) <= mapSection.tokens);
  assert.equal(report.summary.mappedFiles, pack!.mapped.length);
  // the retrieval section, per file: each file's chunks' blocks summed
  const chunks = new Map<string, number>();
  for (const sp of expected.spans) chunks.set(sp.path, (chunks.get(sp.path) ?? 0) + sp.tokens);
  assert.deepEqual([...retrievedBlock].sort(), [...chunks].sort());
  assert.equal(report.summary.retrievedFiles, chunks.size);
  assert.ok(sum([...retrievedBlock.values()]) <= retrievalTokens);

  // use5.ts's row: both blocks, its tokens their sum, its share over both (in [0, 1])
  const use5 = report.files.find((f) => f.path === 'src/use5.ts')!;
  assert.equal(use5.status, 'retrieved');
  assert.deepEqual(use5.parts?.map((p) => [p.section, p.tokens]), [['map', mapBlock.get('src/use5.ts')], ['retrieval', chunks.get('src/use5.ts')]]);
  assert.equal(use5.tokens, mapBlock.get('src/use5.ts')! + chunks.get('src/use5.ts')!);
  assert.ok(use5.keptShare !== null && use5.keptShare >= 0 && use5.keptShare <= 1, String(use5.keptShare));
  // every file in the prompt, in one row, each row's tokens its blocks' sum
  assert.equal(new Set(report.files.map((f) => f.path)).size, report.files.length);
  const rowTokens = sum(report.files.filter((f) => f.status !== 'left-out').map((f) => f.tokens!));
  assert.equal(rowTokens, report.summary.fileTokens + sum([...mapBlock.values()]) + sum([...retrievedBlock.values()]));
});
