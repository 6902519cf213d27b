/**
 * The SnapKV graph against the context's graph budget (patch 0010). llama.cpp sizes a context's
 * graph to max_nodes (`llama_context::graph_max_nodes`: max(1024, 8 · n_tensors)): the graph holds
 * that many nodes and leafs, its metadata buffer that many tensors, and the scheduler's hash set
 * n_nodes + n_leafs of one graph; a SnapKV graph over it aborted the process
 * (`GGML_ASSERT(obj_new)`, seen on a 40-KV-head model whose old estimate, ~12 nodes per scoring chunk,
 * missed the 13th and the sinks' two). The engine now counts a dry build of the same graph and
 * runs every layer in one graph when it fits, else in as few runs of consecutive layers as fit, each
 * with as few KV heads per scoring chunk as fit. `LLAMA_SNAPKV_MAX_NODES` lowers the budget here.
 *
 * Independent check of the count: `footprint` below adds up the graph's ops by hand, one line a
 * group, from llama-snapkv-score.cpp and llama-snapkv-compact.cpp; the runs and chunk sizes the
 * engine reports (`graphs`, `chunkHeads`) must be the ones that count gives under each budget, and
 * every split must leave the results bit-identical to one graph (CPU, F32 cache): kept positions,
 * pooled scores, and the logits of the next token on the compacted cache. A budget below one layer's
 * graph is refused with the count in the message, and the cache is left as it was.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModel, type EngineModel } from '../../src/engine/model';
import { createSession, type EngineSession } from '../../src/engine/session';
import { ensureSyntheticModel, type SyntheticShape } from '../../src/engine/synthetic';

const L = 160;
const W = 16;
const B = 48;
const N_HEAD_KV = 40;
const prompt = Array.from({ length: L }, (_, i) => ((i * 37 + 11) % 500) + 3);

interface Shape {
  name: string;
  shape: SyntheticShape;
  /** Layers SnapKV scores (the global ones of an interleaved sliding-window model). */
  nScored: number;
  sinks: boolean;
}

const SHAPES: Shape[] = [
  {
    name: 'llama, 4 layers',
    shape: { architecture: 'llama', nLayer: 4, nEmbd: 640, nHead: 80, nHeadKv: N_HEAD_KV, nFf: 64, nVocab: 512, weightType: 'f32', seed: 9 },
    nScored: 4,
    sinks: false,
  },
  {
    name: 'gpt-oss with attention sinks, 2 global of 4 layers',
    shape: {
      architecture: 'gpt-oss', slidingWindow: 128, nLayer: 4, nEmbd: 640, nHead: 80, nHeadKv: N_HEAD_KV, nFf: 64,
      nExpert: 4, nExpertUsed: 2, sinkLogits: Array.from({ length: 4 * 80 }, (_, i) => [-1e4, 2, 4, 6][i % 4]!), nVocab: 512, weightType: 'f32', seed: 9,
    },
    nScored: 2,
    sinks: true,
  },
];

/**
 * Nodes + leafs of the graph of `layers` layers scored in `chunks` chunks each, counted by hand
 * (a contiguous F32 cache, one sequence: the keys and values are views of the cache):
 * - per layer: the keys' view (1); the window queries' get_rows, view, permute, cont (4); per chunk
 *   the keys' and queries' views, mul_mat, reshape, diag_mask_inf, soft_max, reshape, permute, cont,
 *   reshape, sum_rows, reshape (12), a concat from the second chunk on (+1), and with sinks their
 *   view (+1) and, from the second chunk on, its cont (+1); scale, view, cont (3) and the pooling
 *   kernel's pool_1d when it is > 1 (+1); the top-k: the window bias's view, concat, top_k, cast,
 *   argsort, reshape, get_rows, reshape (8); the keys' get_rows, destination view, set_rows (3); the
 *   values: with flash attention off the cache's V is transposed (view, transpose, cont, view,
 *   get_rows, reshape, the V stream's view and reshape, set_rows: 9), else (view, get_rows, view,
 *   set_rows: 4);
 * - leafs per layer: the K and V tensors and the captured window queries (3), the sinks (+1);
 *   shared: the window's rows, the window bias, the destination cells (3), and the destination
 *   elements of a transposed V (+1).
 */
function footprint(s: Shape, fa: 'on' | 'off', kernel: number, layers: number, chunks: number): number {
  const chunkNodes = 12 * chunks + (chunks - 1) + (s.sinks ? chunks + (chunks - 1) : 0);
  const nodes = 1 + 4 + chunkNodes + 3 + (kernel > 1 ? 1 : 0) + 8 + 3 + (fa === 'off' ? 9 : 4);
  const leafs = 3 + (s.sinks ? 1 : 0);
  return layers * (nodes + leafs) + 3 + (fa === 'off' ? 1 : 0);
}

/** The runs the engine should make under `limit`: one graph when every layer fits, else the most
 *  consecutive layers that fit; in each, the fewest KV heads per chunk that fit. */
function plan(s: Shape, fa: 'on' | 'off', kernel: number, limit: number): { graphs: number; chunkHeads: number } | 'refused' {
  const fits = (layers: number, heads: number) => footprint(s, fa, kernel, layers, Math.ceil(N_HEAD_KV / heads)) <= limit;
  if (!fits(1, N_HEAD_KV)) return 'refused';
  let graphs = 0;
  let chunkHeads = 0;
  for (let l0 = 0; l0 < s.nScored; graphs++) {
    let n = s.nScored - l0;
    while (!fits(n, N_HEAD_KV)) n--;
    let heads = 1;
    while (!fits(n, heads)) heads++;
    chunkHeads = Math.max(chunkHeads, heads);
    l0 += n;
  }
  return { graphs, chunkHeads };
}

const LIMITS = [1000, 500, 300, 200, 120, 100, 80, 60, 40];

function withBudget<T>(limit: number | undefined, f: () => Promise<T>): Promise<T> {
  if (limit === undefined) delete process.env.LLAMA_SNAPKV_MAX_NODES;
  else process.env.LLAMA_SNAPKV_MAX_NODES = String(limit);
  return f().finally(() => delete process.env.LLAMA_SNAPKV_MAX_NODES);
}

for (const s of SHAPES) {
  describe(`SnapKV graph budget: ${s.name}, ${N_HEAD_KV} KV heads`, () => {
    let dir: string;
    let model: EngineModel;

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-budget-'));
      model = await loadModel(await ensureSyntheticModel(dir, s.shape));
    });
    after(() => {
      model.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    const open = async (fa: 'on' | 'off'): Promise<EngineSession> => {
      const session = createSession(model, { contextSize: 512, snapWindow: W, threads: 1, threadsBatch: 1, flashAttention: fa, kvCacheType: 'f32' });
      await session.prefill(prompt.slice(0, L));
      return session;
    };

    for (const fa of ['off', 'on'] as const) {
      for (const kernel of [1, 7]) {
        test(`flash attention ${fa}, kernel ${kernel}: the runs and chunks of the hand count, results identical to one graph`, async () => {
          // one graph under the context's own budget
          const one = await open(fa);
          let base: { kept: Int32Array; scores: Float32Array; logits: Float32Array };
          try {
            const r = await withBudget(undefined, () => one.snap({ window: W, budget: B, kernel, pooling: 'max', keepScores: true }));
            assert.equal(r.compacted, true);
            assert.equal(r.graphs, 1);
            base = { kept: one.snapKept(), scores: one.snapScores(), logits: await one.step(7) };
          } finally {
            one.dispose();
          }
          for (const limit of LIMITS) {
            const want = plan(s, fa, kernel, limit);
            const session = await open(fa);
            try {
              if (want === 'refused') {
                const before = session.stats().cells;
                await assert.rejects(
                  withBudget(limit, () => session.snap({ window: W, budget: B, kernel, pooling: 'max' })),
                  new RegExp(`the SnapKV graph of one layer takes ${footprint(s, fa, kernel, 1, 1)} nodes and leafs, more than the context's graph holds \\(${limit}\\)`),
                );
                assert.equal(session.stats().cells, before, 'a refused compaction leaves the cache as it was');
                continue;
              }
              const r = await withBudget(limit, () => session.snap({ window: W, budget: B, kernel, pooling: 'max', keepScores: true }));
              console.log(`# ${s.name}, flash attention ${fa}, kernel ${kernel}, budget ${limit}: ${r.graphs} graph run(s), ${r.chunkHeads} KV heads per chunk`);
              assert.deepEqual({ graphs: r.graphs, chunkHeads: r.chunkHeads }, want, `budget ${limit}`);
              assert.deepEqual(session.snapKept(), base.kept, `budget ${limit}: kept positions`);
              assert.deepEqual(session.snapScores(), base.scores, `budget ${limit}: pooled scores`);
              assert.deepEqual(await session.step(7), base.logits, `budget ${limit}: next-token logits on the compacted cache`);
            } finally {
              session.dispose();
            }
          }
        });
      }
    }
  });
}
