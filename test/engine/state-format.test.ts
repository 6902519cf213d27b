/**
 * The byte layout of a sequence state (`llama_state_seq_get_data`) under the SnapKV patch series:
 * without a per-head mask it is upstream llama.cpp's layout byte for byte (no extra section); a
 * cache whose heads keep different numbers of rows adds one versioned section ("SKVM", version 1)
 * between the cell meta and the K/V data, which round-trips exactly, and a version this engine
 * does not know is refused with a message that names both versions.
 *
 * The layout is parsed here independently of the engine, from upstream's
 * `llama_kv_cache::state_write` (unified cache, one stream, no cell extension on a llama model):
 *   u32 magic 0xaf143cd8 | i32 seq_id (llama_context::state_seq_get_data)
 *   | u32 n_stream | u32 cell_count | cell_count × (i32 pos, u32 n_seq_id = 1, i32 seq_id)
 *   | u32 v_trans | u32 n_layer | n_layer × (i32 k_type, u64 k_row_bytes, cell_count × k_row_bytes)
 *   | V: n_layer × (i32 v_type, u64 v_row_bytes, rows) when !v_trans,
 *        n_layer × (i32 v_type, u32 v_el_bytes, u32 n_embd_v_gqa, n_embd_v_gqa × cell_count × v_el_bytes) when v_trans
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { loadAddon, type NativeSession } from '../../src/engine/native';
import { checkTinyModel, STORY } from '../helpers/models';

let model: EngineModel;
let prompt: Int32Array;

// stories260K: 5 layers, 8 query heads, 4 KV heads, head size 8 (from its GGUF header)
const N_LAYER = 5;
const N_HEAD_KV = 4;
const N_EMBD_KV = 32; // n_head_kv × head size, for K and V
const F16 = 1; // ggml_type GGML_TYPE_F16
const MAGIC = 0x4d564b53; // "SKVM" little-endian

before(async () => {
  model = await loadModel(checkTinyModel());
  prompt = model.tokenize(STORY, { addSpecial: true });
});
after(() => model.dispose());

function session(flashAttention: 'on' | 'off'): NativeSession {
  return new (loadAddon().Session)(model.native, { contextSize: 1024, seqMax: 1, threads: 1, threadsBatch: 1, flashAttention, typeK: 'f16', typeV: 'f16' });
}

async function prefill(s: NativeSession, toks: Int32Array): Promise<void> {
  for (let i = 0; i < toks.length; i += 256) await s.decode(toks.subarray(i, Math.min(toks.length, i + 256)), i, 0, 'last');
}

/** Where the parts of a state lie; throws when the bytes do not follow the layout above. */
interface Parsed {
  cells: number;
  positions: number[];
  /** Offset just after the cell meta: where a SnapKV section, if any, starts. */
  metaEnd: number;
  /** The mask section (per written cell, stride bytes), or null. */
  mask: { version: number; stride: number; bytes: Buffer } | null;
  vTrans: number;
}

function parse(buf: Buffer, expectMask: boolean): Parsed {
  let o = 0;
  const u32 = () => ((o += 4), buf.readUInt32LE(o - 4));
  const i32 = () => ((o += 4), buf.readInt32LE(o - 4));
  const u64 = () => ((o += 8), Number(buf.readBigUInt64LE(o - 8)));
  assert.equal(u32(), 0xaf143cd8, 'the sequence state magic');
  assert.equal(i32(), 0, 'seq_id');
  assert.equal(u32(), 1, 'n_stream');
  const cells = u32();
  const positions: number[] = [];
  for (let i = 0; i < cells; i++) {
    positions.push(i32());
    assert.equal(u32(), 1, `n_seq_id of cell ${i}`);
    assert.equal(i32(), 0, `seq_id of cell ${i}`);
  }
  const metaEnd = o;
  let mask: Parsed['mask'] = null;
  if (expectMask) {
    assert.equal(u32(), MAGIC, 'the SnapKV section magic');
    const version = u32();
    const stride = u32();
    mask = { version, stride, bytes: buf.subarray(o, o + cells * stride) };
    o += cells * stride;
  }
  const vTrans = u32();
  assert.ok(vTrans === 0 || vTrans === 1, `v_trans = ${vTrans}: not upstream's layout here`);
  assert.equal(u32(), N_LAYER, 'n_layer');
  for (let l = 0; l < N_LAYER; l++) {
    assert.equal(i32(), F16, `k_type of layer ${l}`);
    assert.equal(u64(), N_EMBD_KV * 2, `k row bytes of layer ${l}`);
    o += cells * N_EMBD_KV * 2;
  }
  for (let l = 0; l < N_LAYER; l++) {
    assert.equal(i32(), F16, `v_type of layer ${l}`);
    if (vTrans) {
      assert.equal(u32(), 2, `v element bytes of layer ${l}`);
      assert.equal(u32(), N_EMBD_KV, `n_embd_v_gqa of layer ${l}`);
    } else {
      assert.equal(u64(), N_EMBD_KV * 2, `v row bytes of layer ${l}`);
    }
    o += cells * N_EMBD_KV * 2;
  }
  assert.equal(o, buf.length, 'the state ends where the layout ends');
  return { cells, positions, metaEnd, mask, vTrans };
}

/** Upstream's byte count for `cells` cells of this model (the layout above). */
function upstreamBytes(cells: number, vTrans: boolean): number {
  const meta = 8 + 8 + cells * 12;
  const k = N_LAYER * (4 + 8 + cells * N_EMBD_KV * 2);
  const v = N_LAYER * (vTrans ? 4 + 4 + 4 : 4 + 8) + N_LAYER * cells * N_EMBD_KV * 2;
  return meta + 8 + k + v;
}

for (const fa of ['off', 'on'] as const) {
  test(`without a per-head mask a state is upstream's layout, byte for byte (uncompressed and uniform SnapKV, flash attention ${fa})`, async () => {
    const s = session(fa);
    try {
      s.snapCapture(0, 16);
      await prefill(s, prompt);
      const full = await s.stateGet(0);
      assert.equal(full.length, upstreamBytes(prompt.length, fa === 'off'));
      const p = parse(full, false);
      assert.equal(p.vTrans, fa === 'off' ? 1 : 0);
      assert.deepEqual(p.positions, Array.from({ length: prompt.length }, (_, i) => i));

      // a uniform budget hides nothing per head: still no section
      const r = await s.snap(0, { window: 16, budget: 64, kernel: 5, pooling: 'max' });
      assert.equal(r.status, loadAddon().snapStatus.ok, r.error);
      const snapped = await s.stateGet(0);
      assert.equal(snapped.length, upstreamBytes(64, fa === 'off'));
      const q = parse(snapped, false);
      // the window keeps its 16 true positions, in the last cells
      assert.deepEqual(q.positions.slice(48), Array.from({ length: 16 }, (_, i) => prompt.length - 16 + i));
    } finally {
      s.dispose();
    }
  });
}

/**
 * Per-head rows [layer][KV head] of different lengths (each ascending, the last position kept by
 * all): head h of layer l keeps every (h + l % 2 + 2)-th position, plus the last one.
 */
function raggedRows(L: number): { rows: number[][][]; C: number; flat: Int32Array } {
  const rows: number[][][] = [];
  for (let l = 0; l < N_LAYER; l++) {
    rows.push([]);
    for (let h = 0; h < N_HEAD_KV; h++) {
      const step = h + (l % 2) + 2;
      const k = Array.from({ length: L }, (_, i) => i).filter((i) => i % step === 0 && i < L - 1);
      k.push(L - 1);
      rows[l]!.push(k);
    }
  }
  const C = Math.max(...rows.flat().map((k) => k.length));
  const flat = new Int32Array(N_LAYER * N_HEAD_KV * C).fill(-1);
  rows.forEach((layer, l) => layer.forEach((k, h) => flat.set(k, (l * N_HEAD_KV + h) * C)));
  return { rows, C, flat };
}

test('a state with per-head masks carries a version-1 section, round-trips exactly, and decodes identically after reload', async () => {
  const { rows, C, flat } = raggedRows(prompt.length);
  const a = session('off');
  const b = session('off');
  try {
    await prefill(a, prompt);
    const r = await a.compactKept(0, C, flat);
    assert.equal(r.status, loadAddon().snapStatus.ok, r.error);
    assert.equal(r.B, C);

    const bytes = await a.stateGet(0);
    const p = parse(bytes, true);
    assert.equal(p.cells, C);
    assert.equal(p.mask!.version, 1);
    assert.equal(p.mask!.stride, N_LAYER * N_HEAD_KV);
    // slot j of (layer l, KV head h) is hidden from it exactly when the head kept fewer than j + 1 rows
    for (let j = 0; j < C; j++) {
      for (let l = 0; l < N_LAYER; l++) {
        for (let h = 0; h < N_HEAD_KV; h++) {
          assert.equal(p.mask!.bytes[j * N_LAYER * N_HEAD_KV + l * N_HEAD_KV + h], j >= rows[l]![h]!.length ? 1 : 0, `cell ${j}, layer ${l}, head ${h}`);
        }
      }
    }
    assert.equal(bytes.length, upstreamBytes(C, true) + 12 + C * N_LAYER * N_HEAD_KV);

    await b.stateSet(0, bytes);
    assert.ok((await b.stateGet(0)).equals(bytes), 'the reloaded state differs');
    const next = model.tokenize(' The end.');
    for (let i = 0; i < next.length; i++) {
      await a.decode(next.subarray(i, i + 1), prompt.length + i, 0, 'last');
      await b.decode(next.subarray(i, i + 1), prompt.length + i, 0, 'last');
      assert.deepEqual(b.logits(-1), a.logits(-1), `token ${i}`);
    }
  } finally {
    a.dispose();
    b.dispose();
  }
});

test('a per-head mask section of an unknown version is refused with both versions named, and the session stays usable', async () => {
  const { C, flat } = raggedRows(prompt.length);
  const a = session('off');
  const b = session('off');
  try {
    await prefill(a, prompt);
    assert.equal((await a.compactKept(0, C, flat)).status, loadAddon().snapStatus.ok);
    const bytes = await a.stateGet(0);
    const { metaEnd } = parse(bytes, true);
    const future = Buffer.from(bytes);
    future.writeUInt32LE(2, metaEnd + 4);
    await assert.rejects(b.stateSet(0, future), /version 2, this engine reads version 1/);
    assert.equal(b.kvStats(0).cells, 0, 'a refused state leaves no cells behind');
    await b.stateSet(0, bytes);
    assert.equal(b.kvStats(0).cells, C);
  } finally {
    a.dispose();
    b.dispose();
  }
});
