/**
 * Minimal GGUF (v2 / v3) reader, written from the GGUF format specification
 * (ggml/docs/gguf.md). Independent of node-llama-cpp on purpose: it is part of
 * the float64 reference used to check the engine.
 *
 * File layout (all little-endian):
 *   magic "GGUF" (4 bytes) | version u32 | tensor_count u64 | kv_count u64
 *   kv_count × { key: string, value_type: u32, value }
 *   tensor_count × { name: string, n_dims: u32, dims: u64[n_dims], type: u32, offset: u64 }
 *   padding to `general.alignment` (default 32)
 *   tensor data (each tensor at data_start + offset)
 * A string is { len: u64, utf8 bytes }. An array value is { elem_type: u32, len: u64, elems }.
 *
 * Tensor dims are listed fastest-varying first (ne0 first), exactly like ggml:
 * a 2-D tensor with dims [ne0, ne1] holds ne1 rows of ne0 contiguous elements.
 */
import { readFileSync } from 'node:fs';

/** GGUF metadata value type ids (gguf_type). */
export enum GGUFValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** ggml tensor type ids that this reader can decode; others are reported by name. */
export enum GGMLType {
  F32 = 0,
  F16 = 1,
}

/** Names of ggml tensor types (index = ggml_type id), used for error messages only. */
const GGML_TYPE_NAMES: Record<number, string> = {
  0: 'F32', 1: 'F16', 2: 'Q4_0', 3: 'Q4_1', 6: 'Q5_0', 7: 'Q5_1', 8: 'Q8_0', 9: 'Q8_1',
  10: 'Q2_K', 11: 'Q3_K', 12: 'Q4_K', 13: 'Q5_K', 14: 'Q6_K', 15: 'Q8_K',
  16: 'IQ2_XXS', 17: 'IQ2_XS', 18: 'IQ3_XXS', 19: 'IQ1_S', 20: 'IQ4_NL', 21: 'IQ3_S',
  22: 'IQ2_S', 23: 'IQ4_XS', 24: 'I8', 25: 'I16', 26: 'I32', 27: 'I64', 28: 'F64',
  29: 'IQ1_M', 30: 'BF16', 34: 'TQ1_0', 35: 'TQ2_0', 39: 'MXFP4',
};

/** Human-readable name of a ggml tensor type id, e.g. 1 → "F16". */
export function ggmlTypeName(type: number): string {
  return GGML_TYPE_NAMES[type] ?? `unknown(${type})`;
}

/**
 * A decoded metadata value. Integers of 64 bits are numbers when they are safe
 * integers, bigint otherwise. Arrays are plain JS arrays of decoded elements
 * (arrays of arrays are allowed by the format and supported).
 */
export type GGUFValue = number | bigint | boolean | string | GGUFValue[];

/** One metadata entry: key, its declared type, and (for arrays) the element type. */
export interface GGUFMetadataEntry {
  /** Key, e.g. "llama.attention.head_count". */
  key: string;
  /** Declared value type. */
  type: GGUFValueType;
  /** Element type when `type === ARRAY`. */
  arrayType?: GGUFValueType;
  /** Decoded value. */
  value: GGUFValue;
}

/** Description of one tensor as stored in the file. */
export interface GGUFTensorInfo {
  /** Tensor name, e.g. "blk.0.attn_q.weight". */
  name: string;
  /** Dimensions, fastest-varying first: [ne0, ne1, ...]. */
  dims: number[];
  /** ggml type id (0 = F32, 1 = F16, ...). */
  type: number;
  /** Byte offset relative to the start of the tensor data section. */
  offset: number;
  /** Number of elements = product of dims. */
  nElements: number;
}

/** Sequential little-endian cursor over a Buffer. */
class Cursor {
  pos = 0;
  /** GGUF version; v1 used u32 for counts and string lengths, v2+ use u64. */
  version = 3;
  constructor(private readonly buf: Buffer) {}

  private need(n: number): void {
    if (this.pos + n > this.buf.length) {
      throw new Error(`GGUF: unexpected end of file at byte ${this.pos} (need ${n} more bytes)`);
    }
  }

  u8(): number { this.need(1); const v = this.buf.readUInt8(this.pos); this.pos += 1; return v; }
  i8(): number { this.need(1); const v = this.buf.readInt8(this.pos); this.pos += 1; return v; }
  u16(): number { this.need(2); const v = this.buf.readUInt16LE(this.pos); this.pos += 2; return v; }
  i16(): number { this.need(2); const v = this.buf.readInt16LE(this.pos); this.pos += 2; return v; }
  u32(): number { this.need(4); const v = this.buf.readUInt32LE(this.pos); this.pos += 4; return v; }
  i32(): number { this.need(4); const v = this.buf.readInt32LE(this.pos); this.pos += 4; return v; }
  f32(): number { this.need(4); const v = this.buf.readFloatLE(this.pos); this.pos += 4; return v; }
  f64(): number { this.need(8); const v = this.buf.readDoubleLE(this.pos); this.pos += 8; return v; }
  u64(): bigint { this.need(8); const v = this.buf.readBigUInt64LE(this.pos); this.pos += 8; return v; }
  i64(): bigint { this.need(8); const v = this.buf.readBigInt64LE(this.pos); this.pos += 8; return v; }

  /** A count / size field: u64 in v2+, u32 in v1. Must fit a safe integer. */
  size(): number {
    const v = this.version === 1 ? BigInt(this.u32()) : this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`GGUF: size ${v} too large`);
    return Number(v);
  }

  str(): string {
    const n = this.size();
    this.need(n);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
}

/** bigint → number when safe, else keep the bigint. */
function narrow(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

/** Reads one value of the given type at the cursor. */
function readValue(c: Cursor, type: number): { value: GGUFValue; arrayType?: GGUFValueType } {
  switch (type) {
    case GGUFValueType.UINT8: return { value: c.u8() };
    case GGUFValueType.INT8: return { value: c.i8() };
    case GGUFValueType.UINT16: return { value: c.u16() };
    case GGUFValueType.INT16: return { value: c.i16() };
    case GGUFValueType.UINT32: return { value: c.u32() };
    case GGUFValueType.INT32: return { value: c.i32() };
    case GGUFValueType.FLOAT32: return { value: c.f32() };
    case GGUFValueType.BOOL: {
      const b = c.u8();
      if (b > 1) throw new Error(`GGUF: invalid bool byte ${b}`);
      return { value: b === 1 };
    }
    case GGUFValueType.STRING: return { value: c.str() };
    case GGUFValueType.UINT64: return { value: narrow(c.u64()) };
    case GGUFValueType.INT64: return { value: narrow(c.i64()) };
    case GGUFValueType.FLOAT64: return { value: c.f64() };
    case GGUFValueType.ARRAY: {
      const elemType = c.u32();
      const n = c.size();
      const out: GGUFValue[] = new Array(n);
      for (let i = 0; i < n; i++) out[i] = readValue(c, elemType).value;
      return { value: out, arrayType: elemType };
    }
    default:
      throw new Error(`GGUF: unknown metadata value type ${type} at byte ${c.pos}`);
  }
}

/**
 * Decodes one IEEE-754 binary16 value (given as its 16 raw bits) to a number.
 * Handles zeros, subnormals, infinities and NaN.
 */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24; // zero / subnormal: frac * 2^-10 * 2^-14
  if (exp === 0x1f) return frac === 0 ? sign * Infinity : NaN;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/**
 * A parsed GGUF file: header, metadata and tensor infos; tensor data decoded on
 * demand. The whole file is read into memory (fine for the small test models).
 */
export class GGUFFile {
  /** GGUF version (2 or 3; 1 is also accepted). */
  readonly version: number;
  /** Metadata entries in file order, by key. */
  readonly metadata: Map<string, GGUFMetadataEntry>;
  /** Tensor infos in file order. */
  readonly tensors: GGUFTensorInfo[];
  /** Alignment of the data section and of every tensor offset (`general.alignment`, default 32). */
  readonly alignment: number;
  /** Absolute byte offset of the tensor data section. */
  readonly dataOffset: number;
  private readonly byName: Map<string, GGUFTensorInfo>;

  private constructor(private readonly buf: Buffer) {
    const c = new Cursor(buf);
    const magic = buf.toString('latin1', 0, 4);
    if (buf.length < 4 || magic !== 'GGUF') throw new Error(`GGUF: bad magic ${JSON.stringify(magic)}`);
    c.pos = 4;
    this.version = c.u32();
    if (this.version < 1 || this.version > 3) throw new Error(`GGUF: unsupported version ${this.version}`);
    c.version = this.version;
    const nTensors = c.size();
    const nKv = c.size();

    this.metadata = new Map();
    for (let i = 0; i < nKv; i++) {
      const key = c.str();
      const type = c.u32();
      const { value, arrayType } = readValue(c, type);
      const entry: GGUFMetadataEntry = { key, type, value };
      if (arrayType !== undefined) entry.arrayType = arrayType;
      this.metadata.set(key, entry);
    }

    const alignEntry = this.metadata.get('general.alignment');
    this.alignment = alignEntry === undefined ? 32 : Number(alignEntry.value);
    if (!Number.isInteger(this.alignment) || this.alignment <= 0) {
      throw new Error(`GGUF: invalid general.alignment ${String(alignEntry?.value)}`);
    }

    this.tensors = [];
    this.byName = new Map();
    for (let i = 0; i < nTensors; i++) {
      const name = c.str();
      const nDims = c.u32();
      const dims: number[] = [];
      for (let d = 0; d < nDims; d++) dims.push(c.size());
      const type = c.u32();
      const offBig = c.u64();
      if (offBig > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`GGUF: tensor ${name} offset too large`);
      const offset = Number(offBig);
      if (offset % this.alignment !== 0) {
        throw new Error(`GGUF: tensor ${name} offset ${offset} not aligned to ${this.alignment}`);
      }
      const info: GGUFTensorInfo = { name, dims, type, offset, nElements: dims.reduce((a, b) => a * b, 1) };
      if (this.byName.has(name)) throw new Error(`GGUF: duplicate tensor name ${name}`);
      this.tensors.push(info);
      this.byName.set(name, info);
    }

    this.dataOffset = Math.ceil(c.pos / this.alignment) * this.alignment;
  }

  /** Reads and parses the GGUF file at `path`. */
  static load(path: string): GGUFFile {
    return new GGUFFile(readFileSync(path));
  }

  /** Parses GGUF bytes already in memory. */
  static fromBuffer(buf: Buffer): GGUFFile {
    return new GGUFFile(buf);
  }

  /** Metadata value for `key`, or undefined when absent. */
  get(key: string): GGUFValue | undefined {
    return this.metadata.get(key)?.value;
  }

  /** Metadata value for `key` as a number (throws if present but not numeric). */
  getNumber(key: string): number | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint') return Number(v);
    throw new Error(`GGUF: metadata ${key} is not a number (${typeof v})`);
  }

  /** Metadata value for `key` as a string (throws if present but not a string). */
  getString(key: string): string | undefined {
    const v = this.get(key);
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw new Error(`GGUF: metadata ${key} is not a string`);
    return v;
  }

  /** Tensor info by name, or undefined. */
  tensor(name: string): GGUFTensorInfo | undefined {
    return this.byName.get(name);
  }

  /** True when a tensor with this name exists. */
  hasTensor(name: string): boolean {
    return this.byName.has(name);
  }

  /**
   * Decodes tensor `name` (F32 or F16) to float64, in storage order: for dims
   * [ne0, ne1, ...] element (i0, i1, ...) is at index i0 + ne0*(i1 + ne1*(...)).
   * Returns Float64Array of length ne0*ne1*...; throws on other tensor types.
   */
  readTensorF64(name: string): Float64Array {
    const t = this.byName.get(name);
    if (t === undefined) throw new Error(`GGUF: no tensor named ${name}`);
    const n = t.nElements;
    const start = this.dataOffset + t.offset;
    const out = new Float64Array(n);
    if (t.type === GGMLType.F32) {
      if (start + 4 * n > this.buf.length) throw new Error(`GGUF: tensor ${name} extends past end of file`);
      for (let i = 0; i < n; i++) out[i] = this.buf.readFloatLE(start + 4 * i);
    } else if (t.type === GGMLType.F16) {
      if (start + 2 * n > this.buf.length) throw new Error(`GGUF: tensor ${name} extends past end of file`);
      for (let i = 0; i < n; i++) out[i] = halfToFloat(this.buf.readUInt16LE(start + 2 * i));
    } else {
      throw new Error(
        `GGUF: tensor ${name} has type ${ggmlTypeName(t.type)} (${t.type}); only F32 and F16 are supported by the reference`,
      );
    }
    return out;
  }
}
