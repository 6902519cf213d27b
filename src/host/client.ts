/**
 * The extension host's side of the engine process: forks `dist/host.js` on the first request
 * (one process per window; the model stays loaded in it between questions), routes its
 * messages to the pending requests, forwards cancellation, and turns a crash or an
 * out-of-memory kill of the process into a clear error for the requests it was serving. The
 * next request after a crash forks a new process. Plain Node: no `vscode` import, so tests
 * drive it directly.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { AbortError } from '../engine/errors';
import type { CompleteStats } from '../pipeline/complete';
import {
  parseFromHost,
  type AskParams,
  type CompleteParams,
  type FromHost,
  type ModelSpec,
  type ToHost,
  type WireAskEvent,
  type WireAskStats,
  type WireError,
} from './protocol';

/** Lifecycle of the engine process, for the status bar. */
export type EngineState = 'stopped' | 'starting' | 'ready' | 'crashed';

/** Options of {@link EngineClient}. */
export interface EngineClientOptions {
  /** The engine entry script (`<extension>/dist/host.js`). */
  hostScript: string;
  /** Node flags of the child (default none; tests pass `['--import', 'tsx']` to run the TypeScript source). */
  execArgv?: string[];
  /** Extra environment for each new process (read at fork time, e.g. `REPOSNAP_ADDON`). */
  env?: () => Record<string, string | undefined>;
  /** State changes of the process. */
  onState?: (state: EngineState, detail?: string) => void;
  /** The process said `ready`: what its engine runs on, and why a GPU backend is not used (if so). */
  onReady?: (engine: string | undefined, notes: string[]) => void;
  /** Lines the process writes to stdout/stderr (llama.cpp logs, warnings). */
  log?: (line: string) => void;
  /**
   * How long a cancelled question may take to stop [ms] before the process is restarted
   * (default {@link CANCEL_GRACE_MS}).
   */
  cancelGraceMs?: number;
}

/**
 * How long the engine process gets to stop a cancelled question [ms] before it is restarted.
 * llama.cpp checks the abort flag between graph nodes (`ggml_abort_callback`), so a prefill or a
 * decode stops within one node's time; what does not stop is a thread blocked outside the graph,
 * e.g. waiting for an RPC server that stopped answering without closing its socket (ggml-rpc has
 * no timeouts): then only a new process gets the user going again.
 */
export const CANCEL_GRACE_MS = 15_000;

/** The engine process ended while it was answering (crash, out-of-memory kill, exit). */
export class EngineCrashedError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly signal: NodeJS.Signals | null,
  ) {
    super(message);
    this.name = 'EngineCrashedError';
  }
}

/** An error reported by the engine process, with its original class name in `name`. */
export class EngineRemoteError extends Error {
  constructor(wire: WireError) {
    super(wire.message);
    this.name = wire.name;
  }
}

/** Callbacks and cancellation of one request. */
export interface AskOptions {
  onEvent?: (e: WireAskEvent) => void;
  signal?: AbortSignal;
}

interface Pending {
  resolve: (m: FromHost) => void;
  reject: (e: Error) => void;
  onEvent?: (e: WireAskEvent) => void;
}

/** How much of the process's last output a crash message quotes. */
const TAIL_LINES = 6;

/**
 * Explains why the process ended, with what to try. A SIGKILL on Linux is most often the
 * kernel's out-of-memory killer.
 */
export function describeExit(code: number | null, signal: NodeJS.Signals | null, tail: string[]): string {
  let what: string;
  if (signal === 'SIGKILL') {
    what = 'was killed (SIGKILL), most often because the system ran out of memory: try a smaller model, a smaller reposnap.contextSize or reposnap.budget, or a quantized reposnap.KVCacheType';
  } else if (signal) {
    what = `crashed (${signal})`;
  } else if (code === 134 || tail.some((l) => /heap out of memory|bad_alloc|failed to allocate/i.test(l))) {
    what = `ran out of memory (exit code ${code})`;
  } else {
    what = `exited with code ${code}`;
  }
  const last = tail.length > 0 ? ` Last output: ${tail.join(' | ')}` : '';
  return `The RepoSnap engine process ${what}. The next question starts a new engine.${last}`;
}

/** Client of one engine process (forked lazily, re-forked after a crash). */
export class EngineClient {
  private child: ChildProcess | undefined;
  private ready: Promise<void> | undefined;
  private readonly pending = new Map<string, Pending>();
  private tail: string[] = [];
  private nextId = 1;
  private stopping = new WeakSet<ChildProcess>();
  private disposed = false;

  constructor(private readonly options: EngineClientOptions) {}

  /** Process id of the running engine, if one is running. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /**
   * Asks one question. Resolves with the stats when answered; rejects with `AbortError` when
   * cancelled through `signal`, {@link EngineCrashedError} when the process dies, or
   * {@link EngineRemoteError} for an engine failure (bad model, context too small, …).
   */
  async ask(params: AskParams, options: AskOptions = {}): Promise<WireAskStats> {
    if (options.signal?.aborted) throw new AbortError();
    const id = String(this.nextId++);
    const done = this.request({ type: 'ask', id, params }, options.onEvent);
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      this.post({ type: 'cancel', id });
      grace = setTimeout(() => this.restartStuck(id), this.options.cancelGraceMs ?? CANCEL_GRACE_MS);
      grace.unref();
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const m = await done;
      if (m.type !== 'done') throw new Error(`unexpected reply '${m.type}' to ask`);
      return m.stats;
    } finally {
      clearTimeout(grace);
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * A plain chat completion (src/pipeline/complete.ts): streams `token` (and `prefill`) events;
   * resolves with its sizes and times. Rejects as {@link ask} does; cancelled through `signal`.
   */
  async complete(params: CompleteParams, options: AskOptions = {}): Promise<CompleteStats> {
    if (options.signal?.aborted) throw new AbortError();
    const id = String(this.nextId++);
    const done = this.request({ type: 'complete', id, params }, options.onEvent);
    const onAbort = () => this.post({ type: 'cancel', id });
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const m = await done;
      if (m.type !== 'completed') throw new Error(`unexpected reply '${m.type}' to complete`);
      return m.stats;
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  /**
   * Token counts of `texts` with `model`'s own tokenizer (`llama_tokenize`, no BOS), and the
   * model's training context [tokens]. Loads the model in the engine when it is not loaded.
   */
  async countTokens(model: ModelSpec, texts: string[]): Promise<{ counts: number[]; trainContext: number }> {
    const id = String(this.nextId++);
    const m = await this.request({ type: 'countTokens', id, model, texts });
    if (m.type !== 'counted') throw new Error(`unexpected reply '${m.type}' to countTokens`);
    return { counts: m.counts, trainContext: m.trainContext };
  }

  /**
   * The cancelled request `id` did not end within the grace period: it is rejected with
   * `AbortError` (it was cancelled, the cancel took effect), the process is restarted, and any
   * other request it was serving fails with {@link EngineCrashedError}.
   */
  private restartStuck(id: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    const seconds = (this.options.cancelGraceMs ?? CANCEL_GRACE_MS) / 1000;
    this.options.log?.(`the engine did not stop the cancelled question within ${seconds} s (blocked outside llama.cpp's graph, e.g. on an RPC server that stopped answering): restarting it`);
    p.reject(new AbortError());
    this.restart(`the engine was restarted: it did not stop a cancelled question within ${seconds} s`);
  }

  /** Asks the engine to empty the cache store in `cacheDir`; resolves with the bytes freed. */
  async clearCache(cacheDir?: string): Promise<number> {
    const id = String(this.nextId++);
    const m = await this.request({ type: 'clearCache', id, cacheDir });
    return m.type === 'cleared' ? m.bytes : 0;
  }

  /** Stops the engine process (pending requests fail); the next request starts a new one. */
  restart(reason = 'the engine was restarted'): void {
    const child = this.child;
    if (!child) return;
    this.stopping.add(child);
    this.failPending(new EngineCrashedError(reason, null, null));
    this.detach();
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    timer.unref();
    child.once('exit', () => clearTimeout(timer));
    this.options.onState?.('stopped');
  }

  /** Stops the process for good. */
  dispose(): void {
    this.disposed = true;
    this.restart('the extension is shutting down');
  }

  private async request(msg: ToHost & { id: string }, onEvent?: (e: WireAskEvent) => void): Promise<FromHost> {
    if (this.disposed) throw new Error('the RepoSnap engine client is disposed');
    await this.start();
    return new Promise<FromHost>((resolve, reject) => {
      this.pending.set(msg.id, { resolve, reject, onEvent });
      this.post(msg);
    });
  }

  private post(msg: ToHost): void {
    if (this.child?.connected) this.child.send(msg);
  }

  /** Forks the engine process unless one runs; resolves when it said `ready`. */
  private start(): Promise<void> {
    if (this.ready) return this.ready;
    this.tail = [];
    this.options.onState?.('starting');
    const child = fork(this.options.hostScript, [], {
      execArgv: this.options.execArgv ?? [],
      env: { ...process.env, ELECTRON_RUN_AS_NODE: '1', ...this.options.env?.() },
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    const onLine = (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line.trim()) continue;
        this.tail.push(line.trim());
        if (this.tail.length > TAIL_LINES) this.tail.shift();
        this.options.log?.(line);
      }
    };
    child.stdout?.on('data', onLine);
    child.stderr?.on('data', onLine);
    this.ready = new Promise<void>((resolve, reject) => {
      child.on('message', (raw) => {
        const m = parseFromHost(raw);
        if (!m) {
          this.options.log?.(`malformed message from the engine ignored: ${JSON.stringify(raw).slice(0, 200)}`);
          return;
        }
        if (m.type === 'ready') {
          this.options.onState?.('ready', m.addon);
          this.options.onReady?.(m.engine, m.notes ?? []);
          resolve();
          return;
        }
        this.route(m);
      });
      child.on('error', (e) => {
        this.options.log?.(`engine process error: ${e.message}`);
      });
      child.on('exit', (code, signal) => {
        if (this.stopping.has(child)) return;
        const err = new EngineCrashedError(describeExit(code, signal, this.tail), code, signal);
        this.options.log?.(err.message);
        reject(err);
        this.failPending(err);
        if (this.child === child) this.detach();
        this.options.onState?.('crashed', err.message);
      });
    });
    return this.ready;
  }

  private route(m: FromHost): void {
    if (m.type === 'ready') return;
    const p = this.pending.get(m.id);
    if (!p) return;
    switch (m.type) {
      case 'event':
        p.onEvent?.(m.event);
        return;
      case 'error':
        this.pending.delete(m.id);
        p.reject(m.error.name === 'AbortError' ? new AbortError(m.error.message) : new EngineRemoteError(m.error));
        return;
      default:
        this.pending.delete(m.id);
        p.resolve(m);
    }
  }

  private failPending(err: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(err);
  }

  private detach(): void {
    this.child = undefined;
    this.ready = undefined;
  }
}
