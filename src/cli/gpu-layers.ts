/**
 * Whether `--gpu-layers` can do anything with this engine: an engine without a GPU backend module
 * (native/build/gpu/ empty, or a static CPU build) has no GPU device, and llama.cpp then keeps every layer on the CPU
 * without a word. The CLI warns once instead of accepting the flag silently.
 */
import { loadAddon, type NativeBackend } from '../engine/native';

/** The ggml backend names of the GPU builds (`REPOSNAP_GPU=cuda|vulkan|metal`). */
const GPU_BACKEND_NAMES = ['CUDA', 'Vulkan', 'Metal'];

/**
 * The warning for `--gpu-layers <n>` on an engine that cannot offload, or undefined.
 * @param gpuLayers the layers asked for (0 or absent: nothing to warn about).
 * @param rpc whether `--rpc` servers take the layers (they hold their own devices: no warning).
 * @param backends the engine's backends (default: the loaded addon's; an engine too old to list
 *   them gives no warning).
 */
export function gpuLayersWarning(gpuLayers: number | undefined, rpc: boolean, backends: NativeBackend[] | undefined = loadAddon().backends?.()): string | undefined {
  if (!gpuLayers || rpc || backends === undefined) return undefined;
  if (backends.some((b) => b.devices.some((d) => d.type === 'gpu' || d.type === 'igpu'))) return undefined;
  const built = backends.filter((b) => GPU_BACKEND_NAMES.includes(b.name)).map((b) => b.name);
  if (built.length > 0) return `this engine's ${built.join(', ')} backend found no GPU device: --gpu-layers ${gpuLayers} has no effect, every layer runs on the CPU`;
  return `this engine was built without a GPU backend: --gpu-layers has no effect; build one with REPOSNAP_GPU=vulkan|cuda|metal npm run build:native (its module goes to native/build/gpu/)`;
}
