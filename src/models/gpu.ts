/**
 * Chooses the engine build for `reposnap.GPU`. RepoSnap's engine is built per backend
 * (`native/build/reposnap.node` for the CPU, `reposnap-<gpu>.node` for `REPOSNAP_GPU=<gpu>
 * npm run build:native`); `auto` asks node-llama-cpp which GPU backends this machine can run
 * (`getLlamaGpuTypes('supported')`: it looks for drivers and libraries, it loads no binary)
 * and takes the first one RepoSnap has a build for, else the CPU build.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GpuChoice } from '../config/settings';

/** GPU backends in order of preference for `auto`. */
export const GPU_BACKENDS = ['cuda', 'vulkan', 'metal'] as const;
/** A GPU backend. */
export type GpuBackend = (typeof GPU_BACKENDS)[number];

/** The engine build chosen for a setting. */
export interface EngineBuild {
  backend: GpuBackend | 'cpu';
  /** The addon file (`REPOSNAP_ADDON` for the engine process). */
  addon: string;
  /** Why this build was chosen (for the log and the status bar tooltip). */
  reason: string;
}

/** Lists the GPU backends usable on this machine. */
export type GpuDetector = () => Promise<string[]>;

/** node-llama-cpp's detection (ESM, loaded on demand). */
export const detectGpus: GpuDetector = async () => {
  const { getLlamaGpuTypes } = await import('node-llama-cpp');
  return (await getLlamaGpuTypes('supported')).filter((g): g is GpuBackend => typeof g === 'string');
};

/** The addon file of a backend under `root` (the extension or package folder). */
export function addonFile(root: string, backend: GpuBackend | 'cpu'): string {
  return path.join(root, 'native', 'build', backend === 'cpu' ? 'reposnap.node' : `reposnap-${backend}.node`);
}

/**
 * The engine build for `choice`.
 * @throws Error when a specific backend is asked for and RepoSnap has no build of it.
 */
export async function selectEngineBuild(choice: GpuChoice, root: string, detect: GpuDetector = detectGpus): Promise<EngineBuild> {
  const cpu: EngineBuild = { backend: 'cpu', addon: addonFile(root, 'cpu'), reason: 'reposnap.GPU is cpu' };
  if (choice === 'cpu') return cpu;
  if (choice !== 'auto') {
    const addon = addonFile(root, choice);
    if (!fs.existsSync(addon)) {
      throw new Error(`reposnap.GPU is '${choice}', but this RepoSnap has no ${choice} engine (${addon}): build it with REPOSNAP_GPU=${choice} npm run build:native, or set reposnap.GPU to auto or cpu.`);
    }
    return { backend: choice, addon, reason: `reposnap.GPU is ${choice}` };
  }
  let found: string[] = [];
  try {
    found = await detect();
  } catch (e) {
    return { ...cpu, reason: `GPU detection failed (${(e as Error).message}): using the CPU` };
  }
  for (const b of GPU_BACKENDS) {
    if (found.includes(b) && fs.existsSync(addonFile(root, b))) return { backend: b, addon: addonFile(root, b), reason: `auto: ${b} detected` };
  }
  const detected = found.length > 0 ? `detected ${found.join(', ')} but no RepoSnap build for it` : 'no GPU detected';
  return { ...cpu, reason: `auto: ${detected}; using the CPU` };
}
