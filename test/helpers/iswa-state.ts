/**
 * Helpers for the interleaved sliding-window (iSWA) tests (test/engine/iswa*.test.ts): the
 * reference "uncompressed cache with the dropped global-layer keys hidden", built by editing a
 * llama.cpp sequence state, and a logits distance.
 */
import assert from 'node:assert/strict';

/** What withSnapMask needs to know about the compacted base (global-layer) cache. */
export interface SnapMaskShape {
  /** Prompt length: the uncompressed base cache holds positions 0 … L - 1 in cells 0 … L - 1. */
  L: number;
  /** Kept positions per (global layer, KV head) row. */
  B: number;
  /** Global layers in the base cache (n_layer_base). */
  nGlobal: number;
  /** KV heads per layer. */
  nHeadKv: number;
}

/**
 * Inserts a version-1 SnapKV mask section into an uncompressed iSWA sequence state, hiding from
 * each global (layer, KV head) the positions it did not keep (`kept`: rows of B ascending positions,
 * row = global layer · n_head_kv + KV head, as `EngineSession.snapKept()` returns them).
 * The state (llama_state_seq_get_data, llama_kv_cache_iswa::state_write): u32 magic, i32 seq_id,
 * then the base cache (u32 n_stream = 1, u32 cell count, per cell i32 pos, u32 n_seq_id = 1,
 * i32 seq_id; then K/V data), then the sliding-window cache. The section goes right after the
 * base's cell meta: u32 "SKVM", u32 version 1, u32 stride = n_layer_base · n_head_kv, then stride
 * bytes (1 = hidden) per cell (patch 0003's state section, read by state_read_meta).
 * @throws AssertionError when the state is not one stream of L cells at positions 0 … L - 1.
 */
export function withSnapMask(state: Uint8Array, kept: Int32Array, shape: SnapMaskShape): Buffer {
  const { L, B, nGlobal, nHeadKv } = shape;
  const b = Buffer.from(state.buffer, state.byteOffset, state.byteLength);
  assert.equal(b.readUInt32LE(8), 1, 'one stream');
  const cells = b.readUInt32LE(12);
  assert.equal(cells, L, 'the uncompressed base cache holds every position');
  const metaEnd = 16 + 12 * cells;
  for (let i = 0; i < cells; i++) assert.equal(b.readInt32LE(16 + 12 * i), i, 'cell i holds position i');
  assert.ok(b.readUInt32LE(metaEnd) <= 1, 'v_trans follows the meta (no mask section yet)');
  const stride = nGlobal * nHeadKv;
  assert.equal(kept.length, stride * B, 'B kept positions per global (layer, KV head)');
  const mask = Buffer.alloc(12 + cells * stride);
  mask.writeUInt32LE(0x4d564b53, 0);
  mask.writeUInt32LE(1, 4);
  mask.writeUInt32LE(stride, 8);
  for (let r = 0; r < stride; r++) {
    const row = new Set(kept.subarray(r * B, (r + 1) * B));
    for (let p = 0; p < cells; p++) mask[12 + p * stride + r] = row.has(p) ? 0 : 1;
  }
  return Buffer.concat([b.subarray(0, metaEnd), mask, b.subarray(metaEnd)]);
}

/** The largest |a[i][v] − b[i][v]| over decode steps i and vocabulary entries v (logits). */
export function maxAbsDiff(a: Float32Array[], b: Float32Array[]): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) {
    assert.equal(a[i]!.length, b[i]!.length);
    for (let v = 0; v < a[i]!.length; v++) d = Math.max(d, Math.abs(a[i]![v]! - b[i]![v]!));
  }
  return d;
}
