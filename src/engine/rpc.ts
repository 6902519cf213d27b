/**
 * llama.cpp's RPC backend (ggml-rpc, issue 18): a model's layers on `reposnap rpc-server`s
 * (another machine's GPU, or several machines), SnapKV's scoring and compaction running where each
 * layer lives. The addon (native/addon/rpc.cpp) runs llama.cpp's RPC handshake with each server
 * before loading, because ggml-rpc aborts the process on a server it cannot reach or whose protocol
 * version differs; its errors arrive as `[rpc:<code>] message` and become {@link RpcError}s here.
 * A server lost once layers live on it still ends the engine process (ggml-rpc aborts on a broken
 * connection): the addon prints `[rpc:lost] …` and exits with {@link RPC_LOST_EXIT_CODE}.
 */
import { EngineError } from './errors';
import { loadAddon } from './native';

/**
 * Why an RPC server could not be used: `endpoint` not "host:port", `unreachable` refused, timed out
 * or an unknown host, `busy` the server accepted the connection but did not answer the handshake
 * (a server serves one client at a time), `version` another RPC protocol version, `lost` the
 * connection broke while the model's layers lived there, `reply` the server reported a count or
 * size outside its bounds (more than 64 devices, an alignment that is not a power of two; patch
 * 0013, issue 29 item 9), `alloc` the server could not allocate the memory for the model's layers
 * (item 11; before, this read as a bad model file).
 */
export type RpcErrorCode = 'endpoint' | 'unreachable' | 'busy' | 'version' | 'lost' | 'reply' | 'alloc';

/** An RPC server that cannot be used; the message says which server, why, and what to do. */
export class RpcError extends EngineError {
  constructor(
    message: string,
    readonly code: RpcErrorCode,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

/**
 * Exit code of an engine process that lost an RPC server in the middle of its work (the addon's
 * `rpcLostExitCode`, 69 = EX_UNAVAILABLE); its last stderr line starts `error: [rpc:lost]`.
 */
export const RPC_LOST_EXIT_CODE = 69;

/** What `reposnap rpc-server` prints and the README says about exposing a server. */
export const RPC_SECURITY_WARNING = 'RPC has no authentication or encryption: keep it on loopback or a private network';

/**
 * The RPC server's trust model, as upstream states it (llama.cpp's rpc-server README): it trusts
 * its client. Malformed tensors are refused (patch 0013), but a client's graphs run as sent.
 * `reposnap rpc-server --help` and the README say it.
 */
export const RPC_TRUST_MODEL = "any client that reaches the port can run computations on this machine's memory and may crash the server, so serve only clients you trust";

/** An RPC server's address. */
export interface RpcEndpoint {
  /** Host name or IPv4 address (no IPv6 literal: ggml-rpc splits at the last ':'). */
  host: string;
  /** TCP port, 1–65535. */
  port: number;
}

/**
 * Parses "host:port" the way the addon (and ggml-rpc's `parse_endpoint`) reads it.
 * @returns the endpoint, or a sentence saying what is wrong with the string.
 */
export function parseRpcEndpoint(text: string): RpcEndpoint | string {
  const s = text.trim();
  const m = /^([^\s:]+):(\d{1,5})$/.exec(s);
  // ggml-rpc connects over IPv4 only (socket(AF_INET), gethostbyname in ggml-rpc/transport.cpp)
  if (!m && (s.startsWith('[') || (s.match(/:/g) ?? []).length > 1)) {
    return `'${text}': llama.cpp's RPC backend connects over IPv4 only: write an IPv4 address or a host name with its port, e.g. 127.0.0.1:50052`;
  }
  if (!m) return `'${text}' is not an RPC server endpoint: write host:port, e.g. 127.0.0.1:50052`;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return `'${text}': the port must be 1-65535`;
  return { host: m[1], port };
}

/**
 * Checks a list of "host:port" strings (the `--rpc` flag split at commas, or `reposnap.RPCServers`).
 * @returns the trimmed endpoints, in order.
 * @throws RpcError (code `endpoint`) naming the first malformed or repeated entry.
 */
export function parseRpcServers(list: readonly string[]): string[] {
  const out: string[] = [];
  for (const item of list) {
    const e = parseRpcEndpoint(item);
    if (typeof e === 'string') throw new RpcError(e, 'endpoint');
    const s = `${e.host}:${e.port}`;
    if (out.includes(s)) throw new RpcError(`RPC server ${s} is listed twice`, 'endpoint');
    out.push(s);
  }
  return out;
}

/** Whether a host name stays on this machine (127.0.0.0/8, localhost, ::1). */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127(\.\d{1,3}){3}$/.test(h);
}

/**
 * The {@link RpcError} of an addon error message `[rpc:<code>] text`, or undefined for another
 * message.
 */
export function rpcErrorFromNative(message: string): RpcError | undefined {
  const m = /^\[rpc:(endpoint|unreachable|busy|version|lost|reply|alloc)\] ([\s\S]*)$/.exec(message);
  return m ? new RpcError(m[2], m[1] as RpcErrorCode) : undefined;
}

/** Options of {@link startRpcServer}. */
export interface RpcServerOptions {
  /** Address to listen on; default 127.0.0.1 (see {@link RPC_SECURITY_WARNING}). */
  host?: string;
  /** TCP port; default 50052 (llama.cpp's rpc-server default). */
  port?: number;
  /** CPU threads of the served backend; default 1. */
  threads?: number;
  /** Folder where the server keeps large tensors it received, by hash (llama.cpp's `-c`); default none. */
  cacheDir?: string;
  /** Serve this engine's GPU devices instead of its CPU (a GPU build, `REPOSNAP_ADDON`); default false. */
  gpu?: boolean;
}

/**
 * Serves this engine's CPU backend (or with `gpu` its GPU devices) with llama.cpp's RPC server
 * (`ggml_backend_rpc_start_server`) on the calling thread: it never returns while serving (clients
 * one at a time; the process ends it).
 * @throws EngineError when it cannot listen (port in use, an address not of this machine), or `gpu`
 *   is asked of an engine built without a GPU backend.
 */
export function startRpcServer(options: RpcServerOptions = {}): never {
  const addon = loadAddon();
  if (typeof addon.startRpcServer !== 'function') {
    throw new EngineError(`this engine was built without llama.cpp's RPC backend: run 'npm run build:native'`);
  }
  try {
    addon.startRpcServer({ host: options.host ?? '127.0.0.1', port: options.port ?? 50052, threads: options.threads ?? 1, ...(options.cacheDir ? { cacheDir: options.cacheDir } : {}), gpu: options.gpu ?? false });
  } catch (e) {
    throw new EngineError((e as Error).message);
  }
  throw new EngineError('the RPC server stopped');
}
