/**
 * A model's GGUF metadata, read (node-llama-cpp's `readGgufFileInfo`, header only) and checked
 * before llama.cpp loads the file: llama.cpp aborts the process (GGML_ASSERT) on some impossible
 * values instead of failing the load (e.g. `block_count` 0 or above its `LLAMA_MAX_LAYERS`, 512),
 * so what its loader asserts on is refused here with a clear error first.
 */
import fs from 'node:fs';
import { ModelLoadError } from '../engine/errors';

/** `LLAMA_MAX_LAYERS` (llama.cpp `src/llama-hparams.h`): per-layer arrays are this long. */
export const LLAMA_MAX_LAYERS = 512;

/** The hyperparameters RepoSnap reads from a GGUF header (`<arch>.*` keys). */
export interface ModelMetadata {
  architecture: string;
  /** `<arch>.block_count`: transformer layers. */
  blockCount: number;
  /** `<arch>.context_length`: the training context [tokens]; 0 when absent. */
  contextLength: number;
  /** `<arch>.embedding_length` [channels]. */
  embeddingLength: number;
  /** `<arch>.attention.head_count`: query heads (the largest, when given per layer). */
  headCount: number;
  /** `<arch>.attention.head_count_kv`: KV heads (the largest, when given per layer; default headCount). */
  headCountKv: number;
  /** `<arch>.attention.key_length`: K head size [channels] (default embeddingLength / headCount). */
  keyLength: number;
  /** `<arch>.attention.value_length`: V head size [channels] (default keyLength). */
  valueLength: number;
  /** Tensors whose name says which layer they belong to (`blk.<i>.…`): the highest i + 1. */
  tensorLayers: number;
}

const isCount = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;

/** A number, or the largest of a per-layer array of numbers; undefined when absent or malformed. */
function countOf(x: unknown): number | undefined {
  if (isCount(x)) return x;
  if (Array.isArray(x) && x.length > 0 && x.every(isCount)) return Math.max(...x);
  return undefined;
}

/** The GGUF versions llama.cpp reads (`gguf.cpp`: version 1 is refused, 2 and 3 are read). */
export const GGUF_VERSIONS: readonly number[] = [2, 3];

/**
 * Checks a GGUF file's fixed preamble (24 bytes, little-endian: magic `GGUF`, uint32 version,
 * uint64 tensor count, uint64 metadata key count; ggml's `docs/gguf.md`) before the full header is
 * read: node-llama-cpp's `readGgufFileInfo` trusts the counts and lengths it reads, so on a file
 * that only starts like a GGUF (`GGUF garbage`: version 0x72616720) it ran for minutes, grew to
 * gigabytes and ignored SIGTERM. Each tensor entry takes at least 24 bytes (name length 8,
 * dimension count 4, type 4, offset 8) and each metadata entry at least 13 (key length 8, value
 * type 4, a one-byte value), so counts that cannot fit in the file are refused too.
 * @param head the file's first bytes (at least 24, or the whole file when shorter).
 * @param size the file's size [bytes].
 * @returns the tensor and metadata key counts.
 * @throws ModelLoadError naming what is wrong: not a GGUF file, too short, an unsupported version,
 *   counts larger than the file can hold.
 */
export function checkGgufPreamble(head: Buffer, size: number, file: string): { tensors: bigint; keys: bigint } {
  if (size < 4 || head.subarray(0, 4).toString('latin1') !== 'GGUF') {
    throw new ModelLoadError(`'${file}' is not a GGUF model file (it does not start with the bytes 'GGUF')`);
  }
  if (size < 24 || head.length < 24) {
    throw new ModelLoadError(`'${file}' is truncated: ${size} bytes, fewer than a GGUF header's first 24 (an interrupted download? fetch it again)`);
  }
  const version = head.readUInt32LE(4);
  if (!GGUF_VERSIONS.includes(version)) {
    throw new ModelLoadError(`'${file}' is GGUF version ${version}; llama.cpp reads versions ${GGUF_VERSIONS.join(' and ')} (a damaged file, or one from another tool: fetch or convert it again)`);
  }
  const tensors = head.readBigUInt64LE(8);
  const keys = head.readBigUInt64LE(16);
  if (24n + tensors * 24n + keys * 13n > BigInt(size)) {
    throw new ModelLoadError(`'${file}' is damaged or truncated: its header announces ${tensors} tensors and ${keys} metadata keys, more than a file of ${size} bytes can hold`);
  }
  return { tensors, keys };
}

/** Bytes of one value of each fixed-size GGUF type (`gguf_type`: 0 UINT8 … 12 FLOAT64; 8 STRING and 9 ARRAY vary). */
const GGUF_TYPE_BYTES: Readonly<Record<number, number>> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
/** `GGUF_TYPE_STRING` and `GGUF_TYPE_ARRAY`. */
const GGUF_STRING = 8;
const GGUF_ARRAY = 9;
/** `GGML_MAX_DIMS`: a tensor has at most this many dimensions (gguf.cpp refuses more). */
const GGML_MAX_DIMS = 4;

/** A key's name for an error message: printable ASCII only, at most 80 characters (it comes from the file). */
const keyName = (key: string): string => JSON.stringify(key.replace(/[^\x20-\x7e]/g, '?').slice(0, 80));

/**
 * A forward reader over an open file that never reads, nor lets a length take it, past the file's
 * end: every read checks its length against the bytes left first. Reads in windows of 1 MiB.
 */
class BoundedReader {
  pos = 24;
  private buf = Buffer.alloc(0);
  private bufStart = 0;

  constructor(private readonly fd: number, readonly size: number, private readonly fail: (what: string) => Error) {}

  /** Bytes left after the current position. */
  get left(): number {
    return this.size - this.pos;
  }

  /** The next `n` bytes (a view into the window), or `fail(what)` when fewer are left. */
  take(n: number, what: string): Buffer {
    if (n > this.left) throw this.fail(`${what} needs ${n} bytes at byte ${this.pos}, but the file ends ${this.left} bytes later`);
    if (this.pos < this.bufStart || this.pos + n > this.bufStart + this.buf.length) {
      const len = Math.min(Math.max(n, 1 << 20), this.size - this.pos);
      this.buf = Buffer.alloc(len);
      fs.readSync(this.fd, this.buf, 0, len, this.pos);
      this.bufStart = this.pos;
    }
    const at = this.pos - this.bufStart;
    this.pos += n;
    return this.buf.subarray(at, at + n);
  }

  /** `fail(what)` unless `count` × `each` bytes are left (the product in bigint: no overflow); `atLeast`: `each` is a least size. */
  fits(count: bigint, each: number, what: string, atLeast = false): void {
    if (count * BigInt(each) > BigInt(this.left)) {
      const size = count === 1n ? `${each} bytes` : `${count} values of ${atLeast ? 'at least ' : ''}${each} byte${each === 1 ? '' : 's'}`;
      throw this.fail(`${what} announces ${size}, more than the ${this.left} bytes left after byte ${this.pos}`);
    }
  }

  /** Skips `count` × `each` bytes, or `fail(what)` when they pass the end. */
  skip(count: bigint, each: number, what: string): void {
    this.fits(count, each, what);
    this.pos += Number(count * BigInt(each));
  }

  u32(what: string): number {
    return this.take(4, what).readUInt32LE(0);
  }

  u64(what: string): bigint {
    return this.take(8, what).readBigUInt64LE(0);
  }

  /** The length of the GGUF string at the current position (its uint64 prefix, read), checked against the bytes left. */
  private strLength(what: string): number {
    const n = this.u64(what);
    if (n > BigInt(this.left)) throw this.fail(`${what} announces a string of ${n} bytes, more than the ${this.left} bytes left after byte ${this.pos}`);
    return Number(n);
  }

  /** A GGUF string (uint64 length, then the bytes), checked against the bytes left. */
  str(what: string): string {
    return this.take(this.strLength(what), what).toString('utf8');
  }

  /** Skips a GGUF string. */
  skipStr(what: string): void {
    const n = this.strLength(what); // read before `pos +=` reads pos
    this.pos += n;
  }
}

/**
 * Walks a GGUF header's metadata entries and tensor entries (after the 24-byte preamble, which
 * {@link checkGgufPreamble} checked: `keys` and `tensors` are its counts) and checks that every
 * length, array count and dimension count it announces fits in the bytes left, without
 * allocating anything a length asks for. node-llama-cpp's `readGgufFileInfo` trusts them: an
 * array of 2·10⁹ uint8 values in a 3 MB file made it grow a JavaScript array until V8 aborted the
 * process (SIGILL, 1.7 GB, 17 s; a string array of 2⁴⁰ entries failed at once with a RangeError).
 * Layout per ggml's `docs/gguf.md`: a key is a string (uint64 length + bytes), then a uint32 value
 * type; an array is a uint32 element type, a uint64 count, then the elements (arrays of arrays are
 * refused, as gguf.cpp refuses them); a tensor entry is a name string, a uint32 dimension count
 * (at most 4), one uint64 per dimension, a uint32 type and a uint64 offset.
 * Cost: one pass over the header (1.4 MB for SmolLM2's 49,152-token vocabulary).
 * @param fd an open descriptor of the file; @param size its size [bytes].
 * @throws ModelLoadError naming the entry (index and key) and what does not fit, or the unknown value type.
 */
export function checkGgufEntries(fd: number, size: number, keys: bigint, tensors: bigint, file: string): void {
  const fail = (what: string) => new ModelLoadError(`'${file}' is damaged or truncated: ${what}`);
  // what passes the end may be a download cut short
  const r = new BoundedReader(fd, size, (what) => fail(`${what} (an interrupted download? fetch it again)`));
  for (let i = 0n; i < keys; i++) {
    const key = r.str(`metadata entry ${i}'s key`);
    const what = `metadata entry ${i} (${keyName(key)})`;
    let type = r.u32(what);
    let count = 1n;
    if (type === GGUF_ARRAY) {
      type = r.u32(what);
      count = r.u64(what);
      if (type === GGUF_ARRAY) throw fail(`${what} is an array of arrays, which llama.cpp does not read`);
    }
    if (type === GGUF_STRING) {
      // each string takes at least its 8-byte length: refuse an impossible count before looping over it
      r.fits(count, 8, what, true);
      for (let j = 0n; j < count; j++) r.skipStr(what);
    } else {
      const each = GGUF_TYPE_BYTES[type];
      if (each === undefined) throw fail(`${what} has the value type ${type}, which GGUF does not define`);
      r.skip(count, each, what);
    }
  }
  for (let i = 0n; i < tensors; i++) {
    const name = r.str(`tensor entry ${i}'s name`);
    const what = `tensor entry ${i} (${keyName(name)})`;
    const dims = r.u32(what);
    if (dims > GGML_MAX_DIMS) throw fail(`${what} has ${dims} dimensions; ggml has at most ${GGML_MAX_DIMS}`);
    r.skip(BigInt(dims), 8, what);
    r.u32(`${what}'s type`);
    r.u64(`${what}'s offset`);
  }
}

/**
 * Reads and checks a model's GGUF header: the fixed preamble first ({@link checkGgufPreamble}), then
 * every entry's lengths and counts against the file's size ({@link checkGgufEntries}), then the whole
 * header with node-llama-cpp's `readGgufFileInfo`.
 * @throws ModelLoadError when the file does not start as a GGUF of version 2 or 3 (or announces
 *   more entries than it can hold, or an entry whose length or count passes its end), when the header cannot be read, is cut short (a truncated download: the
 *   reader would see zeros past the end), the file ends before its last tensor starts (a download
 *   cut inside the tensor data; a cut inside the last tensor is left to llama.cpp), or holds values llama.cpp's loader would
 *   assert on (no architecture, 0 or more than 512 layers, layer tensors that disagree with
 *   `block_count`, no heads, KV heads that do not divide the query heads, no embedding).
 */
export async function readModelMetadata(file: string): Promise<ModelMetadata> {
  // one descriptor for the preamble and the entries' walk; the size read here serves every check below
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch (e) {
    throw new ModelLoadError(`cannot open the model file '${file}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  let size: number;
  try {
    size = fs.fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(24, size));
    fs.readSync(fd, head, 0, head.length, 0);
    const { tensors, keys } = checkGgufPreamble(head, size, file);
    checkGgufEntries(fd, size, keys, tensors, file);
  } catch (e) {
    if (e instanceof ModelLoadError) throw e;
    throw new ModelLoadError(`cannot read the GGUF header of '${file}': ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  } finally {
    fs.closeSync(fd);
  }
  let info;
  try {
    const { readGgufFileInfo } = await import('node-llama-cpp');
    info = await readGgufFileInfo(file, { readTensorInfo: true, logWarnings: false });
  } catch (e) {
    throw new ModelLoadError(`cannot read the GGUF header of '${file}': ${(e as Error).message}`);
  }
  if (info.infoEndOffset !== undefined && size < info.infoEndOffset) {
    throw new ModelLoadError(`'${file}' is truncated: its GGUF header alone takes ${info.infoEndOffset} bytes but the file has ${size} (an interrupted download? fetch it again)`);
  }
  // a download cut inside the tensor data: llama.cpp would refuse it with its own log lines and a
  // load error that cannot say why; the last tensor of this file (split parts are files of their
  // own) must at least start before its end
  let last: { name: string; start: bigint } | undefined;
  for (const t of info.tensorInfo ?? []) {
    if ((t.filePart ?? 1) !== 1) continue;
    const start = BigInt(t.fileOffset);
    if (last === undefined || start > last.start) last = { name: t.name, start };
  }
  if (last !== undefined && last.start >= BigInt(size)) {
    throw new ModelLoadError(`'${file}' is truncated: its tensor '${last.name}' starts at byte ${last.start} but the file has ${size} bytes (an interrupted download? fetch it again)`);
  }
  const md = info.metadata as unknown as Record<string, unknown> & { general?: { architecture?: unknown } };
  const arch = md.general?.architecture;
  if (typeof arch !== 'string' || !arch) throw new ModelLoadError(`'${file}' names no architecture (general.architecture)`);
  const a = (md[arch] ?? {}) as Record<string, unknown> & { attention?: Record<string, unknown> };
  const att = a.attention ?? {};
  let tensorLayers = 0;
  for (const t of info.tensorInfo ?? []) {
    const m = /^blk\.(\d+)\./.exec(t.name);
    if (m) tensorLayers = Math.max(tensorLayers, Number(m[1]) + 1);
  }
  const headCount = countOf(att.head_count) ?? 0;
  const embeddingLength = countOf(a.embedding_length) ?? 0;
  const keyLength = countOf(att.key_length) ?? (headCount > 0 ? Math.floor(embeddingLength / headCount) : 0);
  const meta: ModelMetadata = {
    architecture: arch,
    blockCount: countOf(a.block_count) ?? -1,
    contextLength: countOf(a.context_length) ?? 0,
    embeddingLength,
    headCount,
    headCountKv: countOf(att.head_count_kv) ?? headCount,
    keyLength,
    valueLength: countOf(att.value_length) ?? keyLength,
    tensorLayers,
  };
  checkModelMetadata(meta, file);
  return meta;
}

/**
 * Refuses metadata that llama.cpp's loader would abort on, or that cannot describe a model.
 * @throws ModelLoadError naming the key and the value.
 */
export function checkModelMetadata(m: ModelMetadata, file: string): void {
  const bad = (what: string) => new ModelLoadError(`'${file}' is not a model llama.cpp can load: ${what}`);
  const key = (k: string) => `${m.architecture}.${k}`;
  if (m.blockCount < 1 || m.blockCount > LLAMA_MAX_LAYERS) throw bad(`${key('block_count')} is ${m.blockCount < 0 ? 'missing' : m.blockCount} (1 to ${LLAMA_MAX_LAYERS} layers)`);
  if (m.tensorLayers > m.blockCount) throw bad(`it holds tensors of ${m.tensorLayers} layers but ${key('block_count')} says ${m.blockCount}`);
  if (m.embeddingLength < 1) throw bad(`${key('embedding_length')} is missing or 0`);
  // recurrent models (Mamba, RWKV) have no attention heads: nothing more to check for them
  if (m.headCount === 0) return;
  if (m.headCountKv > m.headCount || (m.headCountKv > 0 && m.headCount % m.headCountKv !== 0)) {
    throw bad(`${key('attention.head_count_kv')} (${m.headCountKv}) does not divide ${key('attention.head_count')} (${m.headCount})`);
  }
  if (m.keyLength < 1 || m.valueLength < 1) throw bad(`the attention head size is 0 (${key('attention.key_length')}, ${key('embedding_length')} / head count)`);
}
