/**
 * The engine tests' arithmetic class: whether the engine under test computes its matrix products
 * in single precision (llama.cpp's CPU backend) or rounds their operands to half precision (a GPU
 * build with layers offloaded: the Vulkan lane, `.ci/vulkan.sh`). The float64-reference tests pick
 * their tolerances by it; everything else (keep-all bit-identity, state files, guards) is exact on
 * every backend and does not depend on it.
 *
 * Measured (issue 18, session 10, `bench/results/vulkan-precision-issue18.md`): ggml-vulkan rounds
 * matrix-product operands to f16 on any device with 16-bit float arithmetic, lavapipe included:
 * its matmul shaders stage f32 operands through f16 shared memory (the first weight product of the
 * tiny model, `Qcur-0`, is off by 2.2e-4 relative to the CPU's; 3.1e-7 with `GGML_VK_DISABLE_F16`),
 * and it copies a non-contiguous f32 operand (a KV head's keys viewed out of the cache, as in
 * llama.cpp's own attention and in SnapKV's scoring graph) to f16 before the product whatever the
 * requested precision (`ggml_vk_mul_mat_q_f16`: `kq-0` off by 5.0e-4 relative even with
 * `GGML_VK_DISABLE_F16`). The model's own forward pass therefore differs from the float64
 * reference by ~1e-2 in the logits (CPU: 5.5e-6), and SnapKV's pooled scores, computed from those
 * queries and keys, by up to 1.1e-2 (CPU: 7.9e-6 with flash attention off, 2.7e-3 on).
 */
import path from 'node:path';
import { defaultGpuLayers } from '../../src/engine/model';

/**
 * `'f32'`: the engine runs on llama.cpp's CPU backend (the default addon, or no layer offloaded).
 * `'f16-operands'`: the engine runs on a GPU backend — `REPOSNAP_BACKEND` asks the portable engine
 * for one (`cuda`, `vulkan`, `metal`: its module in native/build/gpu, built with `REPOSNAP_GPU=<gpu>
 * npm run build:native`), or `REPOSNAP_ADDON` names a static GPU build (`reposnap-<gpu>.node`) —
 * and `REPOSNAP_GPU_LAYERS` offloads layers to it.
 */
export type EnginePrecision = 'f32' | 'f16-operands';

/**
 * The arithmetic class of the engine the tests load (see {@link EnginePrecision}), from the
 * environment the tests run in. Throws when `REPOSNAP_GPU_LAYERS` is not a whole number
 * ({@link defaultGpuLayers}).
 */
export function enginePrecision(env: NodeJS.ProcessEnv = process.env): EnginePrecision {
  const addon = env.REPOSNAP_ADDON;
  const gpuBuild = (addon !== undefined && /^reposnap-[a-z0-9]+\.node$/.test(path.basename(addon))) || ['cuda', 'vulkan', 'metal'].includes(env.REPOSNAP_BACKEND ?? '');
  return gpuBuild && defaultGpuLayers(env) > 0 ? 'f16-operands' : 'f32';
}

/**
 * The largest |Δ| allowed between the engine's pooled SnapKV scores (sums of up to w softmax
 * probabilities, so in [0, w]) and the float64 reference's, for an engine configuration.
 * - f32 engine, flash attention off, f32 cache: 1e-4 (measured 7.9e-6).
 * - f32 engine, flash attention on or an f16 cache: `halfCpu` (the caller's, measured for its
 *   shapes: llama.cpp's CPU flash attention computes in half precision).
 * - f16-operand engine: 2e-2 in every configuration (measured on lavapipe: 5.6e-3 and 1.5e-3 with
 *   flash attention off, max and average pooling, 1.1e-2 and 3.8e-3 on; the matrix's corner with
 *   flash attention off and an f32 cache 7.5e-4).
 * A wrong graph is far outside every one of these: the reference with the pooling kernel two
 * wider, or shifted by one position, differs from the engine's scores by 0.56 or more.
 */
export function scoreTolerance(opts: { flashAttention: 'on' | 'off'; kvCacheType: string; halfCpu: number }, precision: EnginePrecision = enginePrecision()): number {
  if (precision === 'f16-operands') return 2e-2;
  return opts.flashAttention === 'on' || opts.kvCacheType !== 'f32' ? opts.halfCpu : 1e-4;
}
