/**
 * Float64 reference of SnapKV prompt-KV selection: window attention scores,
 * GQA mean, 1-D pooling (ggml pool_1d semantics) and top-k selection.
 *
 * Works on any captured attention data with the {@link AttentionCapture} shape
 * (a `RefState` from llama-ref satisfies it), so it can be unit-tested with
 * hand-made queries and keys.
 */

/** Pooling applied over the prefix scores. */
export type SnapKVPooling = 'max' | 'avg';

/** SnapKV scoring parameters. */
export interface SnapKVOptions {
  /** Observation window w: the last w prompt tokens whose queries score the prefix (1 ≤ w ≤ L). */
  window: number;
  /** Pooling kernel size k ≥ 1 (stride 1, padding floor(k/2)). */
  kernel: number;
  /** Pooling kind. */
  pooling: SnapKVPooling;
}

/**
 * The post-RoPE queries and keys of a prompt.
 * Q: [n_layer][n_head][L][head_dim]; K: [n_layer][n_head_kv][≥L][head_dim]
 * (only the first `promptLength` keys are read). Query head h belongs to KV
 * head floor(h / (n_head / n_head_kv)).
 */
export interface AttentionCapture {
  /** Number of query heads per layer. */
  nHead: number;
  /** Number of KV heads per layer (divides nHead). */
  nHeadKv: number;
  /** Head size; attention scale is 1/sqrt(headDim). */
  headDim: number;
  /** Prompt length L. */
  promptLength: number;
  /** Post-RoPE queries [n_layer][n_head][L][head_dim]. */
  Q: Float64Array[][][];
  /** Post-RoPE keys [n_layer][n_head_kv][≥L][head_dim]. */
  K: Float64Array[][][];
  /**
   * Learned attention sinks [n_layer][n_head] (gpt-oss): query head h's logit e^(sinks[l][h]) joins
   * each of its softmax denominators, unscaled and with no key of its own (llama.cpp's
   * `ggml_soft_max_add_sinks`). Absent: no sinks.
   */
  sinks?: Float64Array[];
}

/**
 * 1-D pooling with stride 1 and padding p = floor(k/2), returning the first
 * x.length outputs: out[j] pools the in-range inputs x[i] for
 * i ∈ [j - p, j - p + k) ∩ [0, n). 'max' ignores out-of-range positions;
 * 'avg' divides by the number of IN-RANGE positions (ggml pool_1d semantics,
 * not PyTorch's count_include_pad). For odd k the window is centred on j.
 * x: [n] → out: [n].
 */
export function pool1d(x: Float64Array, kernel: number, pooling: SnapKVPooling): Float64Array {
  if (!Number.isInteger(kernel) || kernel < 1) throw new Error(`pool1d: kernel must be an integer ≥ 1, got ${kernel}`);
  const n = x.length;
  const p = Math.floor(kernel / 2);
  const out = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    const lo = Math.max(0, j - p);
    const hi = Math.min(n, j - p + kernel);
    if (pooling === 'max') {
      let m = -Infinity;
      for (let i = lo; i < hi; i++) if (x[i]! > m) m = x[i]!;
      out[j] = m;
    } else if (pooling === 'avg') {
      let s = 0;
      for (let i = lo; i < hi; i++) s += x[i]!;
      out[j] = s / (hi - lo);
    } else {
      throw new Error(`pool1d: unknown pooling ${String(pooling)}`);
    }
  }
  return out;
}

/**
 * Unpooled SnapKV scores. For layer l, KV head g and prefix position
 * j ∈ [0, L-w): mean over the query heads h of g's GQA group of
 * Σ_{t ∈ [L-w, L)} softmax_{j' ≤ t}(q_t·k_j' / sqrt(head_dim))[j],
 * with e^(cap.sinks[l][h]) added to each softmax's denominator when the capture has sinks.
 * Returns [n_layer][n_head_kv] Float64Array of length L-w.
 */
export function snapkvRawScores(cap: AttentionCapture, window: number): Float64Array[][] {
  const L = cap.promptLength;
  if (!Number.isInteger(window) || window < 1 || window > L) {
    throw new Error(`snapkv: window must be an integer in [1, L=${L}], got ${window}`);
  }
  if (cap.nHead % cap.nHeadKv !== 0) throw new Error(`snapkv: n_head ${cap.nHead} not a multiple of n_head_kv ${cap.nHeadKv}`);
  const group = cap.nHead / cap.nHeadKv;
  const nPrefix = L - window;
  const scale = 1 / Math.sqrt(cap.headDim);
  const nLayer = cap.Q.length;
  const out: Float64Array[][] = [];
  const att = new Float64Array(L);
  for (let l = 0; l < nLayer; l++) {
    const perLayer: Float64Array[] = [];
    for (let g = 0; g < cap.nHeadKv; g++) {
      const acc = new Float64Array(nPrefix);
      const keys = cap.K[l]![g]!;
      for (let r = 0; r < group; r++) {
        const h = g * group + r;
        const sink = cap.sinks === undefined ? -Infinity : cap.sinks[l]![h]!;
        for (let t = L - window; t < L; t++) {
          const q = cap.Q[l]![h]![t]!;
          let mx = sink;
          for (let j = 0; j <= t; j++) {
            const k = keys[j]!;
            let s = 0;
            for (let d = 0; d < cap.headDim; d++) s += q[d]! * k[d]!;
            s *= scale;
            att[j] = s;
            if (s > mx) mx = s;
          }
          let sum = Math.exp(sink - mx);
          for (let j = 0; j <= t; j++) {
            const e = Math.exp(att[j]! - mx);
            att[j] = e;
            sum += e;
          }
          for (let j = 0; j < nPrefix; j++) acc[j]! += att[j]! / sum;
        }
      }
      for (let j = 0; j < nPrefix; j++) acc[j] = acc[j]! / group;
      perLayer.push(acc);
    }
    out.push(perLayer);
  }
  return out;
}

/**
 * Pooled SnapKV importance of each prefix position: {@link snapkvRawScores}
 * followed by {@link pool1d} with the given kernel and pooling.
 * Returns scores[l][kvHead]: Float64Array of length L-w ([n_layer][n_head_kv][L-w]).
 */
export function snapkvScores(cap: AttentionCapture, opts: SnapKVOptions): Float64Array[][] {
  return snapkvRawScores(cap, opts.window).map((perLayer) =>
    perLayer.map((s) => pool1d(s, opts.kernel, opts.pooling)),
  );
}

/** Result of {@link snapkvSelect}. */
export interface SnapKVSelection {
  /**
   * Kept prompt positions [n_layer][n_head_kv][min(B, L)], ascending: the top
   * (B-w) prefix positions by pooled score (ties broken by lower position) plus
   * the whole window [L-w, L).
   */
  kept: number[][][];
  /**
   * Score gap at the selection boundary [n_layer][n_head_kv]: (B-w)-th largest
   * prefix score minus the (B-w+1)-th. Infinity when nothing or everything in
   * the prefix is kept (no boundary). A gap near 0 means the choice is a tie.
   */
  gap: number[][];
}

/**
 * SnapKV selection from pooled scores ([n_layer][n_head_kv][L-w]) with budget
 * B (cells kept per layer and KV head, window included; w ≤ B). When B ≥ L
 * every position is kept.
 */
export function snapkvSelect(scores: Float64Array[][], budget: number, window: number, L: number): SnapKVSelection {
  if (!Number.isInteger(budget) || budget < window) throw new Error(`snapkv: budget ${budget} must be an integer ≥ window ${window}`);
  const nPrefix = L - window;
  const k = Math.min(budget - window, nPrefix);
  const kept: number[][][] = [];
  const gap: number[][] = [];
  for (const perLayer of scores) {
    const keptL: number[][] = [];
    const gapL: number[] = [];
    for (const s of perLayer) {
      if (s.length !== nPrefix) throw new Error(`snapkv: scores have length ${s.length}, expected L-w = ${nPrefix}`);
      const order = Array.from({ length: nPrefix }, (_, i) => i).sort((a, b) => s[b]! - s[a]! || a - b);
      const sel = order.slice(0, k);
      gapL.push(k > 0 && k < nPrefix ? s[order[k - 1]!]! - s[order[k]!]! : Infinity);
      for (let t = nPrefix; t < L; t++) sel.push(t);
      sel.sort((a, b) => a - b);
      keptL.push(sel);
    }
    kept.push(keptL);
    gap.push(gapL);
  }
  return { kept, gap };
}

/**
 * Turns kept positions ([n_layer][n_head_kv][*]) into a `visible(layer, kvHead, keyPos)`
 * predicate for `LlamaReference.decode`.
 */
export function keptToVisible(kept: number[][][]): (layer: number, kvHead: number, keyPos: number) => boolean {
  const sets = kept.map((perLayer) => perLayer.map((k) => new Set(k)));
  return (layer, kvHead, keyPos) => sets[layer]![kvHead]!.has(keyPos);
}
