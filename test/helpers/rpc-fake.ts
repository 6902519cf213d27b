/**
 * A fake llama.cpp RPC server speaking ggml-rpc's wire format (ggml/src/ggml-rpc/ggml-rpc.cpp,
 * protocol 6): every request is `cmd (1 byte) | size (u64 LE) | payload`, every reply
 * `size (u64 LE) | payload`. It answers what a model load asks (HELLO, DEVICE_COUNT,
 * GET_DEVICE_MEMORY, GET_ALIGNMENT, GET_MAX_SIZE, ALLOC_BUFFER, BUFFER_GET_BASE, …) with
 * plausible values, and a test overrides the reply to one command to act as a hostile server
 * (issue 29, items 9 and 11). It holds no tensor data: GET_TENSOR answers zeros.
 */
import net from 'node:net';

/** ggml-rpc's command numbers (`enum rpc_cmd`). */
export const RPC_CMD = {
  ALLOC_BUFFER: 0,
  GET_ALIGNMENT: 1,
  GET_MAX_SIZE: 2,
  BUFFER_GET_BASE: 3,
  FREE_BUFFER: 4,
  BUFFER_CLEAR: 5,
  SET_TENSOR: 6,
  SET_TENSOR_HASH: 7,
  GET_TENSOR: 8,
  COPY_TENSOR: 9,
  GRAPH_COMPUTE: 10,
  GET_DEVICE_MEMORY: 11,
  INIT_TENSOR: 12,
  GET_ALLOC_SIZE: 13,
  HELLO: 14,
  DEVICE_COUNT: 15,
  GRAPH_RECOMPUTE: 16,
  MEMSET_TENSOR: 17,
} as const;

/** `sizeof(rpc_tensor)` (packed): id, type, buffer, ne[4], nb[4], op, op_params[16], flags, src[10], view_src, view_offs, data, name[64], use_count. */
export const RPC_TENSOR_BYTES = 296;

/** A reply payload, or null for a command that gets none. */
export type RpcReply = Buffer | null;

/** Little-endian u64s. */
export const u64s = (...v: (number | bigint)[]): Buffer => {
  const b = Buffer.alloc(8 * v.length);
  v.forEach((x, i) => b.writeBigUInt64LE(BigInt(x), 8 * i));
  return b;
};
/** A little-endian u32. */
export const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return b;
};

/** The default reply of each command: a healthy server with one 8 GiB device. */
function defaultReply(cmd: number, payload: Buffer, state: { next: bigint }): RpcReply {
  switch (cmd) {
    case RPC_CMD.HELLO:
      return Buffer.from([6, 0, 0, 0, ...new Array(24).fill(0)]); // protocol 6.0.0, no transport caps
    case RPC_CMD.DEVICE_COUNT:
      return u32(1);
    case RPC_CMD.GET_DEVICE_MEMORY:
      return u64s(8n << 30n, 8n << 30n);
    case RPC_CMD.GET_ALIGNMENT:
      return u64s(32);
    case RPC_CMD.GET_MAX_SIZE:
      return u64s(1n << 40n);
    case RPC_CMD.ALLOC_BUFFER: {
      const size = payload.readBigUInt64LE(4);
      const ptr = (state.next += 0x10000000n);
      return u64s(ptr, size);
    }
    case RPC_CMD.BUFFER_GET_BASE:
      return u64s(payload.readBigUInt64LE(0) + 0x1000n);
    case RPC_CMD.SET_TENSOR_HASH:
      return Buffer.from([0]);
    case RPC_CMD.GET_TENSOR:
      return Buffer.alloc(Number(payload.readBigUInt64LE(RPC_TENSOR_BYTES + 8)));
    case RPC_CMD.COPY_TENSOR:
      return Buffer.from([1]);
    case RPC_CMD.GET_ALLOC_SIZE: {
      // ne[3] * nb[3] of the request's tensor (after the u32 device): its size when contiguous
      const t = 4;
      return u64s(BigInt(payload.readUInt32LE(t + 20 + 12)) * BigInt(payload.readUInt32LE(t + 36 + 12)));
    }
    default:
      return null; // FREE_BUFFER, BUFFER_CLEAR, SET_TENSOR, INIT_TENSOR, MEMSET_TENSOR, GRAPH_COMPUTE …
  }
}

/** A running fake server. */
export interface FakeRpcServer {
  port: number;
  endpoint: string;
  /** The commands received so far, in order, over every connection. */
  commands: number[];
  close(): Promise<void>;
}

/**
 * Starts a fake RPC server on 127.0.0.1 (a free port). `override(cmd, payload)` may return the
 * reply to send instead of the default one (undefined: the default).
 */
export async function fakeRpcServer(override: (cmd: number, payload: Buffer) => RpcReply | undefined = () => undefined): Promise<FakeRpcServer> {
  const commands: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((c) => {
    sockets.add(c);
    c.on('close', () => sockets.delete(c));
    c.on('error', () => undefined);
    const state = { next: 0n };
    let pending = Buffer.alloc(0);
    c.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      while (pending.length >= 9) {
        const cmd = pending[0]!;
        const size = Number(pending.readBigUInt64LE(1));
        if (pending.length < 9 + size) break;
        const payload = pending.subarray(9, 9 + size);
        pending = pending.subarray(9 + size);
        commands.push(cmd);
        const reply = override(cmd, payload) ?? defaultReply(cmd, payload, state);
        if (reply !== null) c.write(Buffer.concat([u64s(reply.length), reply]));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    endpoint: `127.0.0.1:${port}`,
    commands,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
