/**
 * Float64 kernels shared by the reference forward passes (./llama-ref, ./gpt-oss-ref).
 */

/**
 * Matrix-vector product y[o] = Σ_i W[off + o·nIn + i] · x[i] (+ b[bOff + o]): W holds ggml dims
 * [ne0 = nIn, ne1 = nOut] (row-major [nOut][nIn]) from element `off` (one expert's slice of a 3-D
 * tensor); `b` an optional bias read from element `bOff`. x: [nIn] → y: [nOut].
 */
export function matvec(W: Float64Array, nIn: number, nOut: number, x: Float64Array, b?: Float64Array, off = 0, bOff = 0): Float64Array {
  const y = new Float64Array(nOut);
  for (let o = 0; o < nOut; o++) {
    let s = b === undefined ? 0 : b[bOff + o]!;
    const base = off + o * nIn;
    for (let i = 0; i < nIn; i++) s += W[base + i]! * x[i]!;
    y[o] = s;
  }
  return y;
}

/** RMSNorm then elementwise weight: x / sqrt(mean(x²) + eps) ⊙ w. [n] → [n]. */
export function rmsNorm(x: Float64Array, w: Float64Array, eps: number): Float64Array {
  let ss = 0;
  for (let i = 0; i < x.length; i++) ss += x[i]! * x[i]!;
  const inv = 1 / Math.sqrt(ss / x.length + eps);
  const y = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) y[i] = x[i]! * inv * w[i]!;
  return y;
}
