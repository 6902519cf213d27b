/**
 * `reposnap rpc-server [--host 127.0.0.1] [--port 50052] [--threads N] [--gpu] [--cache-dir <dir>]`:
 * serves this engine's CPU backend (or its GPUs) with llama.cpp's RPC server (ggml-rpc), from the same patched build as the
 * engine that connects (`reposnap ask --rpc`, `reposnap.RPCServers`), so the protocol versions match.
 * Runs until killed; serves one client at a time.
 */
import { isLoopbackHost, parseRpcEndpoint, RPC_SECURITY_WARNING, RPC_TRUST_MODEL, startRpcServer } from '../engine/rpc';
import { intOption, parseCommand, UsageError } from './usage';

const HELP = `usage: reposnap rpc-server [--host 127.0.0.1] [--port 50052] [--threads N] [--gpu] [--cache-dir <dir>]

Serves this machine's CPU to 'reposnap ask --rpc host:port' (or the setting reposnap.RPCServers) with
llama.cpp's RPC backend: the model's layers and their part of SnapKV run here. One client at a time.
${RPC_SECURITY_WARNING}; ${RPC_TRUST_MODEL}.

  --host <address>    address to listen on (default 127.0.0.1; 0.0.0.0 = every interface)
  --port <n>          TCP port (default 50052)
  --threads <n>       CPU threads for the layers served here (default 1)
  --gpu               serve this engine's GPUs instead of its CPU (its GPU backend: REPOSNAP_GPU=cuda npm run
                      build:native puts the module in native/build/gpu/)
  --cache-dir <dir>   keep large tensors received here by hash, so a reconnecting client sends them once
`;

/**
 * The line `reposnap rpc-server` prints before serving, and the warning (undefined on loopback).
 * @returns `{ endpoint, warning }`: "listening on host:port …", the security warning when `host` is not loopback.
 */
export function rpcServerBanner(host: string, port: number): { endpoint: string; warning?: string } {
  return {
    endpoint: `reposnap rpc-server: listening on ${host}:${port} (use: reposnap ask --rpc ${host}:${port})`,
    ...(isLoopbackHost(host) ? {} : { warning: `reposnap rpc-server: warning: ${host} is not loopback. ${RPC_SECURITY_WARNING}.` }),
  };
}

/** Runs `reposnap rpc-server`; returns only on a usage error or when it cannot listen (throws). */
export async function runRpcServer(args: string[]): Promise<number> {
  const parsed = parseCommand({
    args,
    options: {
      host: { type: 'string' },
      port: { type: 'string' },
      threads: { type: 'string' },
      'cache-dir': { type: 'string' },
      gpu: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const o = parsed.values;
  if (o.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const host = (o.host ?? '127.0.0.1').trim();
  const port = intOption('port', o.port, 50052, 1, 65535);
  const threads = intOption('threads', o.threads, 1, 1, 512);
  const endpoint = parseRpcEndpoint(`${host}:${port}`);
  if (typeof endpoint === 'string') throw new UsageError(`--host: ${endpoint}`);
  const banner = rpcServerBanner(host, port);
  process.stdout.write(`${banner.endpoint}\n`);
  if (banner.warning) process.stderr.write(`${banner.warning}\n`);
  startRpcServer({ host, port, threads, gpu: o.gpu ?? false, ...(o['cache-dir'] ? { cacheDir: o['cache-dir'] } : {}) });
}
