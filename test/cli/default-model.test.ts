/**
 * `reposnap ask` without `--model`: it uses the model `npm run models` fetched (the coding model
 * when it was fetched, else the manifest's default), found in the same folder the fetcher fills;
 * with no model fetched it says in one line how to get one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { askPreference, CODER_MODEL, defaultFetchedModel, fetchedModelsDir, MODEL_MANIFEST, NO_MODEL_MESSAGE, type ModelManifest } from '../../src/models/fetched';
import { formatSize } from '../../src/chat/welcome';
import { checkTinyModel, realModelsDir, SMOLLM2 } from '../helpers/models';

const ROOT = path.resolve(__dirname, '..', '..');
const BIN = path.join(ROOT, 'bin', 'reposnap.js');
const FETCHER = path.join(ROOT, 'scripts', 'models.mjs');
const GEMMA = 'gemma3-270m';
let tmp: string;

before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-default-model-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh, empty models folder. */
function modelsFolder(name: string): string {
  const dir = path.join(tmp, name);
  fs.mkdirSync(dir);
  return dir;
}

/** Puts a file of `bytes` bytes (sparse: nothing is written) named as model `id`'s GGUF into `dir`. */
function fakeFetched(dir: string, id: string, bytes = MODEL_MANIFEST.models[id]!.bytes): string {
  const file = path.join(dir, MODEL_MANIFEST.models[id]!.file);
  fs.writeFileSync(file, '');
  fs.truncateSync(file, bytes);
  return file;
}

/** `reposnap …` in a child process with the environment `env` added and REPOSNAP_MODEL removed. */
function reposnap(args: string[], env: Record<string, string>) {
  const base: NodeJS.ProcessEnv = { ...process.env, REPOSNAP_CACHE_DIR: path.join(tmp, 'cache') };
  delete base.REPOSNAP_MODEL;
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 120_000, env: { ...base, ...env } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('the preference is the coding model, then the models npm run models fetches by default; never the base Gemma model', () => {
  assert.deepEqual(askPreference(), [CODER_MODEL, SMOLLM2]);
  assert.ok(MODEL_MANIFEST.models[CODER_MODEL]!.aliases?.includes('coder'), "the message's `--model coder` names the coding model");
  assert.equal(MODEL_MANIFEST.models[SMOLLM2]!.default, true);
  assert.ok(!askPreference().includes(GEMMA));
  // a manifest without the coding model: only its default models
  const other: ModelManifest = { models: { a: { default: false, description: '', file: 'a.gguf', bytes: 1, sha256: '' }, b: { default: true, description: '', file: 'b.gguf', bytes: 1, sha256: '' } } };
  assert.deepEqual(askPreference(other), ['b']);
});

test('the fetched-model lookup: none in an empty folder, SmolLM2 alone, the coding model once it is there', () => {
  const dir = modelsFolder('lookup');
  assert.equal(defaultFetchedModel(dir), undefined, 'empty folder');
  assert.equal(defaultFetchedModel(path.join(tmp, 'missing')), undefined, 'no folder at all');

  fakeFetched(dir, GEMMA);
  assert.equal(defaultFetchedModel(dir), undefined, 'the base Gemma model alone is not chosen');

  const smol = fakeFetched(dir, SMOLLM2);
  assert.deepEqual(defaultFetchedModel(dir), { id: SMOLLM2, file: smol });

  // the coding model half-written (a fetch in progress or cut short) is not fetched yet
  const coderBytes = MODEL_MANIFEST.models[CODER_MODEL]!.bytes;
  fs.writeFileSync(path.join(dir, `${MODEL_MANIFEST.models[CODER_MODEL]!.file}.partial-123`), '');
  const coder = fakeFetched(dir, CODER_MODEL, coderBytes - 1);
  assert.deepEqual(defaultFetchedModel(dir), { id: SMOLLM2, file: smol }, 'a coder file of the wrong size');

  fs.truncateSync(coder, coderBytes);
  assert.deepEqual(defaultFetchedModel(dir), { id: CODER_MODEL, file: coder }, 'the coding model wins once fetched');

  fs.rmSync(smol);
  assert.deepEqual(defaultFetchedModel(dir), { id: CODER_MODEL, file: coder });
  // a folder named like the model is not a model
  fs.rmSync(coder);
  fs.mkdirSync(coder);
  assert.equal(defaultFetchedModel(dir), undefined);
});

test('the models folder is the one scripts/models.mjs fills, under each of its environment rules', () => {
  const cases: Record<string, string>[] = [
    { REPOSNAP_MODELS_DIR: path.join(tmp, 'by-env'), XDG_CACHE_HOME: path.join(tmp, 'xdg') },
    { REPOSNAP_MODELS_DIR: '', XDG_CACHE_HOME: path.join(tmp, 'xdg') },
    { REPOSNAP_MODELS_DIR: '', XDG_CACHE_HOME: '', HOME: path.join(tmp, 'home') },
  ];
  assert.equal(fetchedModelsDir(cases[0]), path.join(tmp, 'by-env'));
  assert.equal(fetchedModelsDir(cases[1]), path.join(tmp, 'xdg', 'reposnap', 'models'));
  for (const env of cases) {
    // the fetcher's --help names its target folder (and fetches nothing)
    const r = spawnSync(process.execPath, [FETCHER, '--help'], { encoding: 'utf8', env: { ...process.env, ...env } });
    assert.equal(r.status, 0, r.stderr);
    const want = env.HOME ? path.join(env.HOME, '.cache', 'reposnap', 'models') : fetchedModelsDir(env);
    assert.match(r.stdout, new RegExp(`into ${want.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`), JSON.stringify(env));
  }
  assert.equal(realModelsDir(), fetchedModelsDir(), "the tests' helper uses the same folder");
});

test('without --model and with no model fetched, ask fails with one line saying how to get one', () => {
  const dir = modelsFolder('none');
  const repo = modelsFolder('repo');
  fs.writeFileSync(path.join(repo, 'a.ts'), 'export const a = 1;\n');
  const r = reposnap(['ask', '--repo', repo, 'Which file defines a?'], { REPOSNAP_MODELS_DIR: dir });
  assert.equal(r.code, 2);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr, `reposnap: error: ${NO_MODEL_MESSAGE}\n`);
  assert.equal(NO_MODEL_MESSAGE, "no model: run 'npm run models -- --model coder' (1.1 GB, once) or pass --model <file.gguf>");
  assert.ok(NO_MODEL_MESSAGE.includes(`(${formatSize(MODEL_MANIFEST.models[CODER_MODEL]!.bytes)}, once)`), 'the size it names is the pinned file');

  const json = reposnap(['ask', '--json', '--repo', repo, 'Which file defines a?'], { REPOSNAP_MODELS_DIR: dir });
  assert.equal(json.code, 2);
  assert.deepEqual(JSON.parse(json.stderr), { error: { code: 'usage', message: NO_MODEL_MESSAGE } });

  // a flag's own problem still comes first, as before
  const bad = reposnap(['ask', '--repo', repo, '--budget', 'x', 'q'], { REPOSNAP_MODELS_DIR: dir });
  assert.match(bad.stderr, /^reposnap: error: --budget must be an integer/);
});

test('without --model, ask answers with the fetched model', () => {
  // the tiny model, padded with zeros to SmolLM2's pinned size, stands in for a fetched SmolLM2
  const dir = modelsFolder('fetched');
  const file = fakeFetched(dir, SMOLLM2, 0);
  fs.copyFileSync(checkTinyModel(), file);
  fs.truncateSync(file, MODEL_MANIFEST.models[SMOLLM2]!.bytes);
  assert.deepEqual(defaultFetchedModel(dir), { id: SMOLLM2, file });

  const repo = modelsFolder('answered');
  fs.writeFileSync(path.join(repo, 'a.ts'), 'export function defaultCacheRoot() { return "/tmp"; }\n');
  const r = reposnap(['ask', '--no-cache', '--repo', repo, '--context-size', '512', '--max-tokens', '4', '--json', 'Which file defines defaultCacheRoot?'], { REPOSNAP_MODELS_DIR: dir });
  assert.equal(r.code, 0, r.stderr);
  const stats = JSON.parse(r.stderr.trim().split('\n').pop()!);
  assert.equal(stats.decodeTokens, 4);
  assert.ok(stats.L > 0);
});
