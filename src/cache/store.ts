/**
 * Per-workspace cache store (docs/cache.md): the uncompressed repository prefix, so that the
 * next question restores it and prefills only what changed, and each thread's compressed cache
 * with its transcript, for fast follow-ups.
 *
 * Layout of a workspace folder:
 *   prefix/<id>.rsnp   state file of an uncompressed prefix (src/engine/state-file.ts)
 *   prefix/<id>.json   its index: cache key, token count, hash chain, bytes, use times, hits
 *   prefix/<id>.lock   held while a question prefills the entry (lockPrefix): another waits for it
 *   thread/<id>.rsnp   a thread's compressed state
 *   thread/<id>.json   its index and transcript (questions, answers, answer tokens, snap params)
 *   stats.json         counters and the last questions' timings
 * Every file is written atomically (temporary file, fsync, rename) and state files carry a
 * checksum, so a reader never sees a torn entry. Mutations of indexes, counters and eviction run
 * under a lock on the folder (lock.ts: `<folder>.lock`, taken over at once when its holder died),
 * so two processes (two windows, the CLI beside the extension) neither tear nor lose entries;
 * temporary files of a writer that died are swept under that lock. A thread's question holds the
 * thread's own lock (thread/<id>.lock) from reading its transcript to saving it, so two questions
 * in one thread at once keep both turns.
 *
 * Everything read from disk is checked before use: a state file's checksum, each index's shape
 * (schema.ts) and its id, which must be its file name (ids never come from file contents), and
 * stats.json's shape. A truncated, corrupted, misshapen or foreign entry is reported once, removed
 * and rebuilt. A full disk, any write error, or a damaged entry that cannot be removed turns
 * caching off with one warning; it never fails an answer.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { SessionSnapshot } from '../engine/session';
import { unsafeCacheFolder } from './ownership';
import { decodeStateFile, encodeStateFile, FINGERPRINT_MEMO, makeFolder, StateFileError, writeFileAtomic } from '../engine/state-file';
import { commonCheckpoints, CHECKPOINT_TOKENS } from './hash-chain';
import { acquireLock, pidAlive, type Lock } from './lock';
import { checkShape, ENTRY_ID, PrefixIndexSchema, StoreCountersSchema, ThreadIndexSchema } from './schema';

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

/** A retrieval section in a thread's cache ({@link ThreadIndex.retrieval}) [tokens]. */
export interface ThreadRetrieval {
  tokens: number;
  files: { path: string; tokens: number; offset?: number }[];
}

/** Index of a thread entry (thread/<id>.json). */
export interface ThreadIndex {
  kind: 'thread';
  id: string;
  key: string;
  turns: ThreadTurn[];
  /** Tokens of the repository prefix the thread started from. */
  prefixTokens: number;
  snap: { window: number; budget: number; kernel: number; pooling: string; allocation?: string; scorer?: string } | null;
  /**
   * The retrieval section the thread's cache holds right after the repository prefix (the one of
   * the question that last snapped the thread, ranked packing): its tokens and each retrieved
   * chunk's file, block tokens and offset from the section's start [tokens]. A follow-up that
   * continues the cache reports these files (pipeline/context-report.ts). Absent when the cache
   * holds none, and in threads saved before it was recorded.
   */
  retrieval?: ThreadRetrieval;
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
  /** The cache key the question ran under (cacheKey in identity.ts); absent in older records. */
  key?: string;
  L: number;
  B: number;
  reusedTokens: number;
  prefilledTokens: number;
  prefillMs: number;
  snapMs: number;
  ttftMs: number;
  decodeTokS: number;
}

/** The last cold prefill measured under one cache key. */
export interface ColdPrefill {
  /** The question's prefill time divided by the tokens it prefilled [ms/token]. */
  msPerToken: number;
  /** Tokens prefilled (the whole prompt). */
  tokens: number;
  /** When [ms since the epoch]. */
  at: number;
}

/** Counters of a workspace store (stats.json). */
export interface StoreCounters {
  fullHits: number;
  partialHits: number;
  misses: number;
  continues: number;
  tokensReused: number;
  /**
   * Prefill time saved by the cache [ms]: the sum over questions that reused R > 0 tokens of
   * R × t_cold, where t_cold [ms/token] is the mean prefill time per token of the most recent cold
   * question (a miss: the whole prompt prefilled from position 0) under the same cache key
   * ({@link coldPrefill}). So it is what prefilling the reused tokens would have cost at the
   * speed measured for that model and cache settings on a whole repository prompt, not at the
   * speed of the question's own short suffix prefill (which pays a batch's fixed cost for a few
   * tokens and ran up to 20× slower per token). Because attention makes a token's prefill cost
   * grow with its position, R × t_cold is an estimate: a little high when R is shorter than the
   * cold prompt, a little low when longer. A question that reused tokens with no cold prefill
   * measured under its key adds nothing here and counts in {@link unmeasuredReuses}.
   */
  prefillSavedMs: number;
  /** Questions that reused tokens under a key with no cold prefill measured (not in {@link prefillSavedMs}). */
  unmeasuredReuses: number;
  /** The last cold prefill per cache key (the 16 most recent keys). */
  coldPrefill: Record<string, ColdPrefill>;
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

const emptyCounters = (): StoreCounters => ({
  fullHits: 0,
  partialHits: 0,
  misses: 0,
  continues: 0,
  tokensReused: 0,
  prefillSavedMs: 0,
  unmeasuredReuses: 0,
  coldPrefill: {},
  corruptRemoved: 0,
  evicted: 0,
  recent: [],
});
const RECENT_QUESTIONS = 50;
const COLD_KEYS = 16;
/** A temporary file older than this is a dead writer's whatever its pid says [ms]. */
const TEMP_MAX_AGE_MS = 10 * 60_000;
/** How long a question waits for another question in the same thread [ms]. */
const THREAD_LOCK_TIMEOUT_MS = 10 * 60_000;
/** How long a question waits for another process prefilling the same prefix entry [ms]. */
const PREFIX_LOCK_TIMEOUT_MS = 30 * 60_000;
/**
 * A prefix lock whose holder's pid runs but whose heartbeat (every 10 s) is older than this is
 * taken over [ms] (lock.ts `liveStaleMs`, default 10 min): the pid was reused by another process
 * after the holder died without its exit handlers (a tester's SIGTERM left locks; a waiter then
 * waited 10 minutes). A prefilling holder keeps its heartbeat: its decode calls are asynchronous,
 * and nothing in a question blocks the event loop for anything near a minute.
 */
const PREFIX_LOCK_LIVE_STALE_MS = 60_000;
/** How long a store operation waits for the folder's lock [ms]. */
const FOLDER_LOCK_TIMEOUT_MS = 10_000;
/** writeFileAtomic's temporary files: `.<name>.<pid>.<ms>.tmp` (state-file.ts). */
const TEMP_FILE = /^\..+\.(\d+)\.\d+\.tmp$/;

/** File operations the store writes and deletes with; tests inject failures through them. */
export interface StoreFs {
  writeFileAtomic(file: string, data: Uint8Array): void;
  /** Removes a file (or a folder with what it holds); a missing one is no error. */
  rm(file: string): void;
}

/** A file that is not there: ENOENT, or ENOTDIR when a file stands where its folder belongs. */
const missing = (e: unknown) => ['ENOENT', 'ENOTDIR'].includes((e as NodeJS.ErrnoException).code ?? '');
const errCode = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e instanceof Error ? e.message : String(e));

const REAL_FS: StoreFs = {
  writeFileAtomic,
  // a folder (found where an entry's file belongs) goes with what it holds; a file is unlinked,
  // so that a failure reports the file's own error (EPERM, EACCES), not one from a folder walk
  rm: (file) => {
    if (isFolder(file, false)) return fs.rmSync(file, { force: true, recursive: true });
    try {
      fs.unlinkSync(file);
    } catch (e) {
      if (!missing(e)) throw e;
    }
  },
};

/** Options of {@link CacheStore.open}. */
export interface StoreOptions {
  limits?: Partial<StoreLimits>;
  /** Receives each warning once (corrupt entry removed, caching turned off, …). */
  onWarning?: (message: string) => void;
  /** Replaces some of the file operations (the rest stay the real ones). */
  fs?: Partial<StoreFs>;
  /** Create the folder when it does not exist (default true; `reposnap stats` creates nothing). */
  create?: boolean;
}

/** A cache operation that was asked for explicitly (`cache clear`) failed; the message is one line. */
export class CacheError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CacheError';
  }
}

/** The lock a question holds on its thread; see {@link CacheStore.lockThread}. */
export interface ThreadLock {
  /** Waits for the thread's save started under the lock, then releases it. */
  release(): Promise<void>;
}

/** The lock a question holds on the prefix entry it prefills; see {@link CacheStore.lockPrefix}. */
export interface PrefixLock {
  /** The entry id the prefix will be saved under ({@link prefixEntryId}). */
  readonly id: string;
  /**
   * Releases the lock once the entry's save started under it ({@link CacheStore.savePrefix}) is
   * on disk, in the background ({@link CacheStore.flush} waits for it); idempotent, never throws.
   */
  release(): Promise<void>;
}

/**
 * The id a prefix entry is saved under: the first 24 hex digits of
 * sha256(key ‖ chain ‖ token count). Two questions that prefill the same prefix under the same
 * key (model, engine and cache settings) save the same entry, so they share its lock.
 */
export function prefixEntryId(key: string, chain: readonly string[], tokens: number): string {
  return createHash('sha256').update(key).update(chain.join('')).update(String(tokens)).digest('hex').slice(0, 24);
}

type Kind = 'prefix' | 'thread';
type IndexOf<K extends Kind> = K extends 'prefix' ? PrefixIndex : ThreadIndex;
const INDEX_SCHEMA = { prefix: PrefixIndexSchema, thread: ThreadIndexSchema };

/** The most recent prefix snapshot of this process, by entry id (memory before disk). */
let ramPrefix: { dir: string; id: string; snap: SessionSnapshot } | undefined;


/** A workspace's cache. Methods never throw for cache trouble: they warn and degrade (except {@link clear}). */
export class CacheStore {
  private enabled = true;
  /** Set when the folders are unsafe (refuseUnsafeFolders): nothing is read from them either. */
  private refused = false;
  private readonly warned = new Set<string>();
  private readonly limits: StoreLimits;
  private readonly io: StoreFs;
  private pending: Promise<unknown>[] = [];
  /** Entries found damaged whose removal failed: skipped from then on (kind/stem). */
  private readonly unremovable = new Set<string>();
  /** The background save of each thread (awaited before its lock is released). */
  private readonly threadSaves = new Map<string, Promise<unknown>>();
  /** The background save of each prefix entry (awaited before its lock is released). */
  private readonly prefixSaves = new Map<string, Promise<unknown>>();

  private constructor(
    readonly dir: string,
    private readonly options: StoreOptions,
  ) {
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.io = { ...REAL_FS, ...options.fs };
  }

  /**
   * Opens the store in `dir`, creating it unless `create: false`. A folder that cannot be created
   * gives a disabled store, with a warning; with `create: false`, a file in the folder's place
   * gives a disabled store silently.
   */
  static open(dir: string, options: StoreOptions = {}): CacheStore {
    const store = new CacheStore(dir, options);
    if (options.create === false) {
      // a file in the folder's place: nothing to read, nothing may be written (clear() says why)
      if (fs.existsSync(dir) && !isFolder(dir)) store.enabled = false;
      else store.refuseUnsafeFolders();
      return store;
    }
    try {
      // makeFolder, not mkdirSync's recursive form, which loops for ever where mkdir says ENOENT under an existing folder (/proc)
      makeFolder(path.join(dir, 'prefix'));
      makeFolder(path.join(dir, 'thread'));
    } catch (e) {
      store.disable(`cannot create the cache folder ${dir} (${errCode(e)}): caching is off`);
      return store;
    }
    store.refuseUnsafeFolders();
    return store;
  }

  /**
   * The model fingerprint memo of this store's cache root, `<root>/model-fingerprints.json` (the
   * root holds every repository's folder: `path.dirname(dir)`, as the global size cap counts it):
   * where a session whose states go to this store remembers its model's SHA-256
   * (`SessionOptions.fingerprintMemo`), so that `--cache-dir` moves it along with the entries;
   * null when the store refused its folders (unsafe, ownership.ts).
   */
  get fingerprintMemo(): string | null {
    // a refused root (refuseUnsafeFolders) holds no memo either: null, none read or written
    return this.refused ? null : path.join(path.dirname(this.dir), FINGERPRINT_MEMO);
  }

  /** False after a write error (or a damaged entry that could not be removed): nothing more is written in this process. */
  get isEnabled(): boolean {
    return this.enabled;
  }

  /**
   * Turns the store off, with one warning, when the cache root or this repository's folders are
   * another user's or writable by others (ownership.ts; issue 29, item 4): nothing is read from or
   * written to them, and the answer still comes, uncached.
   */
  private refuseUnsafeFolders(): void {
    const why = unsafeCacheFolder(path.dirname(this.dir), [this.dir, path.join(this.dir, 'prefix'), path.join(this.dir, 'thread')]);
    if (why === undefined) return;
    this.refused = true;
    this.disable(`refusing the cache folder: ${why}, so another local user could plant files in it; answering without the cache (make it yours and private, chmod 700, or choose another folder: --cache-dir, REPOSNAP_CACHE_DIR)`);
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

  /**
   * The path of an entry's file. `id` must be a valid id of its kind (every caller passes an id
   * checked against its file name, or a hashed thread id).
   * @throws CacheError for any other id (a bug: no id from a file's contents reaches here).
   */
  private file(kind: Kind, id: string, ext: 'rsnp' | 'json' | 'lock'): string {
    if (!ENTRY_ID[kind].test(id)) throw new CacheError(`refusing the cache entry name ${JSON.stringify(id.slice(0, 80))}`);
    return path.join(this.dir, kind, `${id}.${ext}`);
  }

  /** Runs fn under the folder's lock (waits for a live holder up to 10 s; a dead holder's lock is taken over at once), after sweeping dead writers' temporary files. */
  private async locked<T>(fn: () => T | Promise<T>): Promise<T> {
    const lock = await acquireLock(`${this.dir}.lock`, { timeoutMs: FOLDER_LOCK_TIMEOUT_MS });
    try {
      this.sweepTemporaries();
      return await fn();
    } finally {
      lock.release();
    }
  }

  /**
   * Removes writeFileAtomic's temporary files whose writer is gone: its pid (in the name) no
   * longer runs, or the file is older than 10 minutes. Runs under the folder's lock, which every
   * writer of this folder holds while it writes.
   */
  private sweepTemporaries(): void {
    for (const d of [this.dir, path.join(this.dir, 'prefix'), path.join(this.dir, 'thread')]) {
      if (!isFolder(d, false)) continue; // never through a link (issue 29, item 5)
      for (const name of safeReaddir(d)) {
        const m = TEMP_FILE.exec(name);
        if (!m) continue;
        const file = path.join(d, name);
        try {
          const pid = Number(m[1]);
          if ((pid !== process.pid && !pidAlive(pid)) || Date.now() - fs.lstatSync(file).mtimeMs > TEMP_MAX_AGE_MS) this.io.rm(file);
        } catch {
          // gone already, or not ours to remove: the next sweep tries again
        }
      }
    }
  }

  /**
   * The index `<kind>/<stem>.json`, checked: valid JSON of the index's shape whose id is `stem`
   * (the file name). A damaged one is removed (warning once) and gives undefined, as does a
   * missing one.
   */
  private readIndex<K extends Kind>(kind: K, stem: string): IndexOf<K> | undefined {
    if (this.refused) return undefined;
    if (this.unremovable.has(`${kind}/${stem}`)) return undefined;
    let text: string;
    try {
      text = fs.readFileSync(path.join(this.dir, kind, `${stem}.json`), 'utf8');
    } catch (e) {
      if (missing(e)) return undefined; // vanished (evicted by another process), or no folder: not an error
      this.removeCorrupt(kind, stem, `its index cannot be read (${errCode(e)})`);
      return undefined;
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      this.removeCorrupt(kind, stem, 'its index is not valid JSON');
      return undefined;
    }
    const shape = checkShape<PrefixIndex | ThreadIndex>(INDEX_SCHEMA[kind], json);
    if (!shape.ok) {
      this.removeCorrupt(kind, stem, `its index has the wrong shape: ${shape.why}`);
      return undefined;
    }
    if (shape.value.id !== stem) {
      this.removeCorrupt(kind, stem, `its index names another entry, ${JSON.stringify(shape.value.id.slice(0, 40))}`);
      return undefined;
    }
    return shape.value as IndexOf<K>;
  }

  /**
   * Removes the damaged entry `<kind>/<stem>` (index and state; `stem` is a file name read from
   * the folder) and warns once. When it cannot be removed, caching is turned off with one warning.
   */
  private removeCorrupt(kind: Kind, stem: string, why: string): void {
    const name = `${kind}/${stem}`;
    try {
      for (const ext of ['json', 'rsnp']) this.io.rm(path.join(this.dir, kind, `${stem}.${ext}`));
    } catch (e) {
      this.unremovable.add(name);
      this.disable(`the corrupted cache entry ${name} (${why}) cannot be removed (${errCode(e)}): caching is off for now; answers are not affected`);
      return;
    }
    if (ramPrefix?.dir === this.dir && ramPrefix.id === stem) ramPrefix = undefined;
    this.warn(`removed a corrupted cache entry ${name} (${why}); it will be rebuilt`);
    this.background(() =>
      this.bumpCounters((c) => {
        c.corruptRemoved++;
      }),
    );
  }

  /** Checked indexes of one kind. */
  private list<K extends Kind>(kind: K): IndexOf<K>[] {
    const out: IndexOf<K>[] = [];
    for (const name of safeReaddir(path.join(this.dir, kind))) {
      if (!name.endsWith('.json')) continue;
      const index = this.readIndex(kind, name.slice(0, -'.json'.length));
      if (index) out.push(index);
    }
    return out;
  }

  /**
   * The cached prefix under `key` that shares the most leading tokens with a prompt whose hash
   * chain is `chain` (see hash-chain.ts); `matched` is a multiple of the checkpoint size. Among
   * entries that share as many checkpoints, the most recently created one.
   */
  findPrefix(key: string, chain: readonly string[]): { index: PrefixIndex; matched: number } | undefined {
    let best: { index: PrefixIndex; matched: number } | undefined;
    for (const index of this.list('prefix')) {
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
    return this.readState('prefix', index.id);
  }

  private readState(kind: Kind, id: string): SessionSnapshot | undefined {
    if (this.refused) return undefined;
    const file = this.file(kind, id, 'rsnp');
    let bytes: Buffer;
    try {
      bytes = fs.readFileSync(file);
    } catch (e) {
      if (!missing(e)) this.removeCorrupt(kind, id, `its state cannot be read (${errCode(e)})`);
      return undefined;
    }
    try {
      return decodeStateFile(bytes, path.relative(this.dir, file));
    } catch (e) {
      if (!(e instanceof StateFileError)) throw e;
      this.removeCorrupt(kind, id, e.message);
      return undefined;
    }
  }

  /**
   * Saves an uncompressed prefix (RAM at once, disk in the background: await {@link flush} to
   * wait). Returns the entry id.
   */
  savePrefix(key: string, chain: string[], snap: SessionSnapshot): string {
    const id = prefixEntryId(key, chain, snap.tokens.length);
    if (snap.payload.length <= this.limits.maxRamBytes) ramPrefix = { dir: this.dir, id, snap };
    if (!this.enabled) return id;
    const saved = this.background(async () => {
      const bytes = encodeStateFile(snap.header, snap.tokens, snap.payload);
      const now = Date.now();
      const index: PrefixIndex = { kind: 'prefix', id, key, tokens: snap.tokens.length, chain, bytes: bytes.length, createdAt: now, lastUsed: now, hits: 0 };
      await this.locked(() => {
        this.ensureFolders();
        this.io.writeFileAtomic(this.file('prefix', id, 'rsnp'), bytes);
        this.io.writeFileAtomic(this.file('prefix', id, 'json'), Buffer.from(JSON.stringify(index)));
      });
      await this.evict(new Set([`prefix/${id}`]));
    });
    this.prefixSaves.set(id, saved);
    void saved.finally(() => {
      if (this.prefixSaves.get(id) === saved) this.prefixSaves.delete(id);
    });
    return id;
  }

  /**
   * Takes the lock of the prefix entry that a prompt's repository prefix (`key`, hash `chain`,
   * `tokens` long) is saved under (prefix/<id>.lock, {@link prefixEntryId}), across processes: a
   * question holds it from before it looks the prefix up until the prefix it prefilled is saved,
   * so a second process (two CLI runs, the extension beside a terminal) asking about the same
   * repository at once waits (`onWait` is called once, with the holder) and then restores the
   * saved entry instead of prefilling it again. A holder that died (kill -9) is taken over at
   * once (its pid no longer runs on this host); one on another host (a cache on a network file
   * system) only when its heartbeat stops (lock.ts). Waits up to 30 minutes for a live holder,
   * then goes on without the lock (warning once); so does a lock that cannot be created.
   * @returns undefined when the entry is already saved (nothing to wait for), the store is off,
   *   or the lock could not be taken.
   * @throws AbortError (src/engine/errors.ts) when the signal aborts while waiting; the holder's
   *   lock is left as it is.
   */
  async lockPrefix(
    key: string,
    chain: readonly string[],
    tokens: number,
    options: { signal?: AbortSignal; onWait?: (holder: { pid: number; host: string } | undefined) => void } = {},
  ): Promise<PrefixLock | undefined> {
    if (!this.enabled) return undefined;
    const id = prefixEntryId(key, chain, tokens);
    if (this.readIndex('prefix', id)) return undefined;
    let lock: Lock;
    try {
      makeFolder(path.join(this.dir, 'prefix')); // gone when another process's removeIfEmpty took the empty folder
      lock = await acquireLock(this.file('prefix', id, 'lock'), { timeoutMs: PREFIX_LOCK_TIMEOUT_MS, liveStaleMs: PREFIX_LOCK_LIVE_STALE_MS, signal: options.signal, onWait: options.onWait });
    } catch (e) {
      if (options.signal?.aborted) throw e;
      this.warn(`the repository prefix could not be locked (${errCode(e)}): another process asking at the same time may prefill it too`);
      return undefined;
    }
    let released: Promise<void> | undefined;
    return {
      id,
      release: () =>
        (released ??= this.background(async () => {
          await this.prefixSaves.get(id);
          lock.release();
        }).then(() => undefined)),
    };
  }

  /**
   * A thread's compressed state and transcript, or undefined. With `expect`, the state is
   * cross-checked against its index and the current repository prefix before use: the index's
   * cache key is `expect.key`, its repository prefix is as long as `expect.prefix`, and the
   * state's tokens start with `expect.prefix`'s tokens (exact, O(prefix) integer compares). A
   * thread that fails (copied from another repository's or model's cache, or made before the
   * repository changed) is reported once and gives undefined: the caller re-snaps from the
   * repository, and the thread's next save replaces the entry.
   */
  loadThread(id: string, expect?: { key: string; prefix: ArrayLike<number> }): { index: ThreadIndex; snap: SessionSnapshot } | undefined {
    const sid = safeId(id);
    const index = this.readIndex('thread', sid);
    if (!index) return undefined;
    const snap = this.readState('thread', sid);
    if (!snap) return undefined;
    const why = expect && threadMismatch(index, snap, expect);
    if (why) {
      this.warn(`the compressed cache of thread ${id} does not belong to this repository's current prefix (${why}): re-snapping from the repository`);
      return undefined;
    }
    return { index, snap };
  }

  /** The transcript of a thread without its state (cheap), or undefined. */
  threadIndex(id: string): ThreadIndex | undefined {
    return this.readIndex('thread', safeId(id));
  }

  /**
   * Takes the thread's lock, across processes: a question holds it from reading the thread's
   * transcript to saving it, so two questions in one thread at once keep both turns (the second
   * waits, `onWait` is called once, and it reads the first one's turn). A holder that died is
   * taken over at once. Waits up to 10 minutes for a live holder, then goes on without the lock
   * (warning once); a store that is off, or a lock that cannot be created, goes on without it.
   * @throws AbortError (src/engine/errors.ts) when the signal aborts while waiting.
   */
  async lockThread(id: string, options: { signal?: AbortSignal; onWait?: () => void } = {}): Promise<ThreadLock> {
    const unlocked: ThreadLock = { release: async () => {} };
    if (!this.enabled) return unlocked;
    const sid = safeId(id);
    let lock: Lock;
    try {
      makeFolder(path.join(this.dir, 'thread')); // gone when another process's removeIfEmpty took the empty folder
      lock = await acquireLock(this.file('thread', sid, 'lock'), { timeoutMs: THREAD_LOCK_TIMEOUT_MS, signal: options.signal, onWait: () => options.onWait?.() });
    } catch (e) {
      if (options.signal?.aborted) throw e;
      this.warn(`thread ${id} could not be locked (${errCode(e)}): a question asked in it at the same time may replace this turn`);
      return unlocked;
    }
    return {
      release: async () => {
        await this.threadSaves.get(sid);
        lock.release();
      },
    };
  }

  /** Saves a thread's compressed state and transcript in the background. */
  saveThread(index: Omit<ThreadIndex, 'kind' | 'bytes' | 'createdAt' | 'lastUsed' | 'hits'>, snap: SessionSnapshot): void {
    if (!this.enabled) return;
    const id = safeId(index.id);
    const saved = this.background(async () => {
      const bytes = encodeStateFile(snap.header, snap.tokens, snap.payload);
      const now = Date.now();
      const prev = this.threadIndex(id);
      const full: ThreadIndex = { ...index, id, kind: 'thread', bytes: bytes.length, createdAt: prev?.createdAt ?? now, lastUsed: now, hits: prev?.hits ?? 0 };
      await this.locked(() => {
        this.ensureFolders();
        this.io.writeFileAtomic(this.file('thread', id, 'rsnp'), bytes);
        this.io.writeFileAtomic(this.file('thread', id, 'json'), Buffer.from(JSON.stringify(full)));
      });
      await this.evict(new Set([`thread/${id}`]));
    });
    this.threadSaves.set(id, saved);
    void saved.finally(() => {
      if (this.threadSaves.get(id) === saved) this.threadSaves.delete(id);
    });
  }

  /** Marks an entry used (LRU order, hit count). */
  touch(kind: Kind, id: string): void {
    if (!this.enabled) return;
    const sid = kind === 'thread' ? safeId(id) : id;
    this.background(() =>
      this.locked(() => {
        const index = this.readIndex(kind, sid);
        if (!index) return;
        index.lastUsed = Date.now();
        index.hits++;
        this.io.writeFileAtomic(this.file(kind, sid, 'json'), Buffer.from(JSON.stringify(index)));
      }),
    );
  }

  /**
   * Adds one answered question to the counters. A miss (the whole prompt prefilled cold) under
   * `q.key` becomes that key's cold prefill measurement; a question that reused tokens adds
   * reused × the key's cold time per token to {@link StoreCounters.prefillSavedMs}.
   */
  recordQuestion(q: QuestionRecord): void {
    if (!this.enabled) return;
    this.background(() =>
      this.bumpCounters((c) => {
        if (q.outcome === 'hit') c.fullHits++;
        else if (q.outcome === 'partial') c.partialHits++;
        else if (q.outcome === 'miss') c.misses++;
        else if (q.outcome === 'continue') c.continues++;
        c.tokensReused += q.reusedTokens;
        if (q.key !== undefined && q.outcome === 'miss' && q.reusedTokens === 0 && q.prefilledTokens > 0 && q.prefillMs > 0) {
          c.coldPrefill[q.key] = { msPerToken: q.prefillMs / q.prefilledTokens, tokens: q.prefilledTokens, at: q.at };
          const keys = Object.entries(c.coldPrefill).sort((a, b) => b[1].at - a[1].at);
          c.coldPrefill = Object.fromEntries(keys.slice(0, COLD_KEYS));
        }
        if (q.reusedTokens > 0) {
          const cold = q.key === undefined ? undefined : c.coldPrefill[q.key];
          if (cold) c.prefillSavedMs += q.reusedTokens * cold.msPerToken;
          else c.unmeasuredReuses++;
        }
        c.recent = [q, ...c.recent].slice(0, RECENT_QUESTIONS);
      }),
    );
  }

  /**
   * stats.json, checked. A damaged one is reported once and removed, and reads as fresh counters
   * (with the removal counted); the next write rebuilds it.
   */
  private counters(): StoreCounters {
    const file = path.join(this.dir, 'stats.json');
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      return emptyCounters();
    }
    let why: string;
    try {
      const shape = checkShape(StoreCountersSchema, JSON.parse(text));
      if (shape.ok) return shape.value;
      why = `the wrong shape: ${shape.why}`;
    } catch {
      why = 'not valid JSON';
    }
    this.warn(`removed the damaged cache counters stats.json (${why}); they start again from zero`);
    try {
      this.io.rm(file);
    } catch {
      // the next write replaces it (or fails and turns caching off)
    }
    return { ...emptyCounters(), corruptRemoved: 1 };
  }

  private bumpCounters(fn: (c: StoreCounters) => void): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    return this.locked(() => {
      this.ensureFolders();
      const c = this.counters();
      fn(c);
      this.io.writeFileAtomic(path.join(this.dir, 'stats.json'), Buffer.from(JSON.stringify(c)));
    }).catch((e) => this.onWriteError(e));
  }

  /** Entries, sizes and counters. */
  stats(): StoreStats {
    const entries = [...this.list('prefix'), ...this.list('thread')];
    return { dir: this.dir, enabled: this.enabled, entries, totalBytes: entries.reduce((n, e) => n + e.bytes, 0), counters: this.counters() };
  }

  /**
   * Removes every entry and counter of this workspace (a store whose folder does not exist has
   * nothing to remove).
   * @throws CacheError (one line: the folder, what could not be removed, the error code) when
   *   the folder is a file, its lock cannot be taken, or a file cannot be removed.
   */
  async clear(): Promise<void> {
    await this.flush();
    if (ramPrefix?.dir === this.dir) ramPrefix = undefined;
    if (!fs.existsSync(this.dir)) return;
    if (!isFolder(this.dir, false)) throw new CacheError(`cannot clear the cache ${this.dir}: it is not a folder${isFolder(this.dir) ? ' (a link to one: never entered)' : ''}`);
    let current = this.dir;
    try {
      await this.locked(() => {
        for (const kind of ['prefix', 'thread'] as const) {
          // a link in the folder's place is never entered (issue 29, item 5): only the link goes
          const folder = path.join(this.dir, kind);
          if (!isFolder(folder, false)) {
            if (fs.existsSync(folder) || isLink(folder)) this.io.rm((current = folder));
            continue;
          }
          for (const name of safeReaddir(folder)) {
            // only the files the store names: entries, and writers' temporary files
            if (!isStoreFile(kind, name)) continue;
            current = path.join(folder, name);
            this.io.rm(current);
          }
        }
        current = path.join(this.dir, 'stats.json');
        this.io.rm(current);
      });
    } catch (e) {
      const what = current === this.dir ? 'its lock cannot be taken' : `${path.relative(this.dir, current)} cannot be removed`;
      throw new CacheError(`cannot clear the cache ${this.dir}: ${what} (${errCode(e)})`);
    }
  }

  /**
   * Least recently used entries go first until the workspace fits its cap and all workspaces
   * under the cache root fit theirs; `keep` (kind/id) is never evicted.
   */
  private async evict(keep: Set<string>): Promise<void> {
    await this.locked(() => {
      const mine = [...this.list('prefix'), ...this.list('thread')].sort((a, b) => a.lastUsed - b.lastUsed);
      let total = mine.reduce((n, e) => n + e.bytes, 0);
      for (const e of mine) {
        if (total <= this.limits.maxWorkspaceBytes) break;
        if (keep.has(`${e.kind}/${e.id}`)) continue;
        this.removeEntry(e.kind, e.id);
        total -= e.bytes;
      }
    });
    // the global cap: other workspaces' entries too (best effort, oldest first). Only indexes of
    // the right shape count, and files are named from the folder listing, never from an index.
    const root = path.dirname(this.dir);
    const all: { dir: string; kind: Kind; stem: string; bytes: number; lastUsed: number }[] = [];
    for (const ws of safeReaddir(root)) {
      const dir = path.join(root, ws);
      if (!isFolder(dir, false)) continue; // a link is never entered (issue 29, item 5)
      for (const kind of ['prefix', 'thread'] as const) {
        if (!isFolder(path.join(dir, kind), false)) continue;
        for (const n of safeReaddir(path.join(dir, kind))) {
          if (!n.endsWith('.json')) continue;
          const stem = n.slice(0, -'.json'.length);
          try {
            const shape = checkShape<PrefixIndex | ThreadIndex>(INDEX_SCHEMA[kind], JSON.parse(fs.readFileSync(path.join(dir, kind, n), 'utf8')));
            if (shape.ok && shape.value.id === stem) all.push({ dir, kind, stem, bytes: shape.value.bytes, lastUsed: shape.value.lastUsed });
          } catch {
            // another process is rewriting it, or it is damaged: its own store handles it
          }
        }
      }
    }
    let total = all.reduce((n, x) => n + x.bytes, 0);
    for (const x of all.sort((a, b) => a.lastUsed - b.lastUsed)) {
      if (total <= this.limits.maxTotalBytes) break;
      if (x.dir === this.dir && keep.has(`${x.kind}/${x.stem}`)) continue;
      try {
        for (const ext of ['json', 'rsnp']) this.io.rm(path.join(x.dir, x.kind, `${x.stem}.${ext}`));
      } catch {
        continue; // not ours to remove (another user's cache): it still counts
      }
      total -= x.bytes;
    }
  }

  private removeEntry(kind: Kind, id: string): void {
    this.io.rm(this.file(kind, id, 'json'));
    this.io.rm(this.file(kind, id, 'rsnp'));
    if (ramPrefix?.dir === this.dir && ramPrefix.id === id) ramPrefix = undefined;
    const c = this.counters();
    c.evicted++;
    this.io.writeFileAtomic(path.join(this.dir, 'stats.json'), Buffer.from(JSON.stringify(c)));
  }

  private onWriteError(e: unknown): void {
    this.disable(`the cache could not be written (${errCode(e)}): caching is off for now; answers are not affected`);
  }

  private background(fn: () => Promise<unknown>): Promise<unknown> {
    const p = fn().catch((e) => this.onWriteError(e));
    this.pending.push(p);
    void p.finally(() => {
      this.pending = this.pending.filter((x) => x !== p);
    });
    return p;
  }

  /** Waits for the background writes started so far. */
  async flush(): Promise<void> {
    while (this.pending.length > 0) await Promise.allSettled([...this.pending]);
  }

  /**
   * Creates the folder and its `prefix/` and `thread/` again when they are gone (another process's
   * {@link removeIfEmpty} took them since {@link open}). Called under the folder's lock before a
   * write, as `removeIfEmpty` removes them under it.
   */
  private ensureFolders(): void {
    makeFolder(path.join(this.dir, 'prefix'));
    makeFolder(path.join(this.dir, 'thread'));
  }

  /**
   * Removes the store's folder when it holds nothing: no entry, no counters, no file at all
   * besides its empty `prefix/` and `thread/` (what {@link open} creates before anything is
   * saved), after waiting for the background writes and sweeping dead writers' temporary files.
   * So a question that failed or was cancelled before the cache saved anything (a model that does
   * not load, a Ctrl+C during the first prefill) leaves no half-made folder behind for `stats` or a
   * listing of the cache root to show. Runs under the folder's lock, and removes each folder only
   * while it is empty (`rmdir`), so an entry another process writes meanwhile stays. Never throws.
   * @returns whether the folder was removed.
   */
  async removeIfEmpty(): Promise<boolean> {
    await this.flush();
    if (!isFolder(this.dir, false)) return false;
    try {
      return await this.locked(() => {
        for (const sub of ['prefix', 'thread']) {
          const d = path.join(this.dir, sub);
          if (isFolder(d, false) && safeReaddir(d).length > 0) return false;
        }
        if (safeReaddir(this.dir).some((n) => n !== 'prefix' && n !== 'thread')) return false;
        for (const sub of ['prefix', 'thread']) {
          try {
            fs.rmdirSync(path.join(this.dir, sub));
          } catch (e) {
            if (!missing(e)) throw e;
          }
        }
        fs.rmdirSync(this.dir);
        if (ramPrefix?.dir === this.dir) ramPrefix = undefined;
        return true;
      });
    } catch {
      return false; // not empty after all (a file written meanwhile), or not ours to remove: it stays
    }
  }
}

/**
 * Why a thread's state cannot continue the current question (see {@link CacheStore.loadThread}),
 * or undefined when it can.
 */
function threadMismatch(index: ThreadIndex, snap: SessionSnapshot, expect: { key: string; prefix: ArrayLike<number> }): string | undefined {
  if (index.key !== expect.key) return 'it was made with another model, engine or cache settings';
  if (index.prefixTokens !== expect.prefix.length) return `its repository prefix has ${index.prefixTokens} tokens, the current one ${expect.prefix.length}`;
  const t = snap.tokens;
  if (t.length < expect.prefix.length) return `its state holds ${t.length} tokens, fewer than the repository prefix`;
  for (let i = 0; i < expect.prefix.length; i++) {
    if (t[i] !== expect.prefix[i]) return `its tokens differ from the repository prefix's at position ${i}`;
  }
  if (index.L > t.length) return `its index records ${index.L} prompt tokens, its state holds ${t.length}`;
  return undefined;
}

/** Whether `p` is a symbolic link (to anything, or dangling). */
function isLink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Whether `name` in the store's `kind/` folder is a file the store writes: an entry's state or
 * index (`<id>.rsnp`, `<id>.json`, `ENTRY_ID`) or a writer's temporary file (`TEMP_FILE`); a
 * question's thread lock (`<id>.lock`) is its holder's to remove, anything else not the store's.
 */
function isStoreFile(kind: Kind, name: string): boolean {
  if (TEMP_FILE.test(name)) return true;
  const m = /^(.+)\.(rsnp|json)$/.exec(name);
  return m !== null && ENTRY_ID[kind].test(m[1]!);
}

/** Whether `p` is a folder (`follow`: a link to a folder counts). */
function isFolder(p: string, follow = true): boolean {
  try {
    return (follow ? fs.statSync(p) : fs.lstatSync(p)).isDirectory();
  } catch {
    return false;
  }
}

/** The names in `dir`, or none when it cannot be read (missing, not a folder, no permission). */
export function safeReaddir(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** Thread ids come from users and webviews: keep them to safe file names. */
function safeId(id: string): string {
  return ENTRY_ID.thread.test(id) ? id : createHash('sha256').update(id).digest('hex').slice(0, 32);
}
