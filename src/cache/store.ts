/**
 * Per-workspace cache store (README, "Follow-up questions and the cache"): the uncompressed repository prefix, so that the
 * next question restores it and prefills only what changed, and each thread's compressed cache
 * with its transcript, for fast follow-ups.
 *
 * Layout of a workspace folder:
 *   prefix/<id>.rsnp   state file of an uncompressed prefix (src/engine/state-file.ts)
 *   prefix/<id>.json   its index: cache key, token count, hash chain, bytes, use times, hits
 *   thread/<id>.rsnp   a thread's compressed state
 *   thread/<id>.json   its index and transcript (questions, answers, answer tokens, snap params)
 *   stats.json         counters and the last questions' timings
 * Every file is written atomically (temporary file, fsync, rename) and state files carry a
 * checksum, so a reader never sees a torn entry. Mutations of indexes, counters and eviction run
 * under a lock on the folder (proper-lockfile), so two processes (two windows, the CLI beside the
 * extension) neither tear nor lose entries. A truncated, corrupted or foreign entry is reported
 * once, removed and rebuilt. A full disk (or any write error) turns caching off with a warning;
 * it never fails an answer.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import type { SessionSnapshot } from '../engine/session';
import { decodeStateFile, encodeStateFile, StateFileError, writeFileAtomic } from '../engine/state-file';
import { commonCheckpoints, CHECKPOINT_TOKENS } from './hash-chain';

/** Size caps [bytes]. */
export interface StoreLimits {
  /** All entries of one workspace. Default 8 GiB. */
  maxWorkspaceBytes: number;
  /** All workspaces under the cache root together. Default 32 GiB. */
  maxTotalBytes: number;
  /** The most recent prefix kept in RAM (per process). Default 2 GiB. */
  maxRamBytes: number;
}

export const DEFAULT_LIMITS: StoreLimits = { maxWorkspaceBytes: 8 * 2 ** 30, maxTotalBytes: 32 * 2 ** 30, maxRamBytes: 2 * 2 ** 30 };

/** How a question used the cache. */
export type CacheOutcome = 'hit' | 'partial' | 'miss' | 'continue' | 'off';

/** Index of a prefix entry (prefix/<id>.json). */
export interface PrefixIndex {
  kind: 'prefix';
  id: string;
  key: string;
  tokens: number;
  chain: string[];
  bytes: number;
  createdAt: number;
  lastUsed: number;
  hits: number;
}

/** One answered turn of a thread. */
export interface ThreadTurn {
  question: string;
  answer: string;
  /** The answer's token ids as decoded (replayed exactly when re-snapping). */
  answerTokens: number[];
}

/** Index of a thread entry (thread/<id>.json). */
export interface ThreadIndex {
  kind: 'thread';
  id: string;
  key: string;
  turns: ThreadTurn[];
  /** Tokens of the repository prefix the thread started from. */
  prefixTokens: number;
  snap: { window: number; budget: number; kernel: number; pooling: string; allocation?: string } | null;
  L: number;
  B: number;
  bytes: number;
  createdAt: number;
  lastUsed: number;
  hits: number;
}

/** One answered question, as the stats keep it. */
export interface QuestionRecord {
  at: number;
  question: string;
  outcome: CacheOutcome;
  L: number;
  B: number;
  reusedTokens: number;
  prefilledTokens: number;
  prefillMs: number;
  snapMs: number;
  ttftMs: number;
  decodeTokS: number;
}

/** Counters of a workspace store (stats.json). */
export interface StoreCounters {
  fullHits: number;
  partialHits: number;
  misses: number;
  continues: number;
  tokensReused: number;
  /** Estimated prefill time saved: reused tokens at the question's own prefill speed [ms]. */
  prefillMsSaved: number;
  corruptRemoved: number;
  evicted: number;
  recent: QuestionRecord[];
}

/** What `reposnap stats` shows. */
export interface StoreStats {
  dir: string;
  enabled: boolean;
  entries: (PrefixIndex | ThreadIndex)[];
  totalBytes: number;
  counters: StoreCounters;
}

const EMPTY_COUNTERS: StoreCounters = { fullHits: 0, partialHits: 0, misses: 0, continues: 0, tokensReused: 0, prefillMsSaved: 0, corruptRemoved: 0, evicted: 0, recent: [] };
const RECENT_QUESTIONS = 50;

/** File operations the store uses; tests inject failures through them. */
export interface StoreFs {
  writeFileAtomic(file: string, data: Uint8Array): void;
}

/** Options of {@link CacheStore.open}. */
export interface StoreOptions {
  limits?: Partial<StoreLimits>;
  /** Receives each warning once (corrupt entry removed, caching turned off, …). */
  onWarning?: (message: string) => void;
  fs?: StoreFs;
}

/** The most recent prefix snapshot of this process, by entry id (memory before disk). */
let ramPrefix: { dir: string; id: string; snap: SessionSnapshot } | undefined;

/** A workspace's cache. Methods never throw for cache trouble: they warn and degrade. */
export class CacheStore {
  private enabled = true;
  private readonly warned = new Set<string>();
  private readonly limits: StoreLimits;
  private readonly io: StoreFs;
  private pending: Promise<unknown>[] = [];

  private constructor(readonly dir: string, private readonly options: StoreOptions) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.io = options.fs ?? { writeFileAtomic };
  }

  /** Opens (creating) the store in `dir`. A folder that cannot be created gives a disabled store. */
  static open(dir: string, options: StoreOptions = {}): CacheStore {
    const store = new CacheStore(dir, options);
    try {
      fs.mkdirSync(path.join(dir, 'prefix'), { recursive: true });
      fs.mkdirSync(path.join(dir, 'thread'), { recursive: true });
    } catch (e) {
      store.disable(`cannot create the cache folder ${dir} (${(e as NodeJS.ErrnoException).code ?? e}): caching is off`);
    }
    return store;
  }

  /** False after a write error: nothing more is written in this process. */
  get isEnabled(): boolean {
    return this.enabled;
  }

  private warn(message: string): void {
    if (this.warned.has(message)) return;
    this.warned.add(message);
    this.options.onWarning?.(message);
  }

  private disable(message: string): void {
    this.enabled = false;
    this.warn(message);
  }

  private file(kind: 'prefix' | 'thread', id: string, ext: 'rsnp' | 'json'): string {
    return path.join(this.dir, kind, `${id}.${ext}`);
  }

  /** Runs fn under the folder's lock (waits for another process's lock, up to ~10 s). */
  private async locked<T>(fn: () => T | Promise<T>): Promise<T> {
    const release = await lockfile.lock(this.dir, { retries: { retries: 50, minTimeout: 20, maxTimeout: 200 }, stale: 30_000, realpath: false });
    try {
      return await fn();
    } finally {
      await release();
    }
  }

  private readIndex<T extends PrefixIndex | ThreadIndex>(file: string): T | undefined {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return undefined; // vanished (evicted by another process): not an error
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      this.removeCorrupt(file, 'its index is not valid JSON');
      return undefined;
    }
  }

  private removeCorrupt(file: string, why: string): void {
    const base = file.replace(/\.(json|rsnp)$/, '');
    for (const f of [`${base}.json`, `${base}.rsnp`]) fs.rmSync(f, { force: true });
    this.warn(`removed a corrupted cache entry ${path.relative(this.dir, base)} (${why}); it will be rebuilt`);
    this.background(() =>
      this.bumpCounters((c) => {
        c.corruptRemoved++;
      }),
    );
  }

  /** Indexes of one kind. */
  private list<T extends PrefixIndex | ThreadIndex>(kind: 'prefix' | 'thread'): T[] {
    let names: string[];
    try {
      names = fs.readdirSync(path.join(this.dir, kind));
    } catch {
      return [];
    }
    return names.filter((n) => n.endsWith('.json')).map((n) => this.readIndex<T>(path.join(this.dir, kind, n))).filter((x): x is T => x !== undefined);
  }

  /**
   * The cached prefix under `key` that shares the most leading tokens with a prompt whose hash
   * chain is `chain` (see hash-chain.ts); `matched` is a multiple of the checkpoint size. Among
   * entries that share as many checkpoints, the most recently created one.
   */
  findPrefix(key: string, chain: readonly string[]): { index: PrefixIndex; matched: number } | undefined {
    let best: { index: PrefixIndex; matched: number } | undefined;
    for (const index of this.list<PrefixIndex>('prefix')) {
      if (index.key !== key) continue;
      const k = commonCheckpoints(index.chain, chain);
      const matched = k * CHECKPOINT_TOKENS;
      // ties (entries that differ only after the last shared checkpoint, e.g. an edit near the
      // end): the most recent entry, which holds the latest content
      if (k > 0 && (!best || matched > best.matched || (matched === best.matched && index.createdAt > best.index.createdAt))) {
        best = { index, matched };
      }
    }
    return best;
  }

  /**
   * The snapshot of a prefix entry: from RAM when it is the most recent one, else from disk.
   * A corrupted or truncated file is removed (warning once) and gives undefined.
   */
  loadPrefix(index: PrefixIndex): SessionSnapshot | undefined {
    if (ramPrefix && ramPrefix.dir === this.dir && ramPrefix.id === index.id) return ramPrefix.snap;
    return this.readState(this.file('prefix', index.id, 'rsnp'));
  }

  private readState(file: string): SessionSnapshot | undefined {
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch {
      return undefined;
    }
    try {
      return decodeStateFile(bytes, path.relative(this.dir, file));
    } catch (e) {
      if (!(e instanceof StateFileError)) throw e;
      this.removeCorrupt(file, e.message);
      return undefined;
    }
  }

  /**
   * Saves an uncompressed prefix (RAM at once, disk in the background: await {@link flush} to
   * wait). Returns the entry id.
   */
  savePrefix(key: string, chain: string[], snap: SessionSnapshot): string {
    const id = createHash('sha256').update(key).update(chain.join('')).update(String(snap.tokens.length)).digest('hex').slice(0, 24);
    if (snap.payload.length <= this.limits.maxRamBytes) ramPrefix = { dir: this.dir, id, snap };
    if (!this.enabled) return id;
    this.background(async () => {
      const bytes = encodeStateFile(snap.header, snap.tokens, snap.payload);
      const now = Date.now();
      const index: PrefixIndex = { kind: 'prefix', id, key, tokens: snap.tokens.length, chain, bytes: bytes.length, createdAt: now, lastUsed: now, hits: 0 };
      await this.locked(() => {
        this.io.writeFileAtomic(this.file('prefix', id, 'rsnp'), bytes);
        this.io.writeFileAtomic(this.file('prefix', id, 'json'), Buffer.from(JSON.stringify(index)));
      });
      await this.evict(new Set([`prefix/${id}`]));
    });
    return id;
  }

  /** A thread's compressed state and transcript, or undefined. */
  loadThread(id: string): { index: ThreadIndex; snap: SessionSnapshot } | undefined {
    const index = this.readIndex<ThreadIndex>(this.file('thread', safeId(id), 'json'));
    if (!index) return undefined;
    const snap = this.readState(this.file('thread', safeId(id), 'rsnp'));
    if (!snap) return undefined;
    return { index, snap };
  }

  /** The transcript of a thread without its state (cheap), or undefined. */
  threadIndex(id: string): ThreadIndex | undefined {
    return this.readIndex<ThreadIndex>(this.file('thread', safeId(id), 'json'));
  }

  /** Saves a thread's compressed state and transcript in the background. */
  saveThread(index: Omit<ThreadIndex, 'kind' | 'bytes' | 'createdAt' | 'lastUsed' | 'hits'>, snap: SessionSnapshot): void {
    if (!this.enabled) return;
    const id = safeId(index.id);
    this.background(async () => {
      const bytes = encodeStateFile(snap.header, snap.tokens, snap.payload);
      const now = Date.now();
      const prev = this.threadIndex(id);
      const full: ThreadIndex = { ...index, id, kind: 'thread', bytes: bytes.length, createdAt: prev?.createdAt ?? now, lastUsed: now, hits: prev?.hits ?? 0 };
      await this.locked(() => {
        this.io.writeFileAtomic(this.file('thread', id, 'rsnp'), bytes);
        this.io.writeFileAtomic(this.file('thread', id, 'json'), Buffer.from(JSON.stringify(full)));
      });
      await this.evict(new Set([`thread/${id}`]));
    });
  }

  /** Marks an entry used (LRU order, hit count). */
  touch(kind: 'prefix' | 'thread', id: string): void {
    if (!this.enabled) return;
    this.background(() =>
      this.locked(() => {
        const file = this.file(kind, safeId(id), 'json');
        const index = this.readIndex<PrefixIndex | ThreadIndex>(file);
        if (!index) return;
        index.lastUsed = Date.now();
        index.hits++;
        this.io.writeFileAtomic(file, Buffer.from(JSON.stringify(index)));
      }),
    );
  }

  /** Adds one answered question to the counters. */
  recordQuestion(q: QuestionRecord, prefillTokS: number): void {
    if (!this.enabled) return;
    this.background(() =>
      this.bumpCounters((c) => {
        if (q.outcome === 'hit') c.fullHits++;
        else if (q.outcome === 'partial') c.partialHits++;
        else if (q.outcome === 'miss') c.misses++;
        else if (q.outcome === 'continue') c.continues++;
        c.tokensReused += q.reusedTokens;
        if (prefillTokS > 0) c.prefillMsSaved += (1000 * q.reusedTokens) / prefillTokS;
        c.recent = [q, ...c.recent].slice(0, RECENT_QUESTIONS);
      }),
    );
  }

  private counters(): StoreCounters {
    try {
      return { ...EMPTY_COUNTERS, ...(JSON.parse(fs.readFileSync(path.join(this.dir, 'stats.json'), 'utf8')) as StoreCounters) };
    } catch {
      return { ...EMPTY_COUNTERS, recent: [] };
    }
  }

  private bumpCounters(fn: (c: StoreCounters) => void): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return this.locked(() => {
      const c = this.counters();
      fn(c);
      this.io.writeFileAtomic(path.join(this.dir, 'stats.json'), Buffer.from(JSON.stringify(c)));
    }).catch((e) => this.onWriteError(e));
  }

  /** Entries, sizes and counters. */
  stats(): StoreStats {
    const entries = [...this.list<PrefixIndex>('prefix'), ...this.list<ThreadIndex>('thread')];
    return { dir: this.dir, enabled: this.enabled, entries, totalBytes: entries.reduce((n, e) => n + e.bytes, 0), counters: this.counters() };
  }

  /** Removes every entry and counter of this workspace. */
  async clear(): Promise<void> {
    await this.flush();
    if (ramPrefix?.dir === this.dir) ramPrefix = undefined;
    await this.locked(() => {
      for (const kind of ['prefix', 'thread']) {
        fs.rmSync(path.join(this.dir, kind), { recursive: true, force: true });
        fs.mkdirSync(path.join(this.dir, kind), { recursive: true });
      }
      fs.rmSync(path.join(this.dir, 'stats.json'), { force: true });
    });
  }

  /**
   * Least recently used entries go first until the workspace fits its cap and all workspaces
   * under the cache root fit theirs; `keep` (kind/id) is never evicted.
   */
  private async evict(keep: Set<string>): Promise<void> {
    await this.locked(() => {
      const mine = [...this.list<PrefixIndex>('prefix'), ...this.list<ThreadIndex>('thread')].sort((a, b) => a.lastUsed - b.lastUsed);
      let total = mine.reduce((n, e) => n + e.bytes, 0);
      for (const e of mine) {
        if (total <= this.limits.maxWorkspaceBytes) break;
        if (keep.has(`${e.kind}/${e.id}`)) continue;
        this.removeEntry(e.kind, e.id);
        total -= e.bytes;
      }
    });
    // the global cap: other workspaces' entries too (best effort, oldest first)
    const root = path.dirname(this.dir);
    const all: { dir: string; e: PrefixIndex | ThreadIndex }[] = [];
    for (const ws of safeReaddir(root)) {
      const dir = path.join(root, ws);
      for (const kind of ['prefix', 'thread'] as const) {
        for (const n of safeReaddir(path.join(dir, kind)).filter((f) => f.endsWith('.json'))) {
          try {
            all.push({ dir, e: JSON.parse(fs.readFileSync(path.join(dir, kind, n), 'utf8')) });
          } catch {
            // another process is rewriting it, or it is corrupt: its own store handles it
          }
        }
      }
    }
    let total = all.reduce((n, x) => n + (x.e.bytes ?? 0), 0);
    for (const { dir, e } of all.sort((a, b) => a.e.lastUsed - b.e.lastUsed)) {
      if (total <= this.limits.maxTotalBytes) break;
      if (dir === this.dir && keep.has(`${e.kind}/${e.id}`)) continue;
      for (const ext of ['json', 'rsnp']) fs.rmSync(path.join(dir, e.kind, `${e.id}.${ext}`), { force: true });
      total -= e.bytes;
    }
  }

  private removeEntry(kind: 'prefix' | 'thread', id: string): void {
    fs.rmSync(this.file(kind, id, 'json'), { force: true });
    fs.rmSync(this.file(kind, id, 'rsnp'), { force: true });
    if (ramPrefix?.dir === this.dir && ramPrefix.id === id) ramPrefix = undefined;
    const c = this.counters();
    c.evicted++;
    try {
      this.io.writeFileAtomic(path.join(this.dir, 'stats.json'), Buffer.from(JSON.stringify(c)));
    } catch (e) {
      this.onWriteError(e);
    }
  }

  private onWriteError(e: unknown): void {
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    this.disable(`the cache could not be written (${code}): caching is off for now; answers are not affected`);
  }

  private background(fn: () => Promise<unknown>): void {
    const p = fn().catch((e) => this.onWriteError(e));
    this.pending.push(p);
    void p.finally(() => {
      this.pending = this.pending.filter((x) => x !== p);
    });
  }

  /** Waits for the background writes started so far. */
  async flush(): Promise<void> {
    while (this.pending.length > 0) await Promise.allSettled([...this.pending]);
  }
}

function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** Thread ids come from users and webviews: keep them to safe file names. */
function safeId(id: string): string {
  return /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : createHash('sha256').update(id).digest('hex').slice(0, 32);
}
