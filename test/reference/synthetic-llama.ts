/**
 * Builds small synthetic llama GGUF models with seeded random weights (F32 or
 * F16 matrices, F32 norms), loadable by both llama.cpp and LlamaReference.
 * The tokenizer metadata (`tokenizer.*`) is copied from a donor GGUF so that
 * llama.cpp accepts the file; n_vocab is the donor's vocabulary size.
 */
import { GGMLType, GGUFFile, GGUFValueType } from './gguf';
import { writeGGUF } from './gguf-writer';
import type { GGUFWriteEntry, GGUFWriteTensor } from './gguf-writer';

/** Shape and options of a synthetic llama model. */
export interface SyntheticLlamaOptions {
  /** GGUF whose `tokenizer.*` metadata is copied (defines n_vocab). */
  tokenizerFrom: string;
  /** Model width; head size = nEmbd / nHead. */
  nEmbd: number;
  /** Query heads. */
  nHead: number;
  /** KV heads (divides nHead). */
  nHeadKv: number;
  /** FFN width. */
  nFf: number;
  /** Layers. */
  nLayer: number;
  /** Storage type of the 2-D weight matrices (norm vectors are always F32). */
  weightType: 'F32' | 'F16';
  /** Omit output.weight so logits use token_embd.weight. Default false. */
  tiedOutput?: boolean;
  /** `llama.rope.freq_base`; omitted from the file when undefined (llama.cpp default 10000). */
  ropeFreqBase?: number;
  /** RMSNorm epsilon, default 1e-5 (stored as f32). */
  rmsEps?: number;
  /** PRNG seed, default 1. */
  seed?: number;
}

/** mulberry32: deterministic uniform [0, 1) generator. */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Metadata and tensors of a synthetic llama: token_embd [nEmbd, nVocab] (std 0.15),
 * per layer attn_q/attn_k (std 2/sqrt(nEmbd)), attn_v (1/sqrt(nEmbd)),
 * attn_output (1/sqrt(nHead*headDim)), ffn_gate/ffn_up (1/sqrt(nEmbd)),
 * ffn_down (1/sqrt(nFf)), norms 1 ± 0.1; output [nEmbd, nVocab] unless tied.
 */
export function buildSyntheticLlama(o: SyntheticLlamaOptions): { metadata: GGUFWriteEntry[]; tensors: GGUFWriteTensor[] } {
  const donor = GGUFFile.load(o.tokenizerFrom);
  const tokens = donor.get('tokenizer.ggml.tokens');
  if (!Array.isArray(tokens)) throw new Error('synthetic llama: donor has no tokenizer.ggml.tokens');
  const nVocab = tokens.length;
  const headDim = o.nEmbd / o.nHead;
  if (!Number.isInteger(headDim) || o.nHead % o.nHeadKv !== 0) throw new Error('synthetic llama: bad head configuration');

  const U = GGUFValueType.UINT32;
  const metadata: GGUFWriteEntry[] = [
    { key: 'general.architecture', type: GGUFValueType.STRING, value: 'llama' },
    { key: 'general.name', type: GGUFValueType.STRING, value: 'synthetic-llama' },
    { key: 'llama.context_length', type: U, value: 2048 },
    { key: 'llama.embedding_length', type: U, value: o.nEmbd },
    { key: 'llama.feed_forward_length', type: U, value: o.nFf },
    { key: 'llama.attention.head_count', type: U, value: o.nHead },
    { key: 'llama.attention.head_count_kv', type: U, value: o.nHeadKv },
    { key: 'llama.block_count', type: U, value: o.nLayer },
    { key: 'llama.attention.layer_norm_rms_epsilon', type: GGUFValueType.FLOAT32, value: o.rmsEps ?? 1e-5 },
  ];
  if (o.ropeFreqBase !== undefined) metadata.push({ key: 'llama.rope.freq_base', type: GGUFValueType.FLOAT32, value: o.ropeFreqBase });
  for (const e of donor.metadata.values()) if (e.key.startsWith('tokenizer.')) metadata.push(e);

  const rand = mulberry32(o.seed ?? 1);
  const normal = (): number => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
  const wType = o.weightType === 'F16' ? GGMLType.F16 : GGMLType.F32;
  const mk = (name: string, dims: number[], std: number, mean = 0): GGUFWriteTensor => ({
    name,
    dims,
    type: dims.length === 1 ? GGMLType.F32 : wType,
    data: Float64Array.from({ length: dims.reduce((a, b) => a * b, 1) }, () => mean + std * normal()),
  });
  const qDim = o.nHead * headDim;
  const kvDim = o.nHeadKv * headDim;
  const tensors: GGUFWriteTensor[] = [mk('token_embd.weight', [o.nEmbd, nVocab], 0.15), mk('output_norm.weight', [o.nEmbd], 0.1, 1)];
  if (!o.tiedOutput) tensors.push(mk('output.weight', [o.nEmbd, nVocab], 0.15));
  for (let l = 0; l < o.nLayer; l++) {
    const p = `blk.${l}.`;
    tensors.push(
      mk(p + 'attn_norm.weight', [o.nEmbd], 0.1, 1),
      mk(p + 'attn_q.weight', [o.nEmbd, qDim], 2 / Math.sqrt(o.nEmbd)),
      mk(p + 'attn_k.weight', [o.nEmbd, kvDim], 2 / Math.sqrt(o.nEmbd)),
      mk(p + 'attn_v.weight', [o.nEmbd, kvDim], 1 / Math.sqrt(o.nEmbd)),
      mk(p + 'attn_output.weight', [qDim, o.nEmbd], 1 / Math.sqrt(qDim)),
      mk(p + 'ffn_norm.weight', [o.nEmbd], 0.1, 1),
      mk(p + 'ffn_gate.weight', [o.nEmbd, o.nFf], 1 / Math.sqrt(o.nEmbd)),
      mk(p + 'ffn_up.weight', [o.nEmbd, o.nFf], 1 / Math.sqrt(o.nEmbd)),
      mk(p + 'ffn_down.weight', [o.nFf, o.nEmbd], 1 / Math.sqrt(o.nFf)),
    );
  }
  return { metadata, tensors };
}

/** Builds a synthetic llama with {@link buildSyntheticLlama} and writes it to `path`. */
export function writeSyntheticLlama(path: string, o: SyntheticLlamaOptions): void {
  const { metadata, tensors } = buildSyntheticLlama(o);
  writeGGUF(path, metadata, tensors);
}
