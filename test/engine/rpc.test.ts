/**
 * llama.cpp's RPC backend (issue 18 item 2): the tiny model's layers spread over two
 * `reposnap rpc-server`s on 127.0.0.1 (child processes started here, killed at the end) give the
 * same answer, the same SnapKV kept positions and bit-identical logits as the local CPU engine, with
 * flash attention on and off; an unreachable server, a malformed endpoint, a server of another
 * protocol version and one that never answers the handshake are refused at load with their own messages; a server killed in the middle of a
 * prefill ends the engine process with the `[rpc:lost]` message and exit code 69 (no hang), and the
 * next load reconnects to a restarted server.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { isLoopbackHost, parseRpcServers, RPC_LOST_EXIT_CODE, RpcError } from '../../src/engine/rpc';
import { createSession } from '../../src/engine/session';
import { rpcServerBanner } from '../../src/cli/rpc-server';
import { rpcOption, UsageError } from '../../src/cli/usage';
import { readSettings } from '../../src/config/settings';
import { checkTinyModel, STORY } from '../helpers/models';
import { freePort, startRpcServer, type RpcServerProcess } from '../helpers/rpc-servers';

const ROOT = path.resolve(__dirname, '..', '..');
let file: string;
let local: EngineModel;
let servers: RpcServerProcess[] = [];

before(async () => {
  file = checkTinyModel();
  local = await loadModel(file);
  servers = await Promise.all([startRpcServer(), startRpcServer()]);
});

after(async () => {
  local.dispose();
  await Promise.all(servers.map((s) => s.kill()));
});

/** Prefill, SnapKV (B = 96 of L ≈ 380, w = 16), teacher-forced continuation, then a greedy answer. */
async function run(model: EngineModel, fa: 'on' | 'off') {
  const prompt = Array.from(model.tokenize(STORY, { addSpecial: true }));
  const continuation = Array.from(model.tokenize(' The dog ran to the park and found a big red ball.'));
  const session = createSession(model, { contextSize: 1024, flashAttention: fa, snapWindow: 16, threads: 1, threadsBatch: 1 });
  try {
    await session.prefill(prompt);
    const snap = await session.snap({ budget: 96, window: 16, kernel: 5, pooling: 'max' });
    const kept = session.snapKept();
    const logits: Float32Array[] = [session.lastLogits()];
    for (const t of continuation) logits.push(await session.step(t));
    let answer = '';
    const gen = session.generate({ maxTokens: 24 });
    for (let r = await gen.next(); !r.done; r = await gen.next()) answer += r.value;
    return { snap, kept, logits, answer, stats: session.stats() };
  } finally {
    session.dispose();
  }
}

for (const fa of ['off', 'on'] as const) {
  test(`layers on two RPC servers: same answer, SnapKV kept positions and bit-identical logits as the CPU engine (flash attention ${fa})`, async () => {
    const want = await run(local, fa);
    const remote = await loadModel(file, { rpcServers: servers.map((s) => s.endpoint) });
    let got;
    try {
      assert.deepEqual(remote.rpcServers, servers.map((s) => s.endpoint));
      assert.ok(remote.gpuLayers >= remote.info.nLayer, 'every layer goes to the servers by default');
      got = await run(remote, fa);
    } finally {
      remote.dispose();
    }
    assert.equal(want.snap.compacted, true);
    assert.equal(got.snap.L, want.snap.L);
    assert.equal(got.snap.B, 96);
    // kept positions: [nLayer][nHeadKv][B], the same selection per (layer, KV head)
    assert.equal(got.kept.length, want.kept.length);
    assert.ok(Buffer.from(got.kept.buffer, got.kept.byteOffset, got.kept.byteLength).equals(Buffer.from(want.kept.buffer, want.kept.byteOffset, want.kept.byteLength)), 'kept positions differ');
    assert.equal(got.logits.length, want.logits.length);
    for (let i = 0; i < want.logits.length; i++) {
      assert.ok(Buffer.from(got.logits[i]!.buffer).equals(Buffer.from(want.logits[i]!.buffer)), `logits ${i} differ`);
    }
    assert.equal(got.answer, want.answer);
    assert.ok(want.answer.length > 0);
    assert.equal(got.stats.cells, want.stats.cells);
  });
}

test('an unreachable RPC server is refused at load with how to start it', async () => {
  const port = await freePort();
  await assert.rejects(loadModel(file, { rpcServers: [`127.0.0.1:${port}`] }), (e: unknown) => {
    assert.ok(e instanceof RpcError);
    assert.equal(e.code, 'unreachable');
    assert.equal(e.message, `cannot reach RPC server 127.0.0.1:${port}: connection refused — start it with \`reposnap rpc-server --port ${port}\``);
    return true;
  });
});

/** A fake server that answers llama.cpp's RPC handshake (command 14) with `reply`, or closes at once. */
async function fakeServer(reply: Buffer | undefined): Promise<{ port: number; close: () => Promise<void> }> {
  const server = net.createServer((c) => {
    c.on('error', () => undefined);
    if (!reply) {
      c.destroy();
      return;
    }
    let got = 0;
    c.on('data', (d) => {
      got += d.length;
      // 1 command byte + 8 size bytes + 24 capability bytes
      if (got >= 33) c.end(reply);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

test('a server of another RPC protocol version is refused with both versions', async () => {
  const rsp = Buffer.alloc(8 + 28);
  rsp.writeBigUInt64LE(28n, 0);
  rsp[8] = 5; // major 5, minor 2, patch 1
  rsp[9] = 2;
  rsp[10] = 1;
  const fake = await fakeServer(rsp);
  try {
    await assert.rejects(loadModel(file, { rpcServers: [`127.0.0.1:${fake.port}`] }), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, 'version');
      assert.match(e.message, new RegExp(`^RPC server 127\\.0\\.0\\.1:${fake.port} speaks llama\\.cpp RPC protocol 5\\.2\\.1, this engine 6\\.0\\.0 .*reposnap rpc-server --port ${fake.port}`));
      return true;
    });
  } finally {
    await fake.close();
  }
  const closing = await fakeServer(undefined);
  try {
    await assert.rejects(loadModel(file, { rpcServers: [`127.0.0.1:${closing.port}`] }), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, 'version');
      assert.match(e.message, /closed llama\.cpp's RPC handshake \(protocol 6\.0\.0 here\)/);
      return true;
    });
  } finally {
    await closing.close();
  }
});

test('a server that accepts but never answers the handshake (busy with another client) is refused after 10 s', async () => {
  const held: net.Socket[] = [];
  const server = net.createServer((c) => {
    c.on('error', () => undefined);
    held.push(c);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  try {
    await assert.rejects(loadModel(file, { rpcServers: [`127.0.0.1:${port}`] }), (e: unknown) => {
      assert.ok(e instanceof RpcError);
      assert.equal(e.code, 'busy');
      assert.match(e.message, new RegExp(`^RPC server 127\\.0\\.0\\.1:${port} accepted the connection but did not answer llama\\.cpp's RPC handshake within 10 s: a server serves one client at a time`));
      return true;
    });
  } finally {
    for (const c of held) c.destroy();
    await new Promise((r) => server.close(r));
  }
});

test('endpoints: "host:port" is checked before anything connects (--rpc, reposnap.RPCServers, loadModel)', async () => {
  assert.deepEqual(parseRpcServers([' 10.0.0.2:50052', 'gpu-box:1']), ['10.0.0.2:50052', 'gpu-box:1']);
  assert.throws(() => parseRpcServers(['127.0.0.1']), /'127\.0\.0\.1' is not an RPC server endpoint: write host:port/);
  for (const v6 of ['[::1]:50052', '::1:50052', 'fe80::1:9']) {
    assert.throws(() => parseRpcServers([v6]), (e: unknown) => e instanceof RpcError && e.code === 'endpoint' && e.message === `'${v6}': llama.cpp's RPC backend connects over IPv4 only: write an IPv4 address or a host name with its port, e.g. 127.0.0.1:50052`, v6);
  }
  assert.throws(() => parseRpcServers(['h:70000']), /the port must be 1-65535/);
  assert.throws(() => parseRpcServers(['h:1', 'h:1']), /listed twice/);
  assert.deepEqual(rpcOption('127.0.0.1:50052,127.0.0.1:50053'), ['127.0.0.1:50052', '127.0.0.1:50053']);
  assert.deepEqual(rpcOption(undefined), []);
  assert.throws(() => rpcOption('127.0.0.1:50052,nope'), (e: unknown) => e instanceof UsageError && /^--rpc: 'nope' is not an RPC server endpoint/.test(e.message));
  const r = readSettings({ get: <T>(k: string) => (k === 'RPCServers' ? (['a:1', 'b'] as T) : undefined) });
  assert.deepEqual(r.settings.RPCServers, []);
  assert.deepEqual(r.problems, [`reposnap.RPCServers: 'b' is not an RPC server endpoint: write host:port, e.g. 127.0.0.1:50052, got ["a:1","b"]; using []`]);
  assert.deepEqual(readSettings({ get: <T>(k: string) => (k === 'RPCServers' ? (['a:1'] as T) : undefined) }).settings.RPCServers, ['a:1']);
  await assert.rejects(loadModel(file, { rpcServers: ['nohost'] }), (e: unknown) => e instanceof RpcError && e.code === 'endpoint');
});

test('rpc-server warns when it listens beyond loopback', () => {
  assert.deepEqual(rpcServerBanner('127.0.0.1', 50052), { endpoint: 'reposnap rpc-server: listening on 127.0.0.1:50052 (use: reposnap ask --rpc 127.0.0.1:50052)' });
  assert.equal(
    rpcServerBanner('0.0.0.0', 50052).warning,
    'reposnap rpc-server: warning: 0.0.0.0 is not loopback. RPC has no authentication or encryption: keep it on loopback or a private network.',
  );
  assert.equal(isLoopbackHost('localhost'), true);
  assert.equal(isLoopbackHost('127.1.2.3'), true);
  assert.equal(isLoopbackHost('192.168.1.5'), false);
  assert.match(servers[0]!.output(), /^reposnap rpc-server: listening on 127\.0\.0\.1:\d+ /);
});

test('rpc-server --gpu on an engine without a GPU says how to build one (exit 1)', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts'), 'rpc-server', '--gpu', '--port', '1'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /^reposnap: error: this engine has no GPU device: build a GPU backend with REPOSNAP_GPU=cuda\|vulkan\|metal npm run build:native \(its module goes to native\/build\/gpu\/; REPOSNAP_BACKEND selects it\)$/m);
});

test('a server killed in the middle of a prefill ends the engine process with the [rpc:lost] message; the next load reconnects', async () => {
  const endpoints = servers.map((s) => s.endpoint);
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'fixtures', 'rpc-prefill-child.ts'), file, ...endpoints], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      if (stdout.includes('prefilling\n')) resolve();
    });
    void exited.then(() => reject(new Error(`the child ended before prefilling: ${stdout} ${stderr}`)));
  });
  // let it run a few prefills, then take the second server away
  await new Promise((r) => setTimeout(r, 300));
  const lostPort = servers[1]!.port;
  await servers[1]!.kill();
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const end = await exited;
  clearTimeout(timer);
  assert.deepEqual(end, { code: RPC_LOST_EXIT_CODE, signal: null }, `stdout: ${stdout}\nstderr: ${stderr}`);
  assert.ok(!stdout.includes('rejected:'), stdout);
  assert.match(stderr, new RegExp(`^error: \\[rpc:lost\\] lost the connection to an RPC server \\(${endpoints.join(', ').replace(/\./g, '\\.')}\\) in the middle of an answer: .*the next question reconnects`, 'm'));

  // the next question: a server started again on the same port serves a new load, same answer as local
  servers[1] = await startRpcServer({ port: lostPort });
  const want = await run(local, 'off');
  const remote = await loadModel(file, { rpcServers: servers.map((s) => s.endpoint) });
  try {
    const got = await run(remote, 'off');
    assert.equal(got.answer, want.answer);
    assert.ok(Buffer.from(got.logits.at(-1)!.buffer).equals(Buffer.from(want.logits.at(-1)!.buffer)));
  } finally {
    remote.dispose();
  }
});
