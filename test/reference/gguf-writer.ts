/**
 * Minimal GGUF v3 writer, the inverse of ./gguf: used by tests to build
 * synthetic llama models (F32 / F16 weights) and to round-trip every metadata
 * value type. Tensor data is laid out in the given order, each tensor padded
 * to the alignment (`general.alignment` when given among the metadata, else 32).
 */
import { writeFileSync } from 'node:fs';
import { GGMLType, GGUFValueType, ggmlTypeName } from './gguf';
import type { GGUFValue } from './gguf';

/** One metadata entry to write (same shape as the reader's GGUFMetadataEntry). */
export interface GGUFWriteEntry {
  /** Key, e.g. "llama.block_count". */
  key: string;
  /** Value type. */
  type: GGUFValueType;
  /** Element type when `type === ARRAY`. */
  arrayType?: GGUFValueType;
  /** Value (for ARRAY: a JS array of element values; 64-bit ints as number or bigint). */
  value: GGUFValue;
}

/** One tensor to write. */
export interface GGUFWriteTensor {
  /** Tensor name. */
  name: string;
  /** Dimensions fastest-first [ne0, ne1, ...]. */
  dims: number[];
  /** F32 or F16. */
  type: GGMLType;
  /** Elements in storage order (ne0 fastest): [ne0*ne1*...]. F16 values are rounded to nearest-even. */
  data: ArrayLike<number>;
}

/** Rounds x to the nearest integer, ties to even. */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

/**
 * Encodes a number as IEEE-754 binary16 bits (round to nearest, ties to even;
 * overflow → ±Inf, NaN → 0x7e00). Inverse of `halfToFloat` on representable values.
 */
export function floatToHalf(v: number): number {
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a >= 65520) return sign | 0x7c00; // ≥ max half + half ulp rounds to Inf
  if (a < 2 ** -14) return sign | roundHalfEven(a * 2 ** 24); // subnormal (1024 → smallest normal, still correct bits)
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  else if (2 ** (e + 1) <= a) e++;
  let m = roundHalfEven((a / 2 ** e - 1) * 1024);
  if (m === 1024) {
    m = 0;
    e++;
  }
  if (e > 15) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | m;
}

/** Growable little-endian byte sink. */
class Sink {
  private chunks: Buffer[] = [];
  length = 0;
  push(b: Buffer): void { this.chunks.push(b); this.length += b.length; }
  u8(v: number): void { const b = Buffer.alloc(1); b.writeUInt8(v); this.push(b); }
  i8(v: number): void { const b = Buffer.alloc(1); b.writeInt8(v); this.push(b); }
  u16(v: number): void { const b = Buffer.alloc(2); b.writeUInt16LE(v); this.push(b); }
  i16(v: number): void { const b = Buffer.alloc(2); b.writeInt16LE(v); this.push(b); }
  u32(v: number): void { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v: number): void { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  f32(v: number): void { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  f64(v: number): void { const b = Buffer.alloc(8); b.writeDoubleLE(v); this.push(b); }
  u64(v: number | bigint): void { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  i64(v: number | bigint): void { const b = Buffer.alloc(8); b.writeBigInt64LE(BigInt(v)); this.push(b); }
  str(s: string): void { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  pad(align: number): void { const r = this.length % align; if (r !== 0) this.push(Buffer.alloc(align - r)); }
  concat(): Buffer { return Buffer.concat(this.chunks, this.length); }
}

/** Writes one value of type `type` (with `arrayType` for arrays). */
function writeValue(s: Sink, type: GGUFValueType, value: GGUFValue, arrayType?: GGUFValueType): void {
  const num = (): number => {
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    throw new Error(`GGUF writer: expected a number, got ${typeof value}`);
  };
  switch (type) {
    case GGUFValueType.UINT8: return s.u8(num());
    case GGUFValueType.INT8: return s.i8(num());
    case GGUFValueType.UINT16: return s.u16(num());
    case GGUFValueType.INT16: return s.i16(num());
    case GGUFValueType.UINT32: return s.u32(num());
    case GGUFValueType.INT32: return s.i32(num());
    case GGUFValueType.FLOAT32: return s.f32(num());
    case GGUFValueType.FLOAT64: return s.f64(num());
    case GGUFValueType.UINT64: return s.u64(typeof value === 'bigint' ? value : num());
    case GGUFValueType.INT64: return s.i64(typeof value === 'bigint' ? value : num());
    case GGUFValueType.BOOL: return s.u8(value ? 1 : 0);
    case GGUFValueType.STRING:
      if (typeof value !== 'string') throw new Error('GGUF writer: expected a string');
      return s.str(value);
    case GGUFValueType.ARRAY: {
      if (!Array.isArray(value) || arrayType === undefined) throw new Error('GGUF writer: ARRAY needs an array value and arrayType');
      s.u32(arrayType);
      s.u64(value.length);
      for (const v of value) writeValue(s, arrayType, v);
      return;
    }
    default:
      throw new Error(`GGUF writer: unknown value type ${String(type)}`);
  }
}

/** Encodes a GGUF v3 file: metadata entries then tensors (infos + aligned data). */
export function encodeGGUF(metadata: GGUFWriteEntry[], tensors: GGUFWriteTensor[]): Buffer {
  const alignEntry = metadata.find((e) => e.key === 'general.alignment');
  const alignment = alignEntry === undefined ? 32 : Number(alignEntry.value);

  const data = new Sink();
  const offsets: number[] = [];
  for (const t of tensors) {
    const n = t.dims.reduce((a, b) => a * b, 1);
    if (t.data.length !== n) throw new Error(`GGUF writer: tensor ${t.name} has ${t.data.length} values, dims say ${n}`);
    data.pad(alignment);
    offsets.push(data.length);
    if (t.type === GGMLType.F32) {
      const b = Buffer.alloc(4 * n);
      for (let i = 0; i < n; i++) b.writeFloatLE(t.data[i]!, 4 * i);
      data.push(b);
    } else if (t.type === GGMLType.F16) {
      const b = Buffer.alloc(2 * n);
      for (let i = 0; i < n; i++) b.writeUInt16LE(floatToHalf(t.data[i]!), 2 * i);
      data.push(b);
    } else {
      throw new Error(`GGUF writer: tensor type ${ggmlTypeName(t.type)} not supported`);
    }
  }

  const head = new Sink();
  head.push(Buffer.from('GGUF', 'latin1'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.length);
  for (const e of metadata) {
    head.str(e.key);
    head.u32(e.type);
    writeValue(head, e.type, e.value, e.arrayType);
  }
  tensors.forEach((t, i) => {
    head.str(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(t.type);
    head.u64(offsets[i]!);
  });
  head.pad(alignment);
  return Buffer.concat([head.concat(), data.concat()]);
}

/** Encodes with {@link encodeGGUF} and writes the file to `path`. */
export function writeGGUF(path: string, metadata: GGUFWriteEntry[], tensors: GGUFWriteTensor[]): void {
  writeFileSync(path, encodeGGUF(metadata, tensors));
}
