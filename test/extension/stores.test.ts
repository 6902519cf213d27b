/**
 * What the extension keeps per workspace (threads, question records), the explain question,
 * model resolution without the network for local paths, and the engine build for reposnap.GPU.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MAX_THREADS, ThreadStore, titleOf, type KeyValueStore } from '../../src/chat/threads';
import { explainQuestion, explainThreadId, MAX_SNIPPET_CHARS } from '../../src/explain/question';
import { addonFile, ggmlLibraryName, selectEngineBuild } from '../../src/models/gpu';
import { isModelUri, modelDisplayName, ModelResolveError, resolveModel } from '../../src/models/resolve';
import { QuestionRecords } from '../../src/stats/records';
import type { WireAskStats } from '../../src/host/protocol';

function memento(): KeyValueStore & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return { data, get: <T>(k: string) => structuredClone(data.get(k)) as T | undefined, update: async (k, v) => void data.set(k, structuredClone(v)) };
}

test('threads: questions name threads, survive a reload, and a half-streamed answer comes back as stopped', () => {
  const m = memento();
  const a = new ThreadStore(m);
  const t = a.active;
  a.add(t.id, { id: 'u1', role: 'user', text: 'Where is the budget chosen?\nmore' });
  a.add(t.id, { id: 'a1', role: 'assistant', text: '' });
  a.appendText(t.id, 'a1', 'In ask.ts');
  a.save();
  const b = new ThreadStore(m);
  assert.equal(b.active.id, t.id);
  assert.equal(b.active.title, 'Where is the budget chosen?');
  assert.equal(b.active.messages[1]!.text, 'In ask.ts');
  assert.equal(b.active.messages[1]!.cancelled, true);
});

test('threads: a thread continued from an explanation remembers the engine thread it forks, across a reload', () => {
  const m = memento();
  const a = new ThreadStore(m);
  const seed = [
    { id: 'u', role: 'user' as const, text: 'Explain walk()' },
    { id: 'a', role: 'assistant' as const, text: 'It walks the tree.' },
  ];
  const t = a.newThread(seed, 'Explain walk', explainThreadId('src/walk.ts:1-9'));
  assert.equal(t.forkedFrom, 'explain:src/walk.ts:1-9');
  assert.equal(new ThreadStore(m).active.forkedFrom, 'explain:src/walk.ts:1-9');
  const plain = a.newThread();
  assert.equal(plain.forkedFrom, undefined, 'a new thread forks nothing');
});

test('threads: new, select, delete; an empty active thread is reused; at most MAX_THREADS kept', () => {
  const s = new ThreadStore(memento());
  const first = s.active.id;
  assert.equal(s.newThread().id, first, 'empty thread reused');
  s.add(first, { id: 'u', role: 'user', text: 'q' });
  const second = s.newThread().id;
  assert.notEqual(second, first);
  assert.deepEqual(s.summaries().map((x) => x.id), [second, first]);
  assert.ok(s.select(first));
  assert.equal(s.select('nope'), false);
  s.delete(first);
  assert.equal(s.active.id, second);
  for (let i = 0; i < MAX_THREADS + 5; i++) s.newThread([{ id: `m${i}`, role: 'user', text: `q${i}` }]);
  assert.equal(s.summaries().length, MAX_THREADS);
  assert.equal(s.active.title, `q${MAX_THREADS + 4}`);
  assert.equal(titleOf('x'.repeat(100)).length, 60);
});

const stats = (over: Partial<WireAskStats>): WireAskStats => ({
  L: 2000, prefixTokens: 1980, B: 1000, ratio: 0.5, files: 3, skipped: 0, droppedTurns: 0, packMs: 10, reusedTokens: 0, prefilledTokens: 2000, restoreMs: 0, restoreReadMs: 0, prefillMs: 100, prefillTokS: 20000, snapMs: 5, ttftMs: 200,
  decodeTokens: 10, decodeMs: 50, decodeTokS: 200, nKvBefore: 2048, nKvAfter: 1024, kvBytesBefore: 4000, kvBytesAfter: 2000,
  snap: true, stopReason: 'maxTokens', cache: 'miss', ...over,
});

test('question records: kept per workspace, summarized, cleared, listeners told', () => {
  const m = memento();
  const r = new QuestionRecords(m);
  let changes = 0;
  r.onChange(() => changes++);
  r.add('chat', 'stories260K.gguf', 'first\nsecond line', stats({}), 1);
  r.add('explain', 'stories260K.gguf', 'q2', stats({ cache: 'hit', ttftMs: 20, ratio: 0.25, kvBytesAfter: 1000 }), 2);
  assert.equal(new QuestionRecords(m).all().length, 2, 'saved');
  assert.equal(r.all()[0]!.question, 'first');
  const s = r.summary();
  assert.equal(s.questions, 2);
  assert.deepEqual(s.outcomes, { hit: 1, partial: 0, miss: 1, continue: 0, off: 0 });
  assert.equal(s.meanRatio, 0.375);
  assert.deepEqual(s.meanTtftMs, { cold: 200, warm: 20 });
  r.add('chat', 'm', 'q3', stats({ cache: 'continue', ttftMs: 40, snap: false }), 3);
  assert.deepEqual(r.summary().meanTtftMs, { cold: 200, warm: 30 });
  assert.equal(r.summary().meanRatio, 0.375, 'full-attention answers are not in the mean ratio');
  assert.equal(s.kvBytesSaved, 2000 + 3000);
  r.clear();
  assert.equal(r.all().length, 0);
  assert.equal(changes, 4);
});

test('the explain question quotes the code in a fence with its place, cut when long', () => {
  const q = explainQuestion({ path: 'src/a.ts', startLine: 3, endLine: 5, languageId: 'typescript', code: 'function f() {}\n\n', symbol: 'f' });
  assert.equal(q, 'Explain `f` in src/a.ts (lines 3-5) in the context of the whole repository: what it does, how it is used, and what depends on it.\n\n```typescript\nfunction f() {}\n```');
  const long = explainQuestion({ path: 'b.md', startLine: 1, endLine: 1, languageId: 'markdown', code: '```x```' + 'y'.repeat(MAX_SNIPPET_CHARS) });
  assert.match(long, /line 1\)/);
  assert.match(long, /~~~~markdown\n/);
  assert.match(long, /… \(cut\)\n~~~~$/);
});

test('a local model path resolves without loading node-llama-cpp (no network); URIs are told apart from paths', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-models-'));
  try {
    const file = path.join(dir, 'm.gguf');
    fs.writeFileSync(file, 'GGUF');
    const noNetwork = async () => {
      throw new Error('node-llama-cpp must not be loaded for a local path');
    };
    assert.equal(await resolveModel('m.gguf', { directory: dir, baseDir: dir, loadDownloader: noNetwork }), file);
    assert.equal(await resolveModel(file, { directory: dir, loadDownloader: noNetwork }), file);
    await assert.rejects(resolveModel('missing.gguf', { directory: dir, baseDir: dir, loadDownloader: noNetwork }), (e: Error) => e instanceof ModelResolveError && /does not exist/.test(e.message));
    await assert.rejects(resolveModel('  ', { directory: dir }), /No model is set/);

  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  assert.ok(isModelUri('hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M') && isModelUri('https://x/y.gguf') && !isModelUri('/m/x.gguf'));
  assert.equal(modelDisplayName('/models/stories260K.gguf'), 'stories260K');
  assert.equal(modelDisplayName('hf:Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M'), 'Qwen2.5-Coder-1.5B-Instruct-GGUF:Q4_K_M');
});

test('reposnap.GPU with a portable engine: one addon, REPOSNAP_BACKEND says which GPU module it may load; a missing module is a clear error', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-gpu-'));
  try {
    const build = path.join(root, 'native', 'build');
    fs.mkdirSync(build, { recursive: true });
    fs.writeFileSync(path.join(build, ggmlLibraryName('ggml-base', 'library')), '');
    const addon = path.join(build, 'reposnap.node');
    const cpu = await selectEngineBuild('cpu', root, async () => ['cuda']);
    assert.deepEqual(cpu, { backend: 'cpu', addon, env: { REPOSNAP_ADDON: addon, REPOSNAP_BACKEND: 'cpu' }, reason: 'reposnap.GPU is cpu' });
    const none = await selectEngineBuild('auto', root, async () => { throw new Error('detection is not asked'); });
    assert.deepEqual(none.env, { REPOSNAP_ADDON: addon, REPOSNAP_BACKEND: 'auto' });
    assert.equal(none.reason, 'auto: this engine has no GPU backend; using the CPU');
    await assert.rejects(selectEngineBuild('vulkan', root), new RegExp(`no vulkan backend \\(${path.join(build, 'gpu', ggmlLibraryName('ggml-vulkan', 'module')).replace(/[.\\]/g, '\\$&')} is missing\\): build it with REPOSNAP_GPU=vulkan npm run build:native`));
    fs.mkdirSync(path.join(build, 'gpu'));
    fs.writeFileSync(path.join(build, 'gpu', ggmlLibraryName('ggml-vulkan', 'module')), '');
    assert.equal(addonFile(root, 'vulkan'), addon);
    const vk = await selectEngineBuild('vulkan', root);
    assert.deepEqual(vk.env, { REPOSNAP_ADDON: addon, REPOSNAP_BACKEND: 'vulkan' });
    const auto = await selectEngineBuild('auto', root);
    assert.equal(auto.reason, 'auto: the engine uses vulkan when it finds a device, else the CPU');
    assert.equal(auto.env.REPOSNAP_BACKEND, 'auto');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  assert.equal(ggmlLibraryName('ggml-base', 'library', 'darwin'), 'libggml-base.dylib');
  assert.equal(ggmlLibraryName('ggml-cpu-haswell', 'module', 'darwin'), 'libggml-cpu-haswell.so');
  assert.equal(ggmlLibraryName('ggml-vulkan', 'module', 'win32'), 'ggml-vulkan.dll');
  assert.equal(ggmlLibraryName('llama', 'library', 'linux'), 'libllama.so');
});

test('reposnap.GPU: cpu and auto without a GPU build use the CPU engine; a missing build is a clear error', async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-gpu-'));
  try {
    fs.mkdirSync(path.join(root, 'native', 'build'), { recursive: true });
    const cpu = path.join(root, 'native', 'build', 'reposnap.node');
    assert.equal((await selectEngineBuild('cpu', root, async () => ['cuda'])).addon, cpu);
    const auto = await selectEngineBuild('auto', root, async () => ['cuda']);
    assert.equal(auto.backend, 'cpu');
    assert.match(auto.reason, /detected cuda but no RepoSnap build for it/);
    await assert.rejects(selectEngineBuild('vulkan', root), /no vulkan engine .* REPOSNAP_GPU=vulkan npm run build:native/);
    fs.writeFileSync(path.join(root, 'native', 'build', 'reposnap-cuda.node'), '');
    const cuda = await selectEngineBuild('auto', root, async () => ['vulkan', 'cuda']);
    assert.equal(cuda.backend, 'cuda');
    assert.equal((await selectEngineBuild('auto', root, async () => { throw new Error('no driver'); })).backend, 'cpu');
    // node-llama-cpp's real detection runs here (this machine: no GPU)
    assert.ok(['cpu', 'cuda', 'vulkan', 'metal'].includes((await selectEngineBuild('auto', root)).backend));
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
