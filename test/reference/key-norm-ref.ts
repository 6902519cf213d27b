/**
 * The key-norm scorer's expected selection (Devoto et al. 2024, sec. 3), checked against float64
 * norms recomputed by the caller (from the reference model's K rows).
 */
import assert from 'node:assert/strict';

/**
 * Checks one (layer, KV head) row of a key-norm selection: the row keeps B − w prefix positions,
 * ascending, then the last w; no prefix position it dropped has a norm below the largest it kept
 * (to `rel` of it: layer 0's keys of equal tokens have equal norms, a rotation apart, so exact
 * ties are decided by float rounding).
 */
export function checkLowestNorms(row: ArrayLike<number>, norm: (p: number) => number, L: number, B: number, w: number, rel: number, what: string): void {
  const P = L - w;
  const prefix = Array.from(row).slice(0, B - w);
  assert.deepEqual(Array.from(row).slice(B - w), Array.from({ length: w }, (_, i) => P + i), `${what}: the last w are kept`);
  assert.deepEqual(prefix, [...prefix].sort((a, b) => a - b), `${what}: ascending`);
  assert.ok(prefix.every((p) => p >= 0 && p < P), `${what}: B − w prefix positions`);
  const keptSet = new Set(prefix);
  const cut = Math.max(...prefix.map(norm));
  for (let p = 0; p < P; p++) {
    if (!keptSet.has(p)) assert.ok(norm(p) >= cut * (1 - rel), `${what}: dropped position ${p} has norm ${norm(p)} < the largest kept ${cut}`);
  }
}
