/**
 * StreamingLLM (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks"):
 * keep the first S positions (attention sinks) and the most recent B − S.
 */
import { range, sameForEveryHead, type EvictionPolicy, type PolicyInput } from '../policy';

/** Options of {@link StreamingLlmPolicy}. */
export interface StreamingLlmOptions {
  /** Attention sinks S [positions kept from the start]. Default 4 (the paper's choice). */
  sinks?: number;
}

/**
 * Keeps positions 0 … s−1 and L−(B−s) … L−1 in every (layer, KV head), with
 * s = min(S, ⌊B/2⌋) so that at tiny budgets at least half the cells stay recent.
 */
export class StreamingLlmPolicy implements EvictionPolicy {
  readonly id: string;
  readonly family = 'streaming-llm' as const;
  readonly label: string;
  readonly params: { sinks: number };
  readonly scoreWindow = 0;

  constructor(opts: StreamingLlmOptions = {}) {
    const sinks = opts.sinks ?? 4;
    if (!Number.isInteger(sinks) || sinks < 0) throw new Error(`sinks must be a non-negative integer, got ${sinks}`);
    this.params = { sinks };
    this.id = `streaming-llm-s${sinks}`;
    this.label = `StreamingLLM (${sinks} sinks + recent)`;
  }

  select(input: PolicyInput): Int32Array {
    const { L, budget: B } = input;
    const s = Math.min(this.params.sinks, Math.floor(B / 2));
    return sameForEveryHead(input, [...range(0, s), ...range(L - (B - s), L)]);
  }
}
