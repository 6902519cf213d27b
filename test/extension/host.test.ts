/**
 * The engine process, for real: forked from the TypeScript source (through tsx), answering
 * with the tiny model; the model is loaded once per process; cancellation reaches the engine;
 * a killed engine fails its request with a clear error and the next request starts a new one.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_SETTINGS, type ReposnapSettings } from '../../src/config/settings';
import { askParams } from '../../src/host/request';
import { AbortError } from '../../src/engine/errors';
import { EngineClient, EngineCrashedError, EngineRemoteError } from '../../src/host/client';
import type { AskParams, WireAskEvent } from '../../src/host/protocol';
import { checkTinyModel } from '../helpers/models';

const HOST = path.resolve(__dirname, '..', '..', 'src', 'host', 'main.ts');
let repo: string;
let client: EngineClient;
const states: string[] = [];

function params(question: string, over: Partial<ReposnapSettings> = {}): AskParams {
  return askParams({ ...DEFAULT_SETTINGS, GPULayers: 0, contextSize: 1024, budget: 128, window: 16, maxTokens: 12, ...over }, { threadId: 't1', repo, question, modelPath: checkTinyModel() });
}

before(() => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-host-'));
  // ~300 tokens of story text so that SnapKV has a prefix to compress (L > B = 128)
  const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ';
  fs.writeFileSync(path.join(repo, 'story.md'), `${story}\n`.repeat(8));
  fs.writeFileSync(path.join(repo, 'main.ts'), 'export function add(a: number, b: number) { return a + b; }\n');
  client = new EngineClient({ hostScript: HOST, execArgv: ['--import', 'tsx'], onState: (s) => states.push(s) });
});

after(() => {
  client.dispose();
  fs.rmSync(repo, { recursive: true, force: true });
});

test('the engine process answers with the tiny model, streams events in order, and loads the model once', async () => {
  const events: WireAskEvent[] = [];
  const stats = await client.ask(params('Who is Lily?'), { onEvent: (e) => events.push(e) });
  const pid = client.pid;
  assert.ok(pid && pid !== process.pid, 'answered in a child process');
  assert.ok(stats.L > 128, `L = ${stats.L}`);
  assert.equal(stats.B, 128);
  assert.ok(stats.cache === 'off' || stats.cache === 'miss', `no cache store is passed yet: got ${stats.cache}`);
  assert.equal(stats.decodeTokens, 12);
  const kinds = events.map((e) => e.kind);
  assert.deepEqual(kinds.slice(0, 2), ['model', 'model']);
  const first = (k: WireAskEvent['kind']) => kinds.indexOf(k);
  assert.ok(first('pack') < first('packed') && first('packed') < first('prefill') && first('prefill') < first('snap') && first('snap') < first('token'), kinds.join(','));
  const packed = events.find((e) => e.kind === 'packed');
  assert.ok(packed && packed.kind === 'packed');
  assert.deepEqual([...packed.paths].sort(), ['main.ts', 'story.md']);
  assert.equal(packed.promptTokens, stats.L);
  const text = events.flatMap((e) => (e.kind === 'token' ? [e.text] : [])).join('');
  assert.ok(text.length > 0, 'streamed text');

  const again: WireAskEvent[] = [];
  const s2 = await client.ask(params('Where does Lily play?'), { onEvent: (e) => again.push(e) });
  assert.equal(client.pid, pid, 'same process');
  assert.equal(again.filter((e) => e.kind === 'model').length, 0, 'the model stays loaded between questions');
  assert.equal(s2.B, 128);
});

test('cancelling a question aborts it in the engine; the same engine answers the next one', async () => {
  const pid = client.pid;
  const controller = new AbortController();
  const asking = client.ask(params('Tell me a long story.', { maxTokens: 400, snap: false }), {
    signal: controller.signal,
    onEvent: (e) => {
      if (e.kind === 'token') controller.abort();
    },
  });
  await assert.rejects(asking, (e: Error) => e instanceof AbortError);
  const stats = await client.ask(params('Who is Lily?'));
  assert.equal(client.pid, pid, 'cancellation does not restart the engine');
  assert.equal(stats.decodeTokens, 12);
});

test('an engine error comes back with its class and message, and the engine keeps serving', async () => {
  const bad = { ...params('Who is Lily?'), model: { path: path.join(repo, 'main.ts'), gpuLayers: 0 } };
  await assert.rejects(client.ask(bad), (e: Error) => e instanceof EngineRemoteError && e.name === 'ModelLoadError' && /not a GGUF/.test(e.message));
  const stats = await client.ask(params('Who is Lily?'));
  assert.equal(stats.B, 128);
});

test('a killed engine fails its request with a clear error, and the next request starts a new engine', async () => {
  const pid = client.pid!;
  const asking = client.ask(params('Tell me a long story.', { maxTokens: 400, snap: false }), {
    onEvent: (e) => {
      if (e.kind === 'token' && client.pid === pid) process.kill(pid, 'SIGKILL');
    },
  });
  await assert.rejects(asking, (e: Error) => {
    assert.ok(e instanceof EngineCrashedError, String(e));
    assert.equal(e.signal, 'SIGKILL');
    assert.match(e.message, /killed \(SIGKILL\).*out of memory.*next question starts a new engine/);
    return true;
  });
  assert.equal(client.pid, undefined, 'no engine after the crash');
  assert.ok(states.includes('crashed'));

  const events: WireAskEvent[] = [];
  const stats = await client.ask(params('Who is Lily?'), { onEvent: (e) => events.push(e) });
  assert.ok(client.pid && client.pid !== pid, 'a new engine process');
  assert.equal(events.filter((e) => e.kind === 'model').length, 2, 'the new engine loads the model');
  assert.equal(stats.decodeTokens, 12);
});

test('killing an idle engine is noticed; the next request is answered by a new one', async () => {
  const pid = client.pid!;
  const exited = new Promise((r) => setTimeout(r, 50));
  process.kill(pid, 'SIGKILL');
  await exited;
  for (let i = 0; i < 50 && client.pid === pid; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(client.pid, undefined);
  const stats = await client.ask(params('Who is Lily?'));
  assert.ok(client.pid && client.pid !== pid);
  assert.equal(stats.B, 128);
});

test('a cancelled question whose engine does not stop (a stopped process stands for one blocked on a silent RPC server) ends with AbortError, the engine is restarted, the next question is answered', { timeout: 60_000 }, async () => {
  const logs: string[] = [];
  const stuck = new EngineClient({ hostScript: HOST, execArgv: ['--import', 'tsx'], cancelGraceMs: 500, log: (l) => logs.push(l) });
  try {
    await stuck.ask(params('Who is Lily?'));
    const pid = stuck.pid!;
    const controller = new AbortController();
    const asking = stuck.ask(params('Tell me a long story.', { maxTokens: 400, snap: false }), {
      signal: controller.signal,
      onEvent: (e) => {
        if (e.kind === 'token' && !controller.signal.aborted) {
          process.kill(pid, 'SIGSTOP'); // it can no longer read the cancel message
          controller.abort();
        }
      },
    });
    await assert.rejects(asking, (e: Error) => e instanceof AbortError);
    assert.ok(logs.some((l) => /did not stop the cancelled question within 0\.5 s/.test(l)), logs.join('\n'));
    // the stopped process is killed (SIGTERM stays pending in a stopped process; SIGKILL follows)
    let alive = true;
    for (let i = 0; i < 100 && alive; i++) {
      try {
        process.kill(pid, 0);
        await new Promise((r) => setTimeout(r, 50));
      } catch {
        alive = false;
      }
    }
    assert.equal(alive, false, `engine ${pid} still runs`);
    const stats = await stuck.ask(params('Who is Lily?'));
    assert.ok(stuck.pid && stuck.pid !== pid, 'a new engine answered');
    assert.equal(stats.decodeTokens, 12);
  } finally {
    stuck.dispose();
  }
});
