/**
 * `reposnap.RPCServers` through the extension's engine process (issue 18 item 2): the setting reaches
 * the model loading (host/request.ts → protocol → host/engine.ts), the answer over two RPC servers on
 * 127.0.0.1 is the one the local engine gives, and a server killed in the middle of an answer fails the
 * question with the `[rpc:lost]` line (the engine process exits with code 69, no hang), after which
 * the next question starts a new engine that connects to the restarted server.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { DEFAULT_SETTINGS, type ReposnapSettings } from '../../src/config/settings';
import { RPC_LOST_EXIT_CODE } from '../../src/engine/rpc';
import { EngineClient, EngineCrashedError } from '../../src/host/client';
import { parseToHost, type AskParams, type WireAskEvent } from '../../src/host/protocol';
import { askParams } from '../../src/host/request';
import { checkTinyModel } from '../helpers/models';
import { startRpcServer, type RpcServerProcess } from '../helpers/rpc-servers';

const HOST = path.resolve(__dirname, '..', '..', 'src', 'host', 'main.ts');
let repo: string;
let client: EngineClient;
let servers: RpcServerProcess[] = [];

function params(over: Partial<ReposnapSettings> = {}): AskParams {
  return askParams(
    { ...DEFAULT_SETTINGS, contextSize: 1024, budget: 128, window: 16, maxTokens: 12, flashAttention: 'off', ...over },
    { threadId: 't1', repo, question: 'Who is Lily?', modelPath: checkTinyModel() },
  );
}

/** Asks, returning the streamed text and the stats. */
async function ask(p: AskParams, onEvent?: (e: WireAskEvent) => void) {
  let text = '';
  const stats = await client.ask(p, {
    onEvent: (e) => {
      if (e.kind === 'token') text += e.text;
      onEvent?.(e);
    },
  });
  return { text, stats };
}

before(async () => {
  repo = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-rpc-host-'));
  const story = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. ';
  fs.writeFileSync(path.join(repo, 'story.md'), `${story}\n`.repeat(8));
  client = new EngineClient({ hostScript: HOST, execArgv: ['--import', 'tsx'] });
  servers = await Promise.all([startRpcServer(), startRpcServer()]);
});

after(async () => {
  client.dispose();
  await Promise.all(servers.map((s) => s.kill()));
  fs.rmSync(repo, { recursive: true, force: true });
});

test('reposnap.RPCServers reaches the engine process: the same answer over two RPC servers as on the local CPU', async () => {
  const endpoints = servers.map((s) => s.endpoint);
  const p = params({ RPCServers: endpoints });
  assert.deepEqual(p.model, { path: checkTinyModel(), gpuLayers: 999, rpcServers: endpoints });
  assert.deepEqual(parseToHost(JSON.parse(JSON.stringify({ type: 'ask', id: '1', params: p }))), { type: 'ask', id: '1', params: p });
  assert.equal(parseToHost({ type: 'ask', id: '1', params: { ...p, model: { ...p.model, rpcServers: [5] } } }), undefined);
  assert.equal('rpcServers' in params().model, false, 'no servers: nothing sent');

  const local = await ask(params());
  const remote = await ask(p);
  assert.ok(local.text.length > 0);
  assert.equal(remote.text, local.text);
  assert.equal(remote.stats.L, local.stats.L);
  assert.equal(remote.stats.B, 128);
});

test('a server killed in the middle of an answer fails the question with [rpc:lost]; the next question reconnects', async () => {
  const endpoints = servers.map((s) => s.endpoint);
  const lostPort = servers[0]!.port;
  let killing: Promise<void> | undefined;
  await assert.rejects(
    ask(params({ RPCServers: endpoints, maxTokens: 200, snap: false }), (e) => {
      if (e.kind === 'token' && !killing) killing = servers[0]!.kill();
    }),
    (e: unknown) => {
      assert.ok(e instanceof EngineCrashedError, String(e));
      assert.equal(e.exitCode, RPC_LOST_EXIT_CODE);
      assert.match(e.message, /exited with code 69\. The next question starts a new engine\. Last output: .*error: \[rpc:lost\] lost the connection to an RPC server \(/);
      return true;
    },
  );
  assert.ok(killing, 'the answer had started');
  await killing;
  servers[0] = await startRpcServer({ port: lostPort });
  const again = await ask(params({ RPCServers: servers.map((s) => s.endpoint) }));
  const local = await ask(params());
  assert.equal(again.text, local.text);
});
