/**
 * The extension's side of the ranked packing (issue 15): `reposnap.packing` and
 * `reposnap.retrievalShare` read and validated by the settings accessor, mapped into the
 * pipeline's request by the engine process (with the window's open files as `recentFiles` and
 * one parse cache per engine process), and the open files turned into relative paths.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { DEFAULT_SETTINGS, readSettings, type ConfigurationSource } from '../../src/config/settings';
import { processTagsCache } from '../../src/context/map/cache';
import { toAskRequest } from '../../src/host/engine';
import type { AskParams } from '../../src/host/protocol';
import { askParams } from '../../src/host/request';
import { recentFilesIn } from '../../src/host/recent-files';
import type { EngineModel } from '../../src/engine/model';

const source = (values: Record<string, unknown>): ConfigurationSource => ({ get: <T>(k: string) => values[k] as T | undefined });

test('reposnap.packing and reposnap.retrievalShare: defaults auto and 0.15; valid values read as they are', () => {
  assert.deepEqual([DEFAULT_SETTINGS.packing, DEFAULT_SETTINGS.retrievalShare], ['auto', 0.15]);
  assert.deepEqual([readSettings(source({})).settings.packing, readSettings(source({})).problems], ['auto', []]);
  const r = readSettings(source({ packing: 'ranked', retrievalShare: 0 }));
  assert.deepEqual(r.problems, []);
  assert.deepEqual([r.settings.packing, r.settings.retrievalShare], ['ranked', 0]);
  for (const packing of ['auto', 'smallest-first', 'ranked']) {
    const one = readSettings(source({ packing }));
    assert.deepEqual([one.settings.packing, one.problems], [packing, []], packing);
  }
  assert.equal(readSettings(source({ retrievalShare: 0.999 })).settings.retrievalShare, 0.999);
});

test('an unknown packing or a share outside [0, 1) falls back to the default with one problem line each', () => {
  const r = readSettings(source({ packing: 'biggest', retrievalShare: 1 }));
  assert.deepEqual([r.settings.packing, r.settings.retrievalShare], ['auto', 0.15]);
  assert.deepEqual(r.problems, [
    'reposnap.packing: must be one of auto, smallest-first, ranked, got "biggest"; using "auto"',
    'reposnap.retrievalShare: must be a number with 0 <= share < 1, got 1; using 0.15',
  ]);
  for (const bad of [-0.1, '0.2', Number.NaN]) assert.equal(readSettings(source({ retrievalShare: bad })).problems.length, 1, String(bad));
});

const model = {} as EngineModel;
const params = (settings: Partial<typeof DEFAULT_SETTINGS>, recentFiles?: string[]): AskParams =>
  askParams({ ...DEFAULT_SETTINGS, ...settings }, { threadId: 't', repo: '/repo', question: 'q', modelPath: '/m.gguf', ...(recentFiles ? { recentFiles } : {}) });

test('the engine passes the ranked packing, the open files, its one parse cache and the retrieval share to the pipeline', () => {
  const signal = new AbortController().signal;
  const a = toAskRequest(params({ packing: 'ranked', retrievalShare: 0.2 }, ['src/a.ts', 'src/b.ts']), model, signal);
  assert.equal(a.pack?.packing, 'ranked');
  assert.deepEqual(a.pack?.recentFiles, ['src/a.ts', 'src/b.ts']);
  assert.equal(a.retrievalShare, 0.2);
  assert.ok(a.pack?.tagsCache !== undefined);
  const b = toAskRequest(params({ packing: 'ranked' }), model, signal);
  assert.equal(b.pack?.tagsCache, a.pack?.tagsCache, 'one parse cache for every question of the process');
  assert.equal(b.pack?.tagsCache, processTagsCache());
  assert.deepEqual(b.pack?.recentFiles, []);
});

test('auto (the default): the open files, the parse cache and the retrieval share go to the pipeline, which uses them if auto chooses ranked', () => {
  const signal = new AbortController().signal;
  const a = toAskRequest(params({}, ['src/a.ts']), model, signal);
  assert.equal(a.pack?.packing, 'auto');
  assert.deepEqual(a.pack?.recentFiles, ['src/a.ts']);
  assert.equal(a.retrievalShare, 0.15);
  assert.equal(a.pack?.tagsCache, processTagsCache());
  assert.equal(toAskRequest(params({ packing: 'auto', retrievalShare: 0 }), model, signal).retrievalShare, 0);
});

test('smallest-first: no retrieval (the share applies to the ranked packing only), no open files, no parse cache', () => {
  const r = toAskRequest(params({ packing: 'smallest-first', retrievalShare: 0.5 }, ['src/a.ts']), model, new AbortController().signal);
  assert.equal(r.pack?.packing, 'smallest-first');
  assert.equal(r.retrievalShare, 0);
  assert.equal(r.pack?.recentFiles, undefined);
  assert.equal(r.pack?.tagsCache, undefined);
});

test('open files become sorted paths relative to the folder; files outside it and the folder itself are dropped (a folder named ..x inside it is kept)', () => {
  const root = path.resolve('/work/repo');
  const open = [path.join(root, 'src', 'b.ts'), path.join(root, 'a.ts'), path.resolve('/work/other/c.ts'), root, path.join(root, 'src', 'b.ts'), path.resolve('/work/repo2/d.ts'), path.join(root, '..x', 'e.ts')];
  assert.deepEqual(recentFilesIn(root, open), ['..x/e.ts', 'a.ts', 'src/b.ts']);
  assert.deepEqual(recentFilesIn(root, open, 1), ['..x/e.ts']);
  assert.throws(() => recentFilesIn(root, open, -1), RangeError);
});

test('the extension packs for its reposnap.maxTokens setting: the answer room is the setting, the same for every question', () => {
  const signal = new AbortController().signal;
  assert.equal(DEFAULT_SETTINGS.maxTokens, 512);
  const d = toAskRequest(params({}), model, signal);
  assert.deepEqual([d.maxTokens, d.answerRoom], [512, 512]);
  const long = toAskRequest(params({ maxTokens: 1500 }), model, signal);
  assert.deepEqual([long.maxTokens, long.answerRoom], [1500, 1500]);
});
