/**
 * Independent float64 reference forward pass of a gpt-oss GGUF model (F32 / F16 weights; the
 * synthetic models of `src/engine/synthetic.ts`), mirroring llama.cpp's LLM_ARCH_OPENAI_MOE graph
 * (src/models/openai-moe.cpp of the bundled llama.cpp):
 *
 *   x = token_embd[token]
 *   per layer l: n = RMSNorm(x) ⊙ attn_norm
 *                q, k, v = attn_{q,k,v} · n + attn_{q,k,v}.bias; q, k RoPE'd (NEOX mode)
 *                h = x + attn_output · Attn_l(q, k, v) + attn_output.bias
 *                m = RMSNorm(h) ⊙ post_attention_norm
 *                x = h + Σ_{e ∈ top-k(r)} softmax_{top-k}(r)[e] · (down_e · SwiGLU-OAI(gate_e · m + b, up_e · m + b) + b),
 *                    r = ffn_gate_inp · m + ffn_gate_inp.bias   (the router's logits, one per expert)
 *   logits = output · (RMSNorm(x) ⊙ output_norm)
 *
 * Attn_l: per query head h (KV head floor(h / (n_head / n_head_kv))), scale 1/sqrt(head_dim), causal,
 * the softmax's denominator also holding e^(sink_l[h]) (the learned sink `blk.l.attn_sinks`, one
 * logit per query head, unscaled, with no value: `ggml_soft_max_add_sinks`); the sliding layers
 * (every layer but the last of each `attention.sliding_window_pattern` period, default 2:
 * `llama_hparams::set_swa_pattern`) see only keys at positions p > pos − n_swa (LLAMA_SWA_TYPE_STANDARD).
 * NEOX RoPE: the pairs (x[i], x[i + n_rot/2]) rotated by pos · freq_base^(−2i/n_rot) (no scaling:
 * the synthetic models write no rope.scaling keys, so YaRN's ext_factor is 0 and attn_factor 1).
 * SwiGLU-OAI (ggml_swiglu_oai, alpha 1.702, limit 7): g' = min(g, 7), u' = clamp(u, −7, 7),
 * out = g' · σ(1.702 g') · (u' + 1).
 * The `.scale` / `.input_scale` tensors the synthetic models carry must be 1 (identities); anything
 * else is refused.
 */
import { matvec, rmsNorm } from './f64';
import { GGUFFile } from './gguf';
import type { LlamaHParams } from './llama-ref';
import type { AttentionCapture } from './snapkv-ref';

/**
 * Hyper-parameters read from the GGUF metadata, under `gpt-oss.*` instead of `llama.*` for the
 * fields shared with {@link LlamaHParams} (headDim = `rope.dimension_count`: every dimension is rotated).
 */
export interface GptOssHParams extends Pick<LlamaHParams, 'nVocab' | 'nEmbd' | 'nLayer' | 'nHead' | 'nHeadKv' | 'headDim' | 'rmsEps' | 'ropeFreqBase'> {
  /** Experts per layer (`expert_count`). */
  nExpert: number;
  /** Experts routed per token (`expert_used_count`). */
  nExpertUsed: number;
  /** Each expert's FFN width (`expert_feed_forward_length`). */
  nFfExp: number;
  /** Sliding window in tokens (`attention.sliding_window`). */
  nSwa: number;
  /** Period of the sliding-window pattern (`attention.sliding_window_pattern`, default 2): layer l is global iff l % period == period − 1. */
  swaPeriod: number;
}

/** One layer's weights in float64, ggml storage order ([ne1][ne0] row-major). */
interface LayerWeights {
  attnNorm: Float64Array; // [n_embd]
  postNorm: Float64Array; // [n_embd]
  wq: Float64Array; bq: Float64Array; // [n_head*d][n_embd], [n_head*d]
  wk: Float64Array; bk: Float64Array; // [n_kv*d][n_embd], [n_kv*d]
  wv: Float64Array; bv: Float64Array; // [n_kv*d][n_embd], [n_kv*d]
  wo: Float64Array; bo: Float64Array; // [n_embd][n_head*d], [n_embd]
  sinks: Float64Array; // [n_head]
  router: Float64Array; routerB: Float64Array; // [n_expert][n_embd], [n_expert]
  gate: Float64Array; gateB: Float64Array; // [n_expert][n_ff][n_embd], [n_expert][n_ff]
  up: Float64Array; upB: Float64Array; // [n_expert][n_ff][n_embd], [n_expert][n_ff]
  down: Float64Array; downB: Float64Array; // [n_expert][n_embd][n_ff], [n_expert][n_embd]
}

/** The prompt's forward state: post-RoPE Q/K and V of every layer, and the last token's logits. */
export interface GptOssState {
  /** Prompt length L. */
  promptLength: number;
  /** Post-RoPE queries [n_layer][n_head][L][head_dim]. */
  Q: Float64Array[][][];
  /** Post-RoPE keys [n_layer][n_head_kv][L][head_dim]. */
  K: Float64Array[][][];
  /** Values [n_layer][n_head_kv][L][head_dim]. */
  V: Float64Array[][][];
  /** Logits of the last prompt token [n_vocab]. */
  logits: Float64Array;
}

/** Float64 gpt-oss reference. Construct with {@link GptOssReference.load}. */
export class GptOssReference {
  /** All hyper-parameters. */
  readonly hparams: GptOssHParams;
  private readonly tokEmbd: Float64Array; // [n_vocab][n_embd]
  private readonly outNorm: Float64Array; // [n_embd]
  private readonly output: Float64Array; // [n_vocab][n_embd]
  private readonly layers: LayerWeights[];
  private readonly invFreq: Float64Array; // [head_dim/2]

  private constructor(g: GGUFFile) {
    const arch = g.getString('general.architecture');
    if (arch !== 'gpt-oss') throw new Error(`GptOssReference: architecture ${String(arch)} is not gpt-oss`);
    const need = (key: string): number => {
      const v = g.getNumber(`gpt-oss.${key}`);
      if (v === undefined) throw new Error(`GptOssReference: missing metadata gpt-oss.${key}`);
      return v;
    };
    const nEmbd = need('embedding_length');
    const nHead = need('attention.head_count');
    const headDim = need('rope.dimension_count');
    if (headDim * nHead !== nEmbd) throw new Error(`GptOssReference: rope.dimension_count ${headDim} · n_head ${nHead} ≠ n_embd ${nEmbd}`);
    const embInfo = g.tensor('token_embd.weight');
    if (embInfo === undefined || embInfo.dims.length !== 2) throw new Error('GptOssReference: bad or missing token_embd.weight');
    this.hparams = {
      nVocab: embInfo.dims[1]!,
      nEmbd,
      nLayer: need('block_count'),
      nHead,
      nHeadKv: need('attention.head_count_kv'),
      headDim,
      nExpert: need('expert_count'),
      nExpertUsed: need('expert_used_count'),
      nFfExp: need('expert_feed_forward_length'),
      nSwa: need('attention.sliding_window'),
      swaPeriod: g.getNumber('gpt-oss.attention.sliding_window_pattern') ?? 2,
      rmsEps: need('attention.layer_norm_rms_epsilon'),
      ropeFreqBase: need('rope.freq_base'),
    };
    const { nLayer, nHeadKv, nExpert, nFfExp, nVocab } = this.hparams;
    if (nHead % nHeadKv !== 0) throw new Error(`GptOssReference: n_head ${nHead} not a multiple of n_head_kv ${nHeadKv}`);
    if (g.getString('gpt-oss.rope.scaling.type') !== undefined) throw new Error('GptOssReference: RoPE scaling is not supported');

    const load = (name: string, dims: number[]): Float64Array => {
      const info = g.tensor(name);
      if (info === undefined) throw new Error(`GptOssReference: missing tensor ${name}`);
      if (info.dims.join(',') !== dims.join(',')) throw new Error(`GptOssReference: tensor ${name} has dims [${info.dims.join(',')}], expected [${dims.join(',')}]`);
      return g.readTensorF64(name);
    };
    for (const t of g.tensors) {
      if (!/\.(input_)?scale$/.test(t.name)) continue;
      if (g.readTensorF64(t.name).some((v) => v !== 1)) throw new Error(`GptOssReference: ${t.name} is not 1 (scaled weights are not supported)`);
    }

    this.tokEmbd = load('token_embd.weight', [nEmbd, nVocab]);
    this.outNorm = load('output_norm.weight', [nEmbd]);
    this.output = load('output.weight', [nEmbd, nVocab]);
    const qDim = nHead * headDim;
    const kvDim = nHeadKv * headDim;
    this.layers = [];
    for (let l = 0; l < nLayer; l++) {
      const p = `blk.${l}.`;
      this.layers.push({
        attnNorm: load(p + 'attn_norm.weight', [nEmbd]),
        postNorm: load(p + 'post_attention_norm.weight', [nEmbd]),
        wq: load(p + 'attn_q.weight', [nEmbd, qDim]), bq: load(p + 'attn_q.bias', [qDim]),
        wk: load(p + 'attn_k.weight', [nEmbd, kvDim]), bk: load(p + 'attn_k.bias', [kvDim]),
        wv: load(p + 'attn_v.weight', [nEmbd, kvDim]), bv: load(p + 'attn_v.bias', [kvDim]),
        wo: load(p + 'attn_output.weight', [qDim, nEmbd]), bo: load(p + 'attn_output.bias', [nEmbd]),
        sinks: load(p + 'attn_sinks.weight', [nHead]),
        router: load(p + 'ffn_gate_inp.weight', [nEmbd, nExpert]), routerB: load(p + 'ffn_gate_inp.bias', [nExpert]),
        gate: load(p + 'ffn_gate_exps.weight', [nEmbd, nFfExp, nExpert]), gateB: load(p + 'ffn_gate_exps.bias', [nFfExp, nExpert]),
        up: load(p + 'ffn_up_exps.weight', [nEmbd, nFfExp, nExpert]), upB: load(p + 'ffn_up_exps.bias', [nFfExp, nExpert]),
        down: load(p + 'ffn_down_exps.weight', [nFfExp, nEmbd, nExpert]), downB: load(p + 'ffn_down_exps.bias', [nEmbd, nExpert]),
      });
    }
    this.invFreq = new Float64Array(headDim / 2);
    for (let i = 0; i < headDim / 2; i++) this.invFreq[i] = Math.pow(this.hparams.ropeFreqBase, (-2 * i) / headDim);
  }

  /** Loads the GGUF model at `path` (every weight decoded to float64). @throws Error for another architecture, shape or a scaled weight. */
  static load(path: string): GptOssReference {
    return new GptOssReference(GGUFFile.load(path));
  }

  /** Whether layer `il` is a sliding-window layer (llama_hparams::set_swa_pattern: global iff il % period == period − 1). */
  isSliding(il: number): boolean {
    const p = this.hparams.swaPeriod;
    return p === 0 || il % p !== p - 1;
  }

  /** Layer `il`'s learned attention sinks [n_head] (query head h = kv · n_gqa + g). */
  sinks(il: number): Float64Array {
    return this.layers[il]!.sinks.slice();
  }

  /** NEOX RoPE in place on one head vector [head_dim] at position pos. */
  private rope(v: Float64Array, pos: number): void {
    const half = this.invFreq.length;
    for (let i = 0; i < half; i++) {
      const theta = pos * this.invFreq[i]!;
      const c = Math.cos(theta);
      const s = Math.sin(theta);
      const x0 = v[i]!;
      const x1 = v[i + half]!;
      v[i] = x0 * c - x1 * s;
      v[i + half] = x0 * s + x1 * c;
    }
  }

  /** The MoE block on m [n_embd]: Σ over the top-k experts of softmax-over-top-k(router logit) · expert(m). → [n_embd]. */
  private moe(W: LayerWeights, m: Float64Array): Float64Array {
    const { nEmbd, nExpert, nExpertUsed, nFfExp } = this.hparams;
    const r = matvec(W.router, nEmbd, nExpert, m, W.routerB);
    const top = Array.from({ length: nExpert }, (_, e) => e).sort((a, b) => r[b]! - r[a]! || a - b).slice(0, nExpertUsed);
    const mx = Math.max(...top.map((e) => r[e]!));
    const w = top.map((e) => Math.exp(r[e]! - mx));
    const sw = w.reduce((a, b) => a + b, 0);
    const out = new Float64Array(nEmbd);
    top.forEach((e, i) => {
      const g = matvec(W.gate, nEmbd, nFfExp, m, W.gateB, e * nFfExp * nEmbd, e * nFfExp);
      const u = matvec(W.up, nEmbd, nFfExp, m, W.upB, e * nFfExp * nEmbd, e * nFfExp);
      const act = new Float64Array(nFfExp);
      for (let j = 0; j < nFfExp; j++) {
        const x = Math.min(g[j]!, 7);
        const y = Math.min(Math.max(u[j]!, -7), 7);
        act[j] = (x / (1 + Math.exp(-1.702 * x))) * (y + 1);
      }
      const d = matvec(W.down, nFfExp, nEmbd, act, W.downB, e * nEmbd * nFfExp, e * nEmbd);
      for (let j = 0; j < nEmbd; j++) out[j]! += (w[i]! / sw) * d[j]!;
    });
    return out;
  }

  /**
   * Evaluates the prompt `tokens` ([L], L ≥ 1, ids < n_vocab) at positions 0 … L − 1.
   * Returns Q [n_layer][n_head][L][head_dim], K and V [n_layer][n_head_kv][L][head_dim] and the
   * last token's logits [n_vocab]. @throws Error for an empty prompt or a token out of range.
   */
  prefill(tokens: number[]): GptOssState {
    const { nEmbd, nLayer, nHead, nHeadKv, headDim, nSwa, rmsEps, nVocab } = this.hparams;
    const L = tokens.length;
    if (L === 0) throw new Error('GptOssReference.prefill: empty prompt');
    const nGqa = nHead / nHeadKv;
    const scale = 1 / Math.sqrt(headDim);
    const st: GptOssState = {
      promptLength: L,
      Q: Array.from({ length: nLayer }, () => Array.from({ length: nHead }, () => [] as Float64Array[])),
      K: Array.from({ length: nLayer }, () => Array.from({ length: nHeadKv }, () => [] as Float64Array[])),
      V: Array.from({ length: nLayer }, () => Array.from({ length: nHeadKv }, () => [] as Float64Array[])),
      logits: new Float64Array(0),
    };
    const att = new Float64Array(L);
    for (let t = 0; t < L; t++) {
      const tok = tokens[t]!;
      if (!Number.isInteger(tok) || tok < 0 || tok >= nVocab) throw new Error(`GptOssReference: token ${tok} out of range [0, ${nVocab})`);
      let x = this.tokEmbd.slice(tok * nEmbd, (tok + 1) * nEmbd);
      for (let l = 0; l < nLayer; l++) {
        const W = this.layers[l]!;
        const n = rmsNorm(x, W.attnNorm, rmsEps);
        const q = matvec(W.wq, nEmbd, nHead * headDim, n, W.bq);
        const k = matvec(W.wk, nEmbd, nHeadKv * headDim, n, W.bk);
        const v = matvec(W.wv, nEmbd, nHeadKv * headDim, n, W.bv);
        for (let kv = 0; kv < nHeadKv; kv++) {
          const kh = k.slice(kv * headDim, (kv + 1) * headDim);
          this.rope(kh, t);
          st.K[l]![kv]!.push(kh);
          st.V[l]![kv]!.push(v.slice(kv * headDim, (kv + 1) * headDim));
        }
        const first = this.isSliding(l) ? Math.max(0, t - nSwa + 1) : 0;
        const o = new Float64Array(nHead * headDim);
        for (let h = 0; h < nHead; h++) {
          const qh = q.slice(h * headDim, (h + 1) * headDim);
          this.rope(qh, t);
          st.Q[l]![h]!.push(qh);
          const kv = Math.floor(h / nGqa);
          const sink = W.sinks[h]!;
          let mx = sink;
          for (let j = first; j <= t; j++) {
            const kj = st.K[l]![kv]![j]!;
            let s = 0;
            for (let d = 0; d < headDim; d++) s += qh[d]! * kj[d]!;
            att[j] = s * scale;
            if (att[j]! > mx) mx = att[j]!;
          }
          let sum = Math.exp(sink - mx);
          for (let j = first; j <= t; j++) {
            att[j] = Math.exp(att[j]! - mx);
            sum += att[j]!;
          }
          for (let j = first; j <= t; j++) {
            const a = att[j]! / sum;
            const vj = st.V[l]![kv]![j]!;
            for (let d = 0; d < headDim; d++) o[h * headDim + d]! += a * vj[d]!;
          }
        }
        const proj = matvec(W.wo, nHead * headDim, nEmbd, o, W.bo);
        const hres = new Float64Array(nEmbd);
        for (let i = 0; i < nEmbd; i++) hres[i] = x[i]! + proj[i]!;
        const f = this.moe(W, rmsNorm(hres, W.postNorm, rmsEps));
        x = new Float64Array(nEmbd);
        for (let i = 0; i < nEmbd; i++) x[i] = hres[i]! + f[i]!;
      }
      if (t === L - 1) st.logits = matvec(this.output, nEmbd, nVocab, rmsNorm(x, this.outNorm, rmsEps));
    }
    return st;
  }

  /**
   * The SnapKV capture of the given layers (e.g. the global ones, which llama.cpp's iSWA cache
   * scores): their Q and K from `st`, and their sinks unless `opts.sinks` is false (or, when
   * given as a table [layers.length][n_head], those instead). For `snapkvScores`.
   */
  capture(st: GptOssState, layers: number[], opts: { sinks?: boolean | Float64Array[] } = {}): AttentionCapture {
    const { nHead, nHeadKv, headDim } = this.hparams;
    const cap: AttentionCapture = {
      nHead, nHeadKv, headDim,
      promptLength: st.promptLength,
      Q: layers.map((l) => st.Q[l]!),
      K: layers.map((l) => st.K[l]!),
    };
    if (Array.isArray(opts.sinks)) cap.sinks = opts.sinks;
    else if (opts.sinks !== false) cap.sinks = layers.map((l) => this.sinks(l));
    return cap;
  }
}
