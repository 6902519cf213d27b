/**
 * Keep-recent: every (layer, KV head) keeps the last B positions, a sliding window with no
 * sinks (the baseline StreamingLLM improves on, Xiao et al. 2023, fig. 1b).
 */
import { range, sameForEveryHead, type EvictionPolicy, type PolicyInput } from '../policy';

/** Keeps positions L−B … L−1 in every (layer, KV head). */
export class RecentPolicy implements EvictionPolicy {
  readonly id = 'recent';
  readonly family = 'recent' as const;
  readonly label = 'keep recent';
  readonly params = {};
  readonly scoreWindow = 0;

  select(input: PolicyInput): Int32Array {
    return sameForEveryHead(input, range(input.L - input.budget, input.L));
  }
}
