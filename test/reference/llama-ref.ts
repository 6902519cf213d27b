/**
 * Independent float64 reference forward pass of a llama-architecture GGUF model
 * (F32 / F16 weights), mirroring llama.cpp's LLM_ARCH_LLAMA graph:
 *
 *   x = token_embd[token]
 *   per layer: h = x + attn_output · Attn(RoPE(attn_q · n), RoPE(attn_k · n), attn_v · n),  n = RMSNorm(x) ⊙ attn_norm
 *              x = h + ffn_down · (silu(ffn_gate · m) ⊙ (ffn_up · m)),                         m = RMSNorm(h) ⊙ ffn_norm
 *   logits = output · (RMSNorm(x) ⊙ output_norm)      (output tied to token_embd when absent)
 *
 * RoPE is llama.cpp's NORM mode: adjacent pairs (x[2i], x[2i+1]) rotated by
 * pos · freq_scale · freq_base^(-2i/n_rot); dims ≥ n_rot pass through.
 * Attention: causal, GQA (query head h uses KV head floor(h / (n_head/n_head_kv))),
 * scale 1/sqrt(head_dim).
 *
 * The SnapKV scoring / selection helpers live in ./snapkv-ref and are re-exported here.
 */
import { matvec, rmsNorm } from './f64';
import { GGUFFile } from './gguf';

export {
  pool1d,
  snapkvRawScores,
  snapkvScores,
  snapkvSelect,
  keptToVisible,
} from './snapkv-ref';
export type { AttentionCapture, SnapKVOptions, SnapKVPooling, SnapKVSelection } from './snapkv-ref';

/** Hyper-parameters read from the GGUF metadata (keys `llama.*`). */
export interface LlamaHParams {
  /** Vocabulary size (token_embd.weight ne1). */
  nVocab: number;
  /** Model width (`llama.embedding_length`). */
  nEmbd: number;
  /** Number of layers (`llama.block_count`). */
  nLayer: number;
  /** Query heads (`llama.attention.head_count`). */
  nHead: number;
  /** KV heads (`llama.attention.head_count_kv`, default nHead). */
  nHeadKv: number;
  /** Head size (`llama.attention.key_length`, default nEmbd / nHead). */
  headDim: number;
  /** FFN width (`llama.feed_forward_length`). */
  nFf: number;
  /** RMSNorm epsilon (`llama.attention.layer_norm_rms_epsilon`, as stored, f32 widened to f64). */
  rmsEps: number;
  /** RoPE base (`llama.rope.freq_base`, default 10000). */
  ropeFreqBase: number;
  /** RoPE position scale (1 / `llama.rope.scaling.factor` for linear scaling, else 1). */
  ropeFreqScale: number;
  /** Rotated dims per head (`llama.rope.dimension_count`, default headDim). */
  nRot: number;
  /** Training context length (`llama.context_length`), informational. */
  contextLength: number;
  /** True when `output.weight` is absent and logits use `token_embd.weight`. */
  tiedOutput: boolean;
}

/**
 * Mutable forward state of one sequence: the KV cache of the prompt (and of
 * decoded tokens appended after it) and the prompt's post-RoPE queries.
 */
export interface RefState {
  /** Number of layers. */
  nLayer: number;
  /** Query heads per layer. */
  nHead: number;
  /** KV heads per layer. */
  nHeadKv: number;
  /** Head size. */
  headDim: number;
  /** Prompt length L (cache entries [0, L) are the prompt, at positions 0..L-1). */
  promptLength: number;
  /** Tokens of all cache entries (prompt, then decoded): [n_cells]. */
  tokens: number[];
  /** RoPE position of each cache entry: [n_cells]. */
  positions: number[];
  /** Post-RoPE keys [n_layer][n_head_kv][n_cells][head_dim]. */
  K: Float64Array[][][];
  /** Values [n_layer][n_head_kv][n_cells][head_dim]. */
  V: Float64Array[][][];
  /** Post-RoPE queries of the prompt tokens [n_layer][n_head][L][head_dim]. */
  Q: Float64Array[][][];
  /** Logits of the last prompt token [n_vocab]. */
  logits: Float64Array;
  /** Logits of every prompt token [L][n_vocab], only when prefill was asked for them. */
  allLogits?: Float64Array[];
}

/** `visible(layer, kvHead, keyPos)`: whether prompt key `keyPos` (index in [0, L)) is attended to. */
export type Visibility = (layer: number, kvHead: number, keyPos: number) => boolean;

/** Weights of one layer, as float64, in ggml storage order. */
interface LayerWeights {
  attnNorm: Float64Array; // [n_embd]
  wq: Float64Array; // [n_head*head_dim][n_embd]
  wk: Float64Array; // [n_head_kv*head_dim][n_embd]
  wv: Float64Array; // [n_head_kv*head_dim][n_embd]
  wo: Float64Array; // [n_embd][n_head*head_dim]
  ffnNorm: Float64Array; // [n_embd]
  wGate: Float64Array; // [n_ff][n_embd]
  wUp: Float64Array; // [n_ff][n_embd]
  wDown: Float64Array; // [n_embd][n_ff]
}

/** Known global (non-layer) tensor names. */
const GLOBAL_TENSORS = new Set(['token_embd.weight', 'output_norm.weight', 'output.weight']);
/** Known per-layer tensor suffixes. */
const LAYER_TENSORS = new Set([
  'attn_norm.weight', 'attn_q.weight', 'attn_k.weight', 'attn_v.weight', 'attn_output.weight',
  'ffn_norm.weight', 'ffn_gate.weight', 'ffn_up.weight', 'ffn_down.weight',
]);

/** Float64 reference model. Construct with {@link LlamaReference.load}. */
export class LlamaReference {
  /** All hyper-parameters. */
  readonly hparams: LlamaHParams;
  private readonly tokEmbd: Float64Array; // [n_vocab][n_embd]
  private readonly outNorm: Float64Array; // [n_embd]
  private readonly output: Float64Array; // [n_vocab][n_embd]
  private readonly layers: LayerWeights[];
  /** inverse frequencies per rotated pair: [n_rot/2]. */
  private readonly invFreq: Float64Array;

  private constructor(gguf: GGUFFile) {
    const arch = gguf.getString('general.architecture');
    if (arch !== 'llama') throw new Error(`LlamaReference: architecture ${String(arch)} is not supported (only llama)`);
    const need = (key: string): number => {
      const v = gguf.getNumber(key);
      if (v === undefined) throw new Error(`LlamaReference: missing metadata ${key}`);
      return v;
    };
    const nEmbd = need('llama.embedding_length');
    const nLayer = need('llama.block_count');
    const nHead = need('llama.attention.head_count');
    const nHeadKv = gguf.getNumber('llama.attention.head_count_kv') ?? nHead;
    const headDim = gguf.getNumber('llama.attention.key_length') ?? nEmbd / nHead;
    const headDimV = gguf.getNumber('llama.attention.value_length') ?? headDim;
    if (headDimV !== headDim) throw new Error(`LlamaReference: key_length ${headDim} ≠ value_length ${headDimV} not supported`);
    if (!Number.isInteger(headDim)) throw new Error(`LlamaReference: head size ${headDim} is not an integer`);
    if (nHead % nHeadKv !== 0) throw new Error(`LlamaReference: n_head ${nHead} not a multiple of n_head_kv ${nHeadKv}`);
    const nFf = need('llama.feed_forward_length');
    const nRot = gguf.getNumber('llama.rope.dimension_count') ?? headDim;
    if (nRot % 2 !== 0 || nRot > headDim) throw new Error(`LlamaReference: bad rope.dimension_count ${nRot}`);
    const scalingType = gguf.getString('llama.rope.scaling.type') ?? 'none';
    let ropeFreqScale = 1;
    if (scalingType === 'linear') {
      ropeFreqScale = 1 / (gguf.getNumber('llama.rope.scaling.factor') ?? 1);
    } else if (scalingType !== 'none') {
      throw new Error(`LlamaReference: rope scaling ${scalingType} is not supported`);
    } else if (gguf.getNumber('llama.rope.scale_linear') !== undefined) {
      ropeFreqScale = 1 / gguf.getNumber('llama.rope.scale_linear')!;
    }

    for (const t of gguf.tensors) {
      const m = /^blk\.(\d+)\.(.+)$/.exec(t.name);
      const ok = m ? Number(m[1]) < nLayer && LAYER_TENSORS.has(m[2]!) : GLOBAL_TENSORS.has(t.name);
      if (!ok) throw new Error(`LlamaReference: unsupported tensor ${t.name} (not part of the plain llama graph)`);
    }

    const load = (name: string, dims: number[]): Float64Array => {
      const info = gguf.tensor(name);
      if (info === undefined) throw new Error(`LlamaReference: missing tensor ${name}`);
      const got = info.dims.join(',');
      if (got !== dims.join(',')) throw new Error(`LlamaReference: tensor ${name} has dims [${got}], expected [${dims.join(',')}]`);
      return gguf.readTensorF64(name);
    };

    const embInfo = gguf.tensor('token_embd.weight');
    if (embInfo === undefined || embInfo.dims.length !== 2) throw new Error('LlamaReference: bad or missing token_embd.weight');
    const nVocab = embInfo.dims[1]!;
    this.tokEmbd = load('token_embd.weight', [nEmbd, nVocab]);
    this.outNorm = load('output_norm.weight', [nEmbd]);
    const tiedOutput = !gguf.hasTensor('output.weight');
    this.output = tiedOutput ? this.tokEmbd : load('output.weight', [nEmbd, nVocab]);

    const qDim = nHead * headDim;
    const kvDim = nHeadKv * headDim;
    this.layers = [];
    for (let l = 0; l < nLayer; l++) {
      const p = `blk.${l}.`;
      this.layers.push({
        attnNorm: load(p + 'attn_norm.weight', [nEmbd]),
        wq: load(p + 'attn_q.weight', [nEmbd, qDim]),
        wk: load(p + 'attn_k.weight', [nEmbd, kvDim]),
        wv: load(p + 'attn_v.weight', [nEmbd, kvDim]),
        wo: load(p + 'attn_output.weight', [qDim, nEmbd]),
        ffnNorm: load(p + 'ffn_norm.weight', [nEmbd]),
        wGate: load(p + 'ffn_gate.weight', [nEmbd, nFf]),
        wUp: load(p + 'ffn_up.weight', [nEmbd, nFf]),
        wDown: load(p + 'ffn_down.weight', [nFf, nEmbd]),
      });
    }

    this.hparams = {
      nVocab, nEmbd, nLayer, nHead, nHeadKv, headDim, nFf,
      rmsEps: need('llama.attention.layer_norm_rms_epsilon'),
      ropeFreqBase: gguf.getNumber('llama.rope.freq_base') ?? 10000,
      ropeFreqScale,
      nRot,
      contextLength: gguf.getNumber('llama.context_length') ?? 0,
      tiedOutput,
    };
    this.invFreq = new Float64Array(nRot / 2);
    for (let i = 0; i < nRot / 2; i++) this.invFreq[i] = Math.pow(this.hparams.ropeFreqBase, (-2 * i) / nRot);
  }

  /** Loads the GGUF model at `path` (all weights decoded to float64 in memory). */
  static load(path: string): LlamaReference {
    return new LlamaReference(GGUFFile.load(path));
  }

  /** Vocabulary size. */
  get nVocab(): number { return this.hparams.nVocab; }
  /** Model width. */
  get nEmbd(): number { return this.hparams.nEmbd; }
  /** Number of layers. */
  get nLayer(): number { return this.hparams.nLayer; }
  /** Query heads per layer. */
  get nHead(): number { return this.hparams.nHead; }
  /** KV heads per layer. */
  get nHeadKv(): number { return this.hparams.nHeadKv; }
  /** Head size. */
  get headDim(): number { return this.hparams.headDim; }
  /** FFN width. */
  get nFf(): number { return this.hparams.nFf; }
  /** KV head used by query head h: floor(h / (n_head / n_head_kv)). */
  kvHeadOf(h: number): number { return Math.floor(h / (this.hparams.nHead / this.hparams.nHeadKv)); }

  /** Applies NORM-mode RoPE in place to one head vector [head_dim] at position pos. */
  private rope(v: Float64Array, pos: number): void {
    const p = pos * this.hparams.ropeFreqScale;
    for (let i = 0; i < this.invFreq.length; i++) {
      const theta = p * this.invFreq[i]!;
      const c = Math.cos(theta);
      const s = Math.sin(theta);
      const x0 = v[2 * i]!;
      const x1 = v[2 * i + 1]!;
      v[2 * i] = x0 * c - x1 * s;
      v[2 * i + 1] = x0 * s + x1 * c;
    }
  }

  /**
   * Runs one token through the model at position `pos`, appending its K/V to
   * the state and returning its logits [n_vocab]. Queries are recorded into
   * state.Q when `recordQ`. Prompt cells (index < promptLimit) are filtered by
   * `visible`; later cells and the token itself are always visible.
   */
  private step(state: RefState, token: number, pos: number, visible: Visibility | undefined, promptLimit: number, recordQ: boolean, wantLogits: boolean): Float64Array | undefined {
    const { nEmbd, nHead, nHeadKv, headDim, nFf, rmsEps, nVocab } = this.hparams;
    if (!Number.isInteger(token) || token < 0 || token >= nVocab) throw new Error(`LlamaReference: token ${token} out of range [0, ${nVocab})`);
    const group = nHead / nHeadKv;
    const scale = 1 / Math.sqrt(headDim);
    let x = this.tokEmbd.slice(token * nEmbd, (token + 1) * nEmbd);
    const cell = state.positions.length;
    state.positions.push(pos);
    state.tokens.push(token);

    for (let l = 0; l < this.layers.length; l++) {
      const W = this.layers[l]!;
      const n = rmsNorm(x, W.attnNorm, rmsEps);
      const q = matvec(W.wq, nEmbd, nHead * headDim, n);
      const k = matvec(W.wk, nEmbd, nHeadKv * headDim, n);
      const v = matvec(W.wv, nEmbd, nHeadKv * headDim, n);
      for (let g = 0; g < nHeadKv; g++) {
        const kh = k.slice(g * headDim, (g + 1) * headDim);
        this.rope(kh, pos);
        state.K[l]![g]!.push(kh);
        state.V[l]![g]!.push(v.slice(g * headDim, (g + 1) * headDim));
      }
      const attnOut = new Float64Array(nHead * headDim);
      const scores = new Float64Array(cell + 1);
      for (let h = 0; h < nHead; h++) {
        const qh = q.slice(h * headDim, (h + 1) * headDim);
        this.rope(qh, pos);
        if (recordQ) state.Q[l]![h]!.push(qh);
        const g = Math.floor(h / group);
        const keys = state.K[l]![g]!;
        const vals = state.V[l]![g]!;
        let mx = -Infinity;
        for (let j = 0; j <= cell; j++) {
          if (j < promptLimit && j !== cell && visible !== undefined && !visible(l, g, j)) {
            scores[j] = -Infinity;
            continue;
          }
          const kj = keys[j]!;
          let s = 0;
          for (let d = 0; d < headDim; d++) s += qh[d]! * kj[d]!;
          s *= scale;
          scores[j] = s;
          if (s > mx) mx = s;
        }
        let sum = 0;
        for (let j = 0; j <= cell; j++) {
          const e = scores[j] === -Infinity ? 0 : Math.exp(scores[j]! - mx);
          scores[j] = e;
          sum += e;
        }
        const o = h * headDim;
        for (let j = 0; j <= cell; j++) {
          const a = scores[j]! / sum;
          if (a === 0) continue;
          const vj = vals[j]!;
          for (let d = 0; d < headDim; d++) attnOut[o + d]! += a * vj[d]!;
        }
      }
      const proj = matvec(W.wo, nHead * headDim, nEmbd, attnOut);
      const hres = new Float64Array(nEmbd);
      for (let i = 0; i < nEmbd; i++) hres[i] = x[i]! + proj[i]!;

      const m = rmsNorm(hres, W.ffnNorm, rmsEps);
      const gate = matvec(W.wGate, nEmbd, nFf, m);
      const up = matvec(W.wUp, nEmbd, nFf, m);
      for (let i = 0; i < nFf; i++) {
        const gi = gate[i]!;
        gate[i] = (gi / (1 + Math.exp(-gi))) * up[i]!;
      }
      const down = matvec(W.wDown, nFf, nEmbd, gate);
      x = new Float64Array(nEmbd);
      for (let i = 0; i < nEmbd; i++) x[i] = hres[i]! + down[i]!;
    }
    if (!wantLogits) return undefined;
    return matvec(this.output, nEmbd, nVocab, rmsNorm(x, this.outNorm, rmsEps));
  }

  /**
   * Evaluates the prompt `tokens` ([L], L ≥ 1) at positions 0..L-1 with full
   * causal attention. Returns the state holding K, V [n_layer][n_head_kv][L][head_dim],
   * Q [n_layer][n_head][L][head_dim] and the last token's logits [n_vocab];
   * with `opts.allLogits` also every position's logits [L][n_vocab].
   */
  prefill(tokens: number[], opts: { allLogits?: boolean } = {}): RefState {
    if (tokens.length === 0) throw new Error('LlamaReference.prefill: empty prompt');
    const { nLayer, nHead, nHeadKv, headDim } = this.hparams;
    const state: RefState = {
      nLayer, nHead, nHeadKv, headDim,
      promptLength: tokens.length,
      tokens: [],
      positions: [],
      K: Array.from({ length: nLayer }, () => Array.from({ length: nHeadKv }, () => [] as Float64Array[])),
      V: Array.from({ length: nLayer }, () => Array.from({ length: nHeadKv }, () => [] as Float64Array[])),
      Q: Array.from({ length: nLayer }, () => Array.from({ length: nHead }, () => [] as Float64Array[])),
      logits: new Float64Array(0),
    };
    const all: Float64Array[] = [];
    for (let i = 0; i < tokens.length; i++) {
      const last = i === tokens.length - 1;
      const logits = this.step(state, tokens[i]!, i, undefined, 0, true, last || opts.allLogits === true);
      if (logits !== undefined) {
        if (opts.allLogits) all.push(logits);
        if (last) state.logits = logits;
      }
    }
    if (opts.allLogits) state.allLogits = all;
    return state;
  }

  /**
   * Appends `token` at RoPE position `pos` (typically L + number already decoded)
   * and returns its logits [n_vocab]. `visible(layer, kvHead, keyPos)` hides
   * prompt keys (keyPos ∈ [0, L)) per layer and KV head; the new token and all
   * previously decoded tokens are always visible. Pass the same `visible` on
   * every decode step of a sequence (decoded tokens' K/V depend on it).
   * Mutates `state` (K/V grow by one cell; Q is unchanged).
   */
  decode(state: RefState, token: number, pos: number, visible?: Visibility): Float64Array {
    return this.step(state, token, pos, visible, state.promptLength, false, true)!;
  }
}

/** Index of the largest entry of `logits` ([n_vocab]); lowest index on ties. */
export function argmax(logits: Float64Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

/** Softmax of `logits` ([n]) in float64 → probabilities [n]. */
export function softmax(logits: Float64Array): Float64Array {
  let mx = -Infinity;
  for (const v of logits) if (v > mx) mx = v;
  const out = new Float64Array(logits.length);
  let sum = 0;
  for (let i = 0; i < logits.length; i++) {
    out[i] = Math.exp(logits[i]! - mx);
    sum += out[i]!;
  }
  for (let i = 0; i < out.length; i++) out[i] = out[i]! / sum;
  return out;
}

/**
 * Deep copy of a state (K/V [n_layer][n_head_kv][n_cells][head_dim],
 * Q [n_layer][n_head][L][head_dim], logits), so several decode variants can
 * start from one prefill.
 */
export function cloneState(s: RefState): RefState {
  const copy3 = (a: Float64Array[][][]): Float64Array[][][] => a.map((x) => x.map((y) => y.map((v) => v.slice())));
  const out: RefState = {
    nLayer: s.nLayer, nHead: s.nHead, nHeadKv: s.nHeadKv, headDim: s.headDim,
    promptLength: s.promptLength,
    tokens: s.tokens.slice(),
    positions: s.positions.slice(),
    K: copy3(s.K),
    V: copy3(s.V),
    Q: copy3(s.Q),
    logits: s.logits.slice(),
  };
  if (s.allLogits !== undefined) out.allLogits = s.allLogits.map((v) => v.slice());
  return out;
}
