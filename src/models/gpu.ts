/**
 * Chooses the engine for `reposnap.GPU`.
 *
 * A portable engine (native/build.mjs, the default build and what the packages ship) is one addon,
 * `native/build/reposnap.node`, beside its shared libraries; its GPU backends are modules in
 * `native/build/gpu/` (`libggml-vulkan.so`, `ggml-cuda.dll`, …) that the engine process loads as
 * `REPOSNAP_BACKEND` says (native/addon/backends.cpp): `auto` loads every one present and keeps
 * those that initialise and find a device, falling back to the CPU with a note; `cpu` loads none.
 *
 * A static engine (`REPOSNAP_PORTABLE=0`) is built per backend (`reposnap.node` for the CPU,
 * `reposnap-<gpu>.node` for `REPOSNAP_GPU=<gpu>`); `auto` asks node-llama-cpp which GPU backends
 * this machine can run (`getLlamaGpuTypes('supported')`: it looks for drivers and libraries, it
 * loads no binary) and takes the first one RepoSnap has a build for, else the CPU build.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { GpuChoice } from '../config/settings';
import { engineDir } from '../engine/native';

/** GPU backends in order of preference for `auto`. */
export const GPU_BACKENDS = ['cuda', 'vulkan', 'metal'] as const;
/** A GPU backend. */
export type GpuBackend = (typeof GPU_BACKENDS)[number];

/** The engine build chosen for a setting. */
export interface EngineBuild {
  /** The backend asked of the engine (`auto`: the portable engine's own choice among its GPU modules). */
  backend: GpuBackend | 'cpu' | 'auto';
  /** The addon file (`REPOSNAP_ADDON` for the engine process). */
  addon: string;
  /** Environment for the engine process: `REPOSNAP_ADDON`, and `REPOSNAP_BACKEND` for a portable engine. */
  env: Record<string, string>;
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

/**
 * The file name of one of the engine's libraries on `platform`: a shared library (`ggml-base` →
 * `libggml-base.so`, `.dylib` on macOS, `ggml-base.dll`) or a backend module (CMake MODULE: `.so`
 * on macOS too; ggml's loader looks for `libggml-<name>.so` / `ggml-<name>.dll`).
 */
export function ggmlLibraryName(name: string, kind: 'library' | 'module', platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return `${name}.dll`;
  return `lib${name}.${kind === 'library' && platform === 'darwin' ? 'dylib' : 'so'}`;
}

/** The addon file of a backend under `root` (the extension or package folder); a portable engine has one for all. */
export function addonFile(root: string, backend: GpuBackend | 'cpu'): string {
  if (backend !== 'cpu' && isPortable(root)) return addonFile(root, 'cpu');
  return path.join(engineDir(root), backend === 'cpu' ? 'reposnap.node' : `reposnap-${backend}.node`);
}

/** The GPU module of a portable engine under `root` (it may be missing). */
export function gpuModuleFile(root: string, backend: GpuBackend): string {
  return path.join(engineDir(root), 'gpu', ggmlLibraryName(`ggml-${backend}`, 'module'));
}

/** Whether the engine under `root` is portable (its ggml is a shared library beside the addon). */
export function isPortable(root: string): boolean {
  return fs.existsSync(path.join(engineDir(root), ggmlLibraryName('ggml-base', 'library')));
}

/**
 * The engine build for `choice`.
 * @throws Error when a specific backend is asked for and RepoSnap has no build (or module) of it.
 */
export async function selectEngineBuild(choice: GpuChoice, root: string, detect: GpuDetector = detectGpus): Promise<EngineBuild> {
  const cpuAddon = addonFile(root, 'cpu');
  if (isPortable(root)) {
    const build = (backend: EngineBuild['backend'], reason: string): EngineBuild => ({ backend, addon: cpuAddon, env: { REPOSNAP_ADDON: cpuAddon, REPOSNAP_BACKEND: backend }, reason });
    if (choice === 'cpu') return build('cpu', 'reposnap.GPU is cpu');
    if (choice !== 'auto') {
      const mod = gpuModuleFile(root, choice);
      if (!fs.existsSync(mod)) {
        throw new Error(`reposnap.GPU is '${choice}', but this RepoSnap has no ${choice} backend (${mod} is missing): build it with REPOSNAP_GPU=${choice} npm run build:native, or set reposnap.GPU to auto or cpu.`);
      }
      return build(choice, `reposnap.GPU is ${choice}`);
    }
    const present = GPU_BACKENDS.filter((b) => fs.existsSync(gpuModuleFile(root, b)));
    return build('auto', present.length > 0 ? `auto: the engine uses ${present.join(' or ')} when it finds a device, else the CPU` : 'auto: this engine has no GPU backend; using the CPU');
  }
  const cpu: EngineBuild = { backend: 'cpu', addon: cpuAddon, env: { REPOSNAP_ADDON: cpuAddon }, reason: 'reposnap.GPU is cpu' };
  if (choice === 'cpu') return cpu;
  if (choice !== 'auto') {
    const addon = addonFile(root, choice);
    if (!fs.existsSync(addon)) {
      throw new Error(`reposnap.GPU is '${choice}', but this RepoSnap has no ${choice} engine (${addon}): build it with REPOSNAP_GPU=${choice} npm run build:native, or set reposnap.GPU to auto or cpu.`);
    }
    return { backend: choice, addon, env: { REPOSNAP_ADDON: addon }, reason: `reposnap.GPU is ${choice}` };
  }
  let found: string[] = [];
  try {
    found = await detect();
  } catch (e) {
    return { ...cpu, reason: `GPU detection failed (${(e as Error).message}): using the CPU` };
  }
  for (const b of GPU_BACKENDS) {
    const addon = addonFile(root, b);
    if (found.includes(b) && fs.existsSync(addon)) return { backend: b, addon, env: { REPOSNAP_ADDON: addon }, reason: `auto: ${b} detected` };
  }
  const detected = found.length > 0 ? `detected ${found.join(', ')} but no RepoSnap build for it` : 'no GPU detected';
  return { ...cpu, reason: `auto: ${detected}; using the CPU` };
}
