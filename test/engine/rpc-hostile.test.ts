/**
 * RPC against hostile peers (issue 29, items 9–11; patch 0013 and native/addon/rpc.cpp):
 * - a server that reports an absurd count or size is an `rpc` error, not unbounded memory (a
 *   DEVICE_COUNT of 2^31 grew the client to 4 GB) or an assertion;
 * - a server that cannot allocate the model's layers is an `rpc` error naming it, not "not a GGUF
 *   file";
 * - a client message whose tensor lies outside its buffer, or whose size overflows, drops that
 *   client and `reposnap rpc-server` goes on serving (it aborted, exit 134).
 * The hostile servers are test/helpers/rpc-fake.ts; the hostile client speaks the wire format here.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadModel } from '../../src/engine/model';
import { RPC_LOST_EXIT_CODE, RpcError } from '../../src/engine/rpc';
import { checkTinyModel } from '../helpers/models';
import { fakeRpcServer, RPC_CMD, RPC_TENSOR_BYTES, u32, u64s } from '../helpers/rpc-fake';
import { startRpcServer, type RpcServerProcess } from '../helpers/rpc-servers';

const ROOT = path.resolve(__dirname, '..', '..');
let file: string;

before(() => {
  file = checkTinyModel();
});

test('a server that reports 2^31 devices is refused at load as an invalid reply, at once', async () => {
  const fake = await fakeRpcServer((cmd) => (cmd === RPC_CMD.DEVICE_COUNT ? u32(2 ** 31) : undefined));
  try {
    const started = Date.now();
    await assert.rejects(loadModel(file, { rpcServers: [fake.endpoint] }), (e: unknown) => {
      assert.ok(e instanceof RpcError, String(e));
      assert.equal(e.code, 'reply');
      assert.match(e.message, new RegExp(`^RPC server ${fake.endpoint.replace(/\./g, '\\.')} reports 2147483648 devices \\(at most 64\\): an invalid reply`));
      return true;
    });
    assert.ok(Date.now() - started < 10_000);
    // refused by the addon's own handshake: ggml-rpc never connected (one HELLO, one DEVICE_COUNT)
    assert.deepEqual(fake.commands, [RPC_CMD.HELLO, RPC_CMD.DEVICE_COUNT]);
  } finally {
    await fake.close();
  }
});

test('a server that cannot allocate the layers is an rpc error naming it and the size, not a bad model file', async () => {
  const fake = await fakeRpcServer((cmd) => (cmd === RPC_CMD.ALLOC_BUFFER ? u64s(0, 0) : undefined));
  try {
    await assert.rejects(loadModel(file, { rpcServers: [fake.endpoint] }), (e: unknown) => {
      assert.ok(e instanceof RpcError, String(e));
      assert.equal(e.code, 'alloc');
      assert.match(e.message, new RegExp(`^RPC server ${fake.endpoint.replace(/\./g, '\\.')} could not allocate \\d+\\.\\d\\d MiB on device 0 for the model's layers: load fewer layers there`));
      assert.doesNotMatch(e.message, /GGUF/);
      return true;
    });
  } finally {
    await fake.close();
  }
});

/** Runs the load child against `endpoint` (asynchronously: the fake server answers from this process); its exit code, stdout and stderr. */
function loadInChild(endpoint: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'test', 'engine', 'fixtures', 'rpc-load-child.ts'), file, endpoint], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

for (const [what, cmd, reply, shown] of [
  ['an alignment of 0', RPC_CMD.GET_ALIGNMENT, u64s(0), /GET_ALIGNMENT 0 \(a power of two up to 1 GiB expected\)/],
  ['an alignment of 48 (no power of two)', RPC_CMD.GET_ALIGNMENT, u64s(48), /GET_ALIGNMENT 48/],
  ['a max buffer size of 0', RPC_CMD.GET_MAX_SIZE, u64s(0), /GET_MAX_SIZE 0/],
  ['a buffer smaller than asked', RPC_CMD.ALLOC_BUFFER, u64s(0x10000000, 16), /ALLOC_BUFFER of \d+ bytes gave 16 bytes/],
] as const) {
  test(`a server that answers ${what} ends the engine process with the [rpc:reply] message and exit ${RPC_LOST_EXIT_CODE}`, async () => {
    const fake = await fakeRpcServer((c) => (c === cmd ? reply : undefined));
    try {
      const r = await loadInChild(fake.endpoint);
      assert.equal(r.code, RPC_LOST_EXIT_CODE, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`error: \\[rpc:reply\\] an RPC server \\(${fake.endpoint.replace(/\./g, '\\.')}\\) sent an invalid reply`));
      assert.match(r.stderr, shown);
    } finally {
      await fake.close();
    }
  });
}

/** A raw RPC client for the server tests: one connection, requests written as ggml-rpc writes them. */
class RawClient {
  private pending = Buffer.alloc(0);
  private waiting: { bytes: number; resolve: (b: Buffer) => void } | undefined;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (d: Buffer) => {
      this.pending = Buffer.concat([this.pending, d]);
      this.deliver();
    });
    socket.on('error', () => undefined);
    this.closed = new Promise((r) => socket.once('close', () => r()));
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const c = new RawClient(socket);
    const hello = await c.call(RPC_CMD.HELLO, Buffer.alloc(24), 28);
    assert.equal(hello[0], 6, 'protocol 6');
    return c;
  }

  private deliver(): void {
    if (this.waiting && this.pending.length >= 8 + this.waiting.bytes) {
      const reply = this.pending.subarray(8, 8 + this.waiting.bytes);
      this.pending = this.pending.subarray(8 + this.waiting.bytes);
      const { resolve } = this.waiting;
      this.waiting = undefined;
      resolve(reply);
    }
  }

  /** Sends a request; with `replyBytes`, resolves with the reply's payload. */
  call(cmd: number, payload: Buffer, replyBytes?: number): Promise<Buffer> {
    this.socket.write(Buffer.concat([Buffer.from([cmd]), u64s(payload.length), payload]));
    if (replyBytes === undefined) return Promise.resolve(Buffer.alloc(0));
    return new Promise((resolve) => {
      this.waiting = { bytes: replyBytes, resolve };
      this.deliver();
    });
  }

  /** Allocates a buffer of `size` bytes on device 0: its handle and base address. */
  async buffer(size: number): Promise<{ ptr: bigint; base: bigint }> {
    const rsp = await this.call(RPC_CMD.ALLOC_BUFFER, Buffer.concat([u32(0), u64s(size)]), 16);
    const ptr = rsp.readBigUInt64LE(0);
    assert.notEqual(ptr, 0n);
    assert.equal(rsp.readBigUInt64LE(8) >= BigInt(size), true);
    const base = (await this.call(RPC_CMD.BUFFER_GET_BASE, u64s(ptr), 8)).readBigUInt64LE(0);
    return { ptr, base };
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** An f32 `rpc_tensor` in `buffer` at `data` with shape `ne` and strides `nb` (bytes). */
function rpcTensor(buffer: bigint, data: bigint, ne: number[], nb: number[]): Buffer {
  const t = Buffer.alloc(RPC_TENSOR_BYTES);
  t.writeBigUInt64LE(1n, 0); // id
  t.writeUInt32LE(0, 8); // GGML_TYPE_F32
  t.writeBigUInt64LE(buffer, 12);
  ne.forEach((v, i) => t.writeUInt32LE(v >>> 0, 20 + 4 * i));
  nb.forEach((v, i) => t.writeUInt32LE(v >>> 0, 36 + 4 * i));
  t.writeBigUInt64LE(data, 220);
  return t;
}

let server: RpcServerProcess;
before(async () => {
  server = await startRpcServer();
});
after(async () => {
  await server.kill();
});

for (const [what, request] of [
  ['a SET_TENSOR whose tensor lies past its buffer', (b: { ptr: bigint; base: bigint }): [number, Buffer] => [RPC_CMD.SET_TENSOR, Buffer.concat([rpcTensor(b.ptr, b.base + 8192n, [16, 1, 1, 1], [4, 64, 64, 64]), u64s(0), Buffer.alloc(64)])]],
  ['a GET_TENSOR whose tensor starts before its buffer', (b: { ptr: bigint; base: bigint }): [number, Buffer] => [RPC_CMD.GET_TENSOR, Buffer.concat([rpcTensor(b.ptr, b.base - 64n, [16, 1, 1, 1], [4, 64, 64, 64]), u64s(0), u64s(64)])]],
  ['a SET_TENSOR whose size overflows 64 bits (ne and nb of 2^32 - 1)', (b: { ptr: bigint; base: bigint }): [number, Buffer] => [RPC_CMD.SET_TENSOR, Buffer.concat([rpcTensor(b.ptr, b.base, [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff], [4, 0xffffffff, 0xffffffff, 0xffffffff]), u64s(0), Buffer.alloc(64)])]],
] as const) {
  test(`rpc-server drops a client that sends ${what}, and serves the next one`, async () => {
    const bad = await RawClient.connect(server.port);
    const b = await bad.buffer(4096);
    const [cmd, payload] = request(b);
    void bad.call(cmd, payload);
    await Promise.race([bad.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('the server kept the connection')), 10_000))]);
    bad.destroy();
    assert.equal(server.child.exitCode, null, `the server exited:\n${server.output()}`);
    assert.equal(server.child.signalCode, null, `the server was killed:\n${server.output()}`);
    assert.match(server.output(), /deserializ|outside its buffer/);
    // the next client is served: a buffer, written and read back
    const good = await RawClient.connect(server.port);
    try {
      const g = await good.buffer(256);
      const data = Buffer.from(Array.from({ length: 64 }, (_, i) => i));
      const t = rpcTensor(g.ptr, g.base, [16, 1, 1, 1], [4, 64, 64, 64]);
      await good.call(RPC_CMD.SET_TENSOR, Buffer.concat([t, u64s(0), data]));
      assert.deepEqual(await good.call(RPC_CMD.GET_TENSOR, Buffer.concat([t, u64s(0), u64s(64)]), 64), data);
    } finally {
      good.destroy();
      await good.closed;
    }
  });
}

test('rpc-server --help states the trust model: any client that reaches the port', () => {
  const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts'), 'rpc-server', '--help'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout.replace(/\s+/g, ' '), /any client that reaches the port can run computations on this machine's memory and may crash the server, so serve only clients you trust/);
});
