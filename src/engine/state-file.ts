/**
 * Session state files: a sequence's KV cache (`llama_state_seq_get_data`: cells, positions,
 * K and V) with a header that says what produced it, written atomically and checked when read.
 *
 * Layout (little-endian):
 *   [0]      magic "RSNP"
 *   [4]      u32 format version (1)
 *   [8]      u32 header length H, then H bytes of UTF-8 JSON ({@link StateHeader})
 *   [12+H]   u32 token count T, then T × i32 token ids (the sequence's tokens in order)
 *   [...]    u64 payload length P, then P bytes of llama.cpp sequence state
 *   [end-32] sha256 of every byte before it
 * A truncated, corrupted, foreign (other model, engine or cache settings) file is refused with a
 * {@link StateFileError} before llama.cpp sees any of it.
 */
import crypto, { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as v from 'valibot';
import { defaultCacheRoot } from '../cache/location';
import { EngineError } from './errors';
import { engineDir } from './native';

export const STATE_MAGIC = 'RSNP';
export const STATE_FORMAT = 1;

/** What produced a state; every field must match for the state to load. */
export interface StateIdentity {
  /** {@link modelFingerprint} of the model file (the SHA-256 of its content). */
  model: string;
  /** {@link engineVersion} of the engine that wrote it. */
  engine: string;
  /** KV cache element types and flash attention (they change the bytes). */
  typeK: string;
  typeV: string;
  flashAttention: string;
}

/** The JSON header of a state file. */
export interface StateHeader extends StateIdentity {
  /** Next position of the sequence (tokens it has seen). */
  nPast: number;
  /** Cells the sequence holds (B after a snap, else nPast). */
  cells: number;
  /** The snap that produced the cache, if any. */
  snap: { L: number; B: number; window: number; budget: number; kernel: number; pooling: string; allocation?: string; scorer?: string } | null;
  /** ms since the epoch. */
  createdAt: number;
}

const whole = v.pipe(v.number(), v.integer(), v.minValue(0));

/** The header's shape, checked on read: a header that parses but lacks a field is a damaged file. */
const StateHeaderSchema: v.GenericSchema<unknown, StateHeader> = v.looseObject({
  model: v.string(),
  engine: v.string(),
  typeK: v.string(),
  typeV: v.string(),
  flashAttention: v.string(),
  nPast: whole,
  cells: whole,
  snap: v.nullable(
    v.looseObject({
      L: whole,
      B: whole,
      window: whole,
      budget: whole,
      kernel: whole,
      pooling: v.string(),
      allocation: v.optional(v.string()),
      scorer: v.optional(v.string()),
    }),
  ),
  createdAt: v.number(),
});

/** The file is not a valid state for this model/engine/settings (truncated, corrupted, foreign). */
export class StateFileError extends EngineError {
  constructor(message: string) {
    super(message);
    this.name = 'StateFileError';
  }
}

/** Fingerprints computed or read in this process, by {@link statKey}. */
const fingerprints = new Map<string, string>();

/** A file's identity on disk: path, size, times and inode (what the fingerprint memo is keyed by). */
interface FileStat {
  path: string;
  size: number;
  mtimeMs: number;
  /** Changes on every write, and cannot be set back by a program (utimes sets mtime, not ctime). */
  ctimeMs: number;
  ino: number;
  dev: number;
}

const FileStatSchema = v.object({ path: v.string(), size: v.number(), mtimeMs: v.number(), ctimeMs: v.number(), ino: v.number(), dev: v.number() });
/** The persisted memo: `{version: 1, entries: [{path, size, mtimeMs, ctimeMs, ino, dev, sha256, at}]}`, the most recent first. */
const FingerprintMemoSchema = v.object({
  version: v.literal(1),
  entries: v.array(v.object({ ...FileStatSchema.entries, sha256: v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/)), at: v.number() })),
});
type FingerprintMemo = v.InferOutput<typeof FingerprintMemoSchema>;
/** Files the memo remembers (the most recently hashed). */
const MEMO_ENTRIES = 64;

const statKey = (s: FileStat) => JSON.stringify([s.path, s.size, s.mtimeMs, s.ctimeMs, s.ino, s.dev]);

/** The file name of the fingerprint memo in a cache root. */
export const FINGERPRINT_MEMO = 'model-fingerprints.json';

/**
 * Where {@link modelFingerprint} remembers fingerprints across processes by default:
 * `<default cache root>/model-fingerprints.json`. A session that saves to a cache store uses that
 * store's root instead (`CacheStore.fingerprintMemo`).
 */
export function defaultFingerprintMemo(): string {
  return path.join(defaultCacheRoot(), FINGERPRINT_MEMO);
}

function readMemo(memoFile: string): FingerprintMemo {
  try {
    const r = v.safeParse(FingerprintMemoSchema, JSON.parse(fs.readFileSync(memoFile, 'utf8')));
    if (r.success) return r.output;
  } catch {
    // missing or damaged: start a new one
  }
  return { version: 1, entries: [] };
}

/**
 * Identity of a model file: the SHA-256 of its whole content (hex), so any change of any byte is
 * a different model. Hashing reads the file once (0.7–1.3 GB/s on this 2-core machine from the page cache, as fast as SHA-256 itself); the result is
 * remembered by the file's path, size, mtime, ctime and inode, in this process and in `memoFile`
 * (JSON, shape-checked on read, written atomically; null: this process only), so a new CLI
 * process does not hash a multi-GB model again while the file is unchanged.
 * @throws the fs error when the model cannot be read.
 */
export function modelFingerprint(file: string, memoFile: string | null = defaultFingerprintMemo()): string {
  const st = fs.statSync(file);
  const id: FileStat = { path: path.resolve(file), size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino, dev: st.dev };
  const key = statKey(id);
  const known = fingerprints.get(key);
  if (known) return known;
  const memo = memoFile ? readMemo(memoFile) : undefined;
  const remembered = memo?.entries.find((e) => statKey(e) === key);
  if (remembered) {
    fingerprints.set(key, remembered.sha256);
    return remembered.sha256;
  }
  const fp = sha256FileSync(file);
  fingerprints.set(key, fp);
  if (memoFile && memo) {
    const entries = [{ ...id, sha256: fp, at: Date.now() }, ...memo.entries.filter((e) => e.path !== id.path)].slice(0, MEMO_ENTRIES);
    try {
      writeFileAtomic(memoFile, Buffer.from(JSON.stringify({ version: 1, entries })));
    } catch {
      // a read-only cache root: the fingerprint is remembered in this process only
    }
  }
  return fp;
}

/** SHA-256 of a file's whole content (hex), read in 16 MiB chunks. */
function sha256FileSync(file: string): string {
  const h = createHash('sha256');
  const fd = fs.openSync(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(16 << 20);
    for (;;) {
      const n = fs.readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
  } finally {
    fs.closeSync(fd);
  }
  return h.digest('hex');
}

let engineVersionCache: string | undefined;

/** The engine's version: package version + hash of the llama.cpp tag and patch series (engine.json beside the addon: REPOSNAP_ADDON's folder, else engineDir()). */
export function engineVersion(): string {
  if (engineVersionCache) return engineVersionCache;
  const file = path.join(process.env.REPOSNAP_ADDON ? path.dirname(process.env.REPOSNAP_ADDON) : engineDir(), 'engine.json');
  try {
    engineVersionCache = (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
  } catch {
    throw new EngineError(`cannot read ${file}: rebuild the engine with 'npm run build'`);
  }
  return engineVersionCache;
}

/**
 * Serializes a state file in memory.
 * @param tokens the sequence's tokens (i32); payload: llama.cpp's sequence state bytes.
 */
export function encodeStateFile(header: StateHeader, tokens: ArrayLike<number>, payload: Uint8Array): Buffer {
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const tok = Buffer.alloc(4 * tokens.length);
  for (let i = 0; i < tokens.length; i++) tok.writeInt32LE(tokens[i]!, 4 * i);
  const fixed = Buffer.alloc(12);
  fixed.write(STATE_MAGIC, 0, 'ascii');
  fixed.writeUInt32LE(STATE_FORMAT, 4);
  fixed.writeUInt32LE(json.length, 8);
  const tcount = Buffer.alloc(4);
  tcount.writeUInt32LE(tokens.length, 0);
  const plen = Buffer.alloc(8);
  plen.writeBigUInt64LE(BigInt(payload.length), 0);
  const body = Buffer.concat([fixed, json, tcount, tok, plen, payload]);
  const sum = createHash('sha256').update(body).digest();
  return Buffer.concat([body, sum]);
}

/** A decoded, verified state file. */
export interface DecodedState {
  header: StateHeader;
  tokens: Int32Array;
  payload: Buffer;
}

/**
 * Parses and verifies a state file's bytes: magic, format, lengths, checksum, JSON header.
 * @throws StateFileError with what is wrong.
 */
export function decodeStateFile(buf: Buffer, name = 'state file'): DecodedState {
  const bad = (why: string) => new StateFileError(`${name}: ${why}`);
  if (buf.length < 12 + 32) throw bad(`truncated (${buf.length} bytes)`);
  if (buf.toString('ascii', 0, 4) !== STATE_MAGIC) throw bad('not a RepoSnap state file (bad magic)');
  const format = buf.readUInt32LE(4);
  if (format !== STATE_FORMAT) throw bad(`format version ${format}, this engine reads ${STATE_FORMAT}`);
  const body = buf.subarray(0, buf.length - 32);
  const sum = createHash('sha256').update(body).digest();
  if (!sum.equals(buf.subarray(buf.length - 32))) throw bad('checksum mismatch (truncated or corrupted)');
  const hlen = buf.readUInt32LE(8);
  let o = 12;
  if (o + hlen + 4 > body.length) throw bad('header runs past the end');
  let parsed: unknown;
  try {
    parsed = JSON.parse(buf.toString('utf8', o, o + hlen));
  } catch {
    throw bad('header is not valid JSON');
  }
  const checked = v.safeParse(StateHeaderSchema, parsed);
  if (!checked.success) throw bad(`header of the wrong shape (${v.summarize(checked.issues).split('\n')[0]})`);
  const header = checked.output;
  o += hlen;
  const T = buf.readUInt32LE(o);
  o += 4;
  if (o + 4 * T + 8 > body.length) throw bad('token list runs past the end');
  const tokens = new Int32Array(T);
  for (let i = 0; i < T; i++) tokens[i] = buf.readInt32LE(o + 4 * i);
  o += 4 * T;
  const P = Number(buf.readBigUInt64LE(o));
  o += 8;
  if (o + P !== body.length) throw bad(`payload length ${P} does not match the file`);
  return { header, tokens, payload: buf.subarray(o, o + P) };
}

/** Checks that a state was produced by this model, engine and cache settings. */
export function checkIdentity(header: StateHeader, expected: StateIdentity, name = 'state file'): void {
  for (const key of ['model', 'engine', 'typeK', 'typeV', 'flashAttention'] as const) {
    if (header[key] !== expected[key]) {
      const what = key === 'model' ? 'another model' : key === 'engine' ? 'another engine version' : `another ${key}`;
      throw new StateFileError(`${name}: written for ${what} (${String(header[key]).slice(0, 16)} ≠ ${String(expected[key]).slice(0, 16)})`);
    }
  }
}

/**
 * Creates `dir` and its missing parents, one level at a time from the first that exists, as
 * `mkdir -p` does. Node's `fs.mkdirSync(dir, { recursive: true })` loops for ever (synchronously,
 * so that SIGTERM's handler never runs) when a file system answers ENOENT for a folder whose
 * parent exists, as /proc does (`--cache-dir /proc/self` spun for 11 minutes); here that ENOENT
 * is thrown. A folder created meanwhile by another process is fine. Folders it creates are 0700
 * (less the umask): only their owner lists them.
 * @throws the fs error of the first level that cannot be created (ENOENT, EROFS, EACCES, ENOTDIR, EEXIST for a file).
 */
export function makeFolder(dir: string): void {
  const target = path.resolve(dir);
  const missing: string[] = [];
  for (let p = target; !fs.existsSync(p); p = path.dirname(p)) {
    missing.push(p);
    if (path.dirname(p) === p) break;
  }
  for (const level of missing.reverse()) {
    try {
      // private to this user (issue 29, item 6): the cache's folder names are repository and thread names
      fs.mkdirSync(level, { mode: 0o700 });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.statSync(level).isDirectory()) throw e;
    }
  }
  if (missing.length === 0 && !fs.statSync(target).isDirectory()) {
    throw Object.assign(new Error(`EEXIST: file already exists, mkdir '${dir}'`), { code: 'EEXIST' });
  }
}

/**
 * How a temporary file is opened: created new (`O_EXCL`: a file or a link already at the name is
 * an error, never opened or followed), and never through a symbolic link (`O_NOFOLLOW`, where the
 * platform has it). Issue 29, item 4: with `'w'` a link planted at the name made a write land in
 * an unrelated file.
 */
const TEMP_OPEN_FLAGS = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | (fs.constants.O_NOFOLLOW ?? 0);

/**
 * A temporary file's name beside `file`: `.<name>.<pid>.<random>.tmp`, the random part 15 decimal
 * digits (48 bits from `crypto.randomBytes`), so that nobody can plant anything at it in advance.
 * The store's sweep of dead writers' files reads the pid from it (src/cache/store.ts `TEMP_FILE`).
 */
export function temporaryName(file: string): string {
  const random = crypto.randomBytes(6).readUIntBE(0, 6).toString().padStart(15, '0');
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${random}.tmp`);
}

/**
 * Writes bytes atomically: a temporary file in the same folder (`temporaryName`, created new and
 * never through a link: `TEMP_OPEN_FLAGS`, mode 0600), fsync, rename; the folder is fsynced too.
 * A crash leaves either the old file or the new one, never a torn one.
 * @throws the fs error (ENOSPC, EACCES, EEXIST or ELOOP for something planted at the name, …); the
 *   temporary file is removed when this call created it.
 */
export function writeFileAtomic(file: string, data: Uint8Array): void {
  const dir = path.dirname(file);
  makeFolder(dir);
  const tmp = temporaryName(file);
  let fd: number | undefined;
  let created = false;
  try {
    fd = fs.openSync(tmp, TEMP_OPEN_FLAGS, 0o600);
    created = true;
    let off = 0;
    while (off < data.length) off += fs.writeSync(fd, data, off, data.length - off);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.renameSync(tmp, file);
  } catch (e) {
    if (fd !== undefined) fs.closeSync(fd);
    // only what this call created: a link planted at the name is not ours to remove
    if (created) fs.rmSync(tmp, { force: true });
    throw e;
  }
  try {
    const dfd = fs.openSync(dir, 'r');
    fs.fsyncSync(dfd);
    fs.closeSync(dfd);
  } catch {
    // directories cannot be fsynced on every platform; the rename is still atomic
  }
}
