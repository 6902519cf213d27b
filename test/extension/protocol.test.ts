/**
 * The engine host's IPC protocol: every message a side sends parses on the other side,
 * malformed messages are rejected, pipeline events are slimmed for the wire, and a crash
 * is explained with what to try.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_SETTINGS } from '../../src/config/settings';
import { describeExit } from '../../src/host/client';
import { askParams } from '../../src/host/request';
import { cacheOutcome, parseFromHost, parseToHost, toWireError, toWireEvent, type FromHost, type ToHost } from '../../src/host/protocol';
import type { AskStats } from '../../src/pipeline/ask';

const stats: AskStats = {
  L: 2004, prefixTokens: 1990, B: 1024, ratio: 1024 / 2004, files: 5, skipped: 33, droppedTurns: 0, packMs: 93, cache: 'miss', reusedTokens: 0, prefilledTokens: 2004, restoreMs: 0, restoreReadMs: 0, prefillMs: 1606, prefillTokS: 1247, snapMs: 17,
  ttftMs: 1720, decodeTokens: 40, decodeMs: 120, decodeTokS: 328, nKvBefore: 2048, nKvAfter: 1024, kvBytesBefore: 1282560,
  kvBytesAfter: 655360, snap: true, stopReason: 'maxTokens',
};

test('every request the extension sends parses in the engine, unchanged', () => {
  const requests: ToHost[] = [
    { type: 'ask', id: '1', params: askParams(DEFAULT_SETTINGS, { threadId: 't', repo: '/r', question: 'q?', modelPath: '/m.gguf' }) },
    { type: 'cancel', id: '1' },
    { type: 'clearCache', id: '2' },
    { type: 'shutdown' },
  ];
  for (const r of requests) assert.deepEqual(parseToHost(JSON.parse(JSON.stringify(r))), r);
});

test('malformed requests are rejected', () => {
  for (const bad of [null, 42, 'ask', [], { type: 'nope' }, { type: 'ask', id: 1 }, { type: 'ask', id: '1', params: { repo: '/r' } },
    { type: 'ask', id: '1', params: { threadId: 't', repo: '/r', question: 'q', model: { path: 3, gpuLayers: 0 }, settings: {} } }, { type: 'cancel' }]) {
    assert.equal(parseToHost(bad), undefined, JSON.stringify(bad));
  }
});

test('every reply the engine sends parses in the extension, unchanged', () => {
  const replies: FromHost[] = [
    { type: 'ready', pid: 123, addon: '/x/reposnap.node' },
    { type: 'event', id: '1', event: { kind: 'prefill', done: 512, total: 2004, tokensPerSecond: 1200 } },
    { type: 'event', id: '1', event: { kind: 'model', state: 'loaded', path: '/m.gguf', ms: 12 } },
    { type: 'done', id: '1', stats: { ...stats, cache: 'miss' } },
    { type: 'cleared', id: '2', bytes: 0 },
    { type: 'error', id: '1', error: { name: 'ModelLoadError', message: 'not a GGUF' } },
  ];
  for (const r of replies) assert.deepEqual(parseFromHost(JSON.parse(JSON.stringify(r))), r);
  for (const bad of [{ type: 'done', id: '1', stats: { L: 1 } }, { type: 'error', id: '1' }, { type: 'event', id: '1', event: {} }, { type: 'ready' }]) {
    assert.equal(parseFromHost(bad), undefined, JSON.stringify(bad));
  }
});

test('the packed event goes over the wire as counts and paths, not file texts', () => {
  const pack = {
    root: '/r',
    files: [{ path: 'a.ts', bytes: 10, tokens: 4, text: 'x'.repeat(10_000) }],
    skipped: [{ path: 'b.bin', reason: 'binary' as const }],
    totalTokens: 4,
    totalBytes: 10,
    ignoredCount: 0,
    notices: [{ code: 'walk-limit', message: 'the walk stopped after 100000 entries', truncation: {} }],
  };
  const wire = toWireEvent({ kind: 'packed', pack: pack as never, promptTokens: 40 });
  assert.deepEqual(wire, { kind: 'packed', files: 1, skipped: 1, promptTokens: 40, paths: ['a.ts'], notices: ['the walk stopped after 100000 entries'] });
  const token = { kind: 'token' as const, text: 'hi' };
  assert.equal(toWireEvent(token), token);
});

test('the cache outcome is what the pipeline reports, miss when it reports none', () => {
  assert.equal(cacheOutcome(stats), 'miss');
  for (const c of ['hit', 'partial', 'continue', 'off'] as const) assert.equal(cacheOutcome({ ...stats, cache: c }), c);
  assert.equal(cacheOutcome({ ...stats, cache: 'bogus' } as unknown as AskStats), 'miss');
  const { cache: _, ...older } = stats;
  assert.equal(cacheOutcome(older as AskStats), 'miss');
});

test('errors keep their class name over the wire', () => {
  class ModelLoadError extends Error {
    override name = 'ModelLoadError';
  }
  assert.deepEqual(toWireError(new ModelLoadError('bad file')), { name: 'ModelLoadError', message: 'bad file' });
  assert.deepEqual(toWireError('boom'), { name: 'Error', message: 'boom' });
});

test('a crash is explained: SIGKILL as likely out of memory, other signals and exit codes as they are', () => {
  assert.match(describeExit(null, 'SIGKILL', []), /killed \(SIGKILL\), most often because the system ran out of memory: try a smaller model/);
  assert.match(describeExit(null, 'SIGSEGV', ['GGML_ASSERT failed']), /crashed \(SIGSEGV\).*Last output: GGML_ASSERT failed/);
  assert.match(describeExit(134, null, ['FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory']), /ran out of memory \(exit code 134\)/);
  assert.match(describeExit(1, null, []), /exited with code 1\. The next question starts a new engine\.$/);
});

test("an ask carries the pipeline's request made from the settings, not the settings; bad SnapKV options are rejected", () => {
  const settings = { ...DEFAULT_SETTINGS, snap: false, budget: 2048, window: 16, kernel: 5, pooling: 'avg' as const, budgetAllocation: 'pyramid' as const, prior: 'code' as const, priorBonus: 2, contextSize: 0, maxTokens: 99, KVCacheType: 'q8_0' as const, followUpMode: 'continue' as const, exclude: ['dist/'] };
  const params = askParams(settings, { threadId: 't', repo: '/r', question: 'q?', modelPath: '/m.gguf', cacheDir: '/c', recentFiles: ['a.ts'] });
  assert.deepEqual(params, {
    threadId: 't',
    repo: '/r',
    question: 'q?',
    model: { path: '/m.gguf', gpuLayers: 999 },
    snap: { enabled: false, window: 16, budget: 2048, kernel: 5, pooling: 'avg', allocation: 'pyramid', scorer: 'snapkv', prior: 'code', priorBonus: 2 },
    maxTokens: 99,
    maxFileBytes: 262144,
    session: { flashAttention: 'auto', kvCacheType: 'q8_0' },
    followUp: 'continue',
    afterEdit: 'exact',
    pack: { include: [], exclude: ['dist/'], packing: 'auto', order: 'mtime', recentFiles: ['a.ts'] },
    retrievalShare: 0.15,
    cacheDir: '/c',
  });
  assert.equal('settings' in params, false);
  const ask = (snap: unknown) => parseToHost({ type: 'ask', id: '1', params: { ...params, snap } });
  assert.ok(ask(params.snap));
  assert.equal(parseToHost({ type: 'ask', id: '1', params: { ...params, afterEdit: 'splice' } }), undefined, 'an unknown afterEdit');
  assert.ok(parseToHost({ type: 'ask', id: '1', params: { ...params, afterEdit: 'erratum-diff' } }));
  assert.equal(ask({ ...params.snap, kernel: 4 }), undefined, 'even kernel');
  assert.equal(ask({ ...params.snap, budget: 8 }), undefined, 'budget below the window');
});

test('an explanation carries the file it quotes (path and whole text); a malformed one is rejected', () => {
  const quoted = { path: 'src/a.ts', text: 'export const a = 1;\n' };
  const params = askParams(DEFAULT_SETTINGS, { threadId: 't', repo: '/r', question: 'q?', modelPath: '/m.gguf', quoted });
  assert.deepEqual(params.quoted, quoted);
  assert.equal('quoted' in askParams(DEFAULT_SETTINGS, { threadId: 't', repo: '/r', question: 'q?', modelPath: '/m.gguf' }), false);
  assert.ok(parseToHost({ type: 'ask', id: '1', params }));
  assert.equal(parseToHost({ type: 'ask', id: '1', params: { ...params, quoted: { path: 'src/a.ts' } } }), undefined);
  assert.equal(parseToHost({ type: 'ask', id: '1', params: { ...params, quoted: 'src/a.ts' } }), undefined);
});
