/**
 * What the engine runs on: the CPU variant ggml chose for this CPU and the GPU backends it loaded
 * (native/addon/backends.cpp), said in one line for `reposnap ask --verbose`, the stats JSON and the
 * extension's log. A portable engine (native/build.mjs, the default) holds one CPU backend library
 * per instruction-set level (ggml's GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS) and loads the best one
 * the CPU supports (`ggml_backend_load_best` by each library's `ggml_backend_score`); GPU backends
 * are modules in `gpu/` beside the addon, loaded as `REPOSNAP_BACKEND` allows (auto, cpu, cuda,
 * vulkan, metal).
 */
import type { NativeAddon, NativeBackend } from './native';

/** How the addon loaded its backends (`backendLoad()`, native/addon/backends.h BackendLoad). */
export interface NativeBackendLoad {
  /** A portable build (GGML_BACKEND_DL): backends are modules loaded at start-up. */
  dynamic: boolean;
  /** The addon's folder, where the CPU variants and RPC are looked for (GPU modules: `<dir>/gpu`). */
  dir: string;
  /** `REPOSNAP_BACKEND` as the engine read it: auto (default), cpu, cuda, vulkan or metal. */
  request: string;
  /** The CPU variant in use (`haswell`, `zen4`, `sse42`, …; `x64` is the baseline); "" in a static build. */
  cpuVariant: string;
  /** GPU module files loaded and holding at least one device. */
  loaded: string[];
  /** One line per GPU backend asked for or found but not used, with the reason (a driver missing, no device). */
  notes: string[];
}

/** The engine's backends in a form for logs and JSON. */
export interface EngineBackends {
  /** `portable` (CPU kernels chosen at run time) or `static` (built for one CPU). */
  build: 'portable' | 'static';
  /** The CPU variant ggml loaded; `native` for a static build. */
  cpuVariant: string;
  /** Devices other than the CPU that layers can go to (`Vulkan0: llvmpipe …`), in registration order. */
  gpus: string[];
  /** Backend names in registration order (`Vulkan`, `RPC`, `CPU`). */
  backends: string[];
  /**
   * Why a GPU backend is not used (see {@link NativeBackendLoad.notes}), to tell the user once: a
   * module that cannot be loaded or initialised, or one asked for by name that found no device.
   */
  notes: string[];
  /**
   * Notes not worth a notice: with `REPOSNAP_BACKEND=auto` (`reposnap.GPU: auto`), a GPU module that
   * found no device (the packaged Vulkan module on a machine without a Vulkan GPU) is the normal
   * case, said in the log and with `--verbose` only.
   */
  quietNotes: string[];
}

/** Whether a note of `backendLoad()` is the normal case under `request` ({@link EngineBackends.quietNotes}). */
export function isQuietNote(note: string, request: string): boolean {
  return request === 'auto' && /: the \w+ backend found no device$/.test(note);
}

/**
 * Reads the engine's backends from the loaded addon. An addon built before `backendLoad` existed is
 * reported as static with the backends it lists.
 * @param addon the loaded addon (loadAddon()).
 */
export function engineBackends(addon: Pick<NativeAddon, 'backends' | 'backendLoad'>): EngineBackends {
  const load = addon.backendLoad?.();
  const list: NativeBackend[] = addon.backends?.() ?? [];
  const cpu = list.find((b) => b.name === 'CPU');
  const gpus = list.flatMap((b) => b.devices.filter((d) => d.type === 'gpu' || d.type === 'igpu').map((d) => `${d.name}: ${d.description}`));
  return {
    build: load?.dynamic ? 'portable' : 'static',
    cpuVariant: load?.dynamic ? cpu?.variant || load.cpuVariant || 'unknown' : 'native',
    gpus,
    backends: list.map((b) => b.name),
    notes: (load?.notes ?? []).filter((n) => !isQuietNote(n, load!.request)),
    quietNotes: (load?.notes ?? []).filter((n) => isQuietNote(n, load!.request)),
  };
}

/**
 * One line for a log: `engine: portable, CPU variant haswell; GPU Vulkan0: …; backends Vulkan, RPC,
 * CPU`, then the quiet notes (`; not used: vulkan: the vulkan backend found no device`).
 * @param e the engine's backends ({@link engineBackends}).
 */
export function describeEngine(e: EngineBackends): string {
  const cpu = e.build === 'portable' ? `portable, CPU variant ${e.cpuVariant}` : 'static build for this CPU';
  const gpu = e.gpus.length > 0 ? `GPU ${e.gpus.join(', ')}` : 'no GPU';
  const quiet = (e.quietNotes ?? []).length > 0 ? `; not used: ${e.quietNotes.join('; ')}` : '';
  return `engine: ${cpu}; ${gpu}; backends ${e.backends.join(', ') || 'none'}${quiet}`;
}
