/**
 * RepoSnap's own files are never packed: the cache folder in use (`cacheDirs`: the CLI's
 * `--cache-dir`, the extension's cache root) wherever it lies inside the repository, and cache
 * entries found anywhere (`*.rsnp` state files and the index beside each; a state file under
 * another name by its `RSNP` signature).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { runPack, type PackIo } from '../../src/cli/pack';
import { folderStoreDir } from '../../src/cache/window-store';
import { encodeStateFile, type StateHeader } from '../../src/engine/state-file';
import type { EngineModel } from '../../src/engine/model';
import { packRepository } from '../../src/context/pack';
import { toAskRequest } from '../../src/host/engine';
import { askParams } from '../../src/host/request';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import { detailOf, makeRepo, manifest, pack, type Entry } from './fixtures';

/** A real state file (the layout src/engine/state-file.ts writes: "RSNP", version 1, header, tokens, payload, checksum). */
function stateFile(): Buffer {
  const header: StateHeader = { model: 'm', engine: 'e', typeK: 'f16', typeV: 'f16', flashAttention: 'auto', nPast: 3, cells: 3, snap: null, createdAt: 0 };
  return encodeStateFile(header, [1, 2, 3], new Uint8Array([9, 9, 9, 9]));
}

const PREFIX_ID = 'abcdef0123456789abcdef01';

/** A cache root as the store lays it out (src/cache/store.ts, src/engine/state-file.ts), under `dir`. */
function cacheTree(dir: string): Record<string, Entry> {
  return {
    [`${dir}/model-fingerprints.json`]: '{"version":1,"entries":[]}',
    [`${dir}/repo-0123456789ab/stats.json`]: '{"fullHits":0}',
    [`${dir}/repo-0123456789ab/prefix/${PREFIX_ID}.json`]: `{"kind":"prefix","id":"${PREFIX_ID}","key":"k","tokens":3}`,
    [`${dir}/repo-0123456789ab/prefix/${PREFIX_ID}.rsnp`]: stateFile(),
    [`${dir}/repo-0123456789ab/thread/cli.json`]: '{"id":"cli","turns":[{"question":"What does math.ts export?","answer":"x"}]}',
    [`${dir}/repo-0123456789ab/thread/cli.rsnp`]: stateFile(),
  };
}

test('the cache folder in use is left out wherever it lies in the repository, whatever include and exclude say', async (t) => {
  const root = await makeRepo(t, { 'math.ts': 'export const x = 1;\n', ...cacheTree('.rcache'), ...cacheTree('deep/er/cache') });

  // without cacheDirs the cache's JSON is packed (the fault), except what is recognised by name
  const before = await pack(root);
  assert.ok(before.files.some((f) => f.path === '.rcache/model-fingerprints.json'));

  for (const cacheDirs of [[path.join(root, '.rcache'), path.join(root, 'deep/er/cache')], [path.join(root, '.rcache/'), path.join(root, 'deep', 'er', 'cache', '..', 'cache')]]) {
    const result = await pack(root, { cacheDirs, exclude: ['!.rcache/'], include: ['*.ts', '.rcache/', 'deep/'] });
    assert.deepEqual(manifest(result).files, ['math.ts']);
    assert.deepEqual(
      result.ignored.filter((e) => e.isDirectory),
      [
        { path: '.rcache', isDirectory: true, reason: 'excluded', detail: "RepoSnap's cache" },
        { path: 'deep/er/cache', isDirectory: true, reason: 'excluded', detail: "RepoSnap's cache" },
      ],
    );
  }

  // a cache folder outside the repository, the repository itself, a folder holding it: nothing left out
  const all = await pack(root, { cacheDirs: [path.dirname(root), root, path.join(tmpdir(), 'elsewhere')] });
  assert.deepEqual(manifest(all).files, manifest(before).files);
});

test('the cache folder is recognised through a symlinked root or cache path', async (t) => {
  const root = await makeRepo(t, { 'math.ts': 'export const x = 1;\n', ...cacheTree('.rcache') });
  const links = await mkdtemp(path.join(tmpdir(), 'reposnap-links-'));
  t.after(() => rm(links, { recursive: true, force: true }));
  await symlink(root, path.join(links, 'repo'));

  // walked through the link, cache named by the real path; walked by the real path, cache named through the link
  const viaLink = await pack(path.join(links, 'repo'), { cacheDirs: [path.join(root, '.rcache')] });
  const viaReal = await pack(root, { cacheDirs: [path.join(links, 'repo', '.rcache')] });
  for (const result of [viaLink, viaReal]) {
    assert.deepEqual(manifest(result).files, ['math.ts']);
    assert.equal(detailOf(result, '.rcache'), "RepoSnap's cache");
  }
});

test('cache entries outside the cache in use are left out by name, a state file under another name by its signature', async (t) => {
  const root = await makeRepo(t, {
    'old/prefix/a.rsnp': stateFile(),
    'old/prefix/a.json': '{"kind":"prefix"}',
    'old/prefix/b.json': '{"kept":"no state file beside it"}',
    'kv.bin': stateFile(),
  });
  const result = await pack(root);
  assert.deepEqual(manifest(result).files, ['old/prefix/b.json']);
  assert.equal(detailOf(result, 'old/prefix/a.rsnp'), "RepoSnap's KV state file");
  assert.equal(detailOf(result, 'old/prefix/a.json'), "RepoSnap's cache index (beside a.rsnp)");
  assert.deepEqual(manifest(result).skipped, [['kv.bin', 'binary']]);
  assert.equal(detailOf(result, 'kv.bin'), "RepoSnap's KV state file signature");
});

test("reposnap pack --cache-dir lists the cache folder as RepoSnap's cache, as ask leaves it out", async (t) => {
  const root = await makeRepo(t, { 'math.ts': 'export const x = 1;\n', ...cacheTree('.rcache') });
  let stdout = '';
  const io: PackIo = { stdout: (s) => void (stdout += s), stderr: () => undefined, isTTY: false };
  assert.equal(await runPack(['--repo', root, '--list', '--cache-dir', path.join(root, '.rcache')], io), 0);
  const lines = stdout.split('\n');
  assert.ok(lines.some((l) => /^ +\d+ +included +math\.ts$/.test(l)));
  assert.ok(lines.includes("       -  excluded  .rcache/  (RepoSnap's cache)"), stdout);
  assert.ok(!stdout.includes('model-fingerprints'));
});

test("the extension's cache root (REPOSNAP_CACHE_DIR inside the folder) is left out of what the engine packs", async (t) => {
  const root = await makeRepo(t, { 'math.ts': 'export const x = 1;\n', ...cacheTree('.rc') });
  const saved = process.env.REPOSNAP_CACHE_DIR;
  process.env.REPOSNAP_CACHE_DIR = path.join(root, '.rc');
  t.after(() => (saved === undefined ? delete process.env.REPOSNAP_CACHE_DIR : (process.env.REPOSNAP_CACHE_DIR = saved)));
  // the path the host takes: the folder's store under the cache root, sent as cacheDir, mapped by the engine
  const cacheDir = await folderStoreDir(root);
  const params = askParams(DEFAULT_SETTINGS, { threadId: 't', repo: root, question: 'q', modelPath: '/m.gguf', cacheDir });
  const req = toAskRequest(params, {} as EngineModel, new AbortController().signal);
  assert.deepEqual(req.pack?.cacheDirs, [path.join(root, '.rc')]);
  const result = await packRepository(root, { tokenBudget: Infinity, countTokens: (s) => s.length, ...req.pack });
  assert.deepEqual(manifest(result).files, ['math.ts']);
  assert.equal(detailOf(result, '.rc'), "RepoSnap's cache");
});
