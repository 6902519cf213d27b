/**
 * llama.cpp RPC servers for tests and benchmarks: `reposnap rpc-server` child processes (this
 * source tree's CLI through tsx, so the same engine build as the test) on 127.0.0.1 free ports.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/** A TCP port on 127.0.0.1 that nothing listened on a moment ago (the OS's pick for port 0). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves once a TCP connection to 127.0.0.1:port succeeds (closing it at once), or rejects after `ms`. */
export async function waitListening(port: number, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.once('connect', () => {
        c.destroy();
        resolve(true);
      });
      c.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One running `reposnap rpc-server`. */
export interface RpcServerProcess {
  /** "127.0.0.1:port". */
  endpoint: string;
  port: number;
  child: ChildProcess;
  /** What it printed on stdout and stderr so far. */
  output(): string;
  /** SIGKILLs it; resolves when it has exited. */
  kill(): Promise<void>;
}

/**
 * Starts `reposnap rpc-server --host 127.0.0.1 --port <port> --threads <threads>` and waits until it
 * listens. `port` defaults to a free one.
 */
export async function startRpcServer(opts: { port?: number; threads?: number } = {}): Promise<RpcServerProcess> {
  const port = opts.port ?? (await freePort());
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src', 'cli', 'main.ts'), 'rpc-server', '--host', '127.0.0.1', '--port', String(port), '--threads', String(opts.threads ?? 1)], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const died = exited.then(() => {
    throw new Error(`reposnap rpc-server on port ${port} exited before listening:\n${out}`);
  });
  await Promise.race([waitListening(port), died]);
  died.catch(() => undefined);
  return {
    endpoint: `127.0.0.1:${port}`,
    port,
    child,
    output: () => out,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
