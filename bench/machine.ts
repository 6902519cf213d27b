/**
 * The machine a benchmark ran on, for its results file. Two machines can give other numbers for
 * the same run: ggml's CPU backend picks its kernels by the CPU's features at build time
 * (`native/build.mjs` cpuIsaDefs: the host's instruction sets), so an AVX-512 build sums in other
 * lanes than an AVX2 one, the low-order bits of the logits differ, and near-tie greedy tokens and
 * SnapKV's top-k can flip (seen on bench/fidelity, likely for this reason: SnapKV's top-1 on one
 * prompt 78.1 % on one machine, 87.5 % on another, same engine sources). A run's numbers compare
 * only with runs whose `ggml` line is the same.
 */
import os from 'node:os';
import { loadAddon } from '../src/engine/native';

/** What {@link machineInfo} records. */
export interface MachineInfo {
  /** Node.js version (`process.version`). */
  node: string;
  /** Logical CPUs (`os.cpus().length`). */
  cpus: number;
  /** The first CPU's model name (`os.cpus()[0].model`). */
  cpu: string;
  /** `platform release` (`os.platform()`, `os.release()`). */
  os: string;
  /** 1-, 5- and 15-minute load averages when recorded, 2 decimals. */
  loadavg: number[];
  /** The engine's `llama_print_system_info()` line: the CPU features its ggml was built with. */
  ggml: string;
}

/** The machine's 1-, 5- and 15-minute load averages now (`os.loadavg()`), rounded to 0.01. */
export function loadAverages(): number[] {
  return os.loadavg().map((x) => Math.round(x * 100) / 100);
}

/**
 * Reads the machine's description now.
 * @throws EngineError when the native engine is not built (loadAddon).
 */
export function machineInfo(): MachineInfo {
  const cpus = os.cpus();
  return {
    node: process.version,
    cpus: cpus.length,
    cpu: cpus[0]?.model ?? 'unknown',
    os: `${os.platform()} ${os.release()}`,
    loadavg: loadAverages(),
    ggml: loadAddon().systemInfo().trim(),
  };
}
