/**
 * Hash chain over a token sequence at fixed checkpoints: h_k = sha256(h_{k-1} ‖ tokens[kS, (k+1)S)),
 * so two sequences share their first k checkpoints iff their first k·S tokens are equal (up to
 * hash collisions). Lets the store find the longest cached prefix of a prompt from small index
 * files, without reading the (large) state files.
 */
import { createHash } from 'node:crypto';

/** Tokens per checkpoint. */
export const CHECKPOINT_TOKENS = 64;

/**
 * Chain of a token sequence: one 16-byte hex digest per complete checkpoint
 * (floor(tokens.length / step) entries; a trailing partial chunk has none).
 */
export function hashChain(tokens: ArrayLike<number>, step = CHECKPOINT_TOKENS): string[] {
  const out: string[] = [];
  let prev = Buffer.alloc(0);
  const n = Math.floor(tokens.length / step);
  const chunk = Buffer.alloc(4 * step);
  for (let k = 0; k < n; k++) {
    for (let i = 0; i < step; i++) chunk.writeInt32LE(tokens[k * step + i]!, 4 * i);
    prev = createHash('sha256').update(prev).update(chunk).digest().subarray(0, 16);
    out.push(prev.toString('hex'));
  }
  return out;
}

/** Number of leading checkpoints two chains share. */
export function commonCheckpoints(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  let k = 0;
  while (k < n && a[k] === b[k]) k++;
  return k;
}
