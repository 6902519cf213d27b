/**
 * ggml's x86-64 CPU variants (GGML_CPU_ALL_VARIANTS in ggml/src/CMakeLists.txt, gcc/clang build) and
 * the variant its loader picks for a CPU, written out independently of ggml's code from its two
 * tables: each variant's instruction sets (CMakeLists.txt), and the score each set adds when the CPU
 * has it (ggml/src/ggml-cpu/arch/x86/cpu-feats.cpp ggml_backend_cpu_x86_score: a variant that needs
 * a set the CPU lacks scores 0; the highest score is loaded). Sets are named as Linux's
 * /proc/cpuinfo flags.
 */

/** Variant name → the /proc/cpuinfo flags it needs, in ggml's order. */
export const X86_VARIANTS: Record<string, string[]> = {
  x64: [],
  sse42: ['sse4_2'],
  sandybridge: ['sse4_2', 'avx'],
  ivybridge: ['sse4_2', 'avx', 'f16c'],
  piledriver: ['sse4_2', 'avx', 'f16c', 'fma'],
  haswell: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2'],
  skylakex: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512'],
  cannonlake: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512vbmi'],
  cascadelake: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512_vnni'],
  icelake: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512vbmi', 'avx512_vnni'],
  cooperlake: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512_vnni', 'avx512_bf16'],
  zen4: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512vbmi', 'avx512_vnni', 'avx512_bf16'],
  alderlake: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx_vnni'],
  sapphirerapids: ['sse4_2', 'avx', 'f16c', 'fma', 'avx2', 'bmi2', 'avx512', 'avx512vbmi', 'avx512_vnni', 'avx512_bf16', 'amx_tile', 'amx_int8'],
};

/** cpu-feats.cpp's score of each set (`avx512` = AVX512F+CD+VL+DQ+BW together; AMX_TILE scores nothing of its own). */
const SCORE: Record<string, number> = {
  fma: 1, f16c: 1 << 1, sse4_2: 1 << 2, bmi2: 1 << 3, avx: 1 << 4, avx2: 1 << 5, avx_vnni: 1 << 6,
  avx512: 1 << 7, avx512vbmi: 1 << 8, avx512_bf16: 1 << 9, avx512_vnni: 1 << 10, amx_int8: 1 << 11, amx_tile: 0,
};

/** Whether the CPU has a set (`avx512`: all five AVX-512 subsets ggml checks). */
function has(flags: Set<string>, set: string): boolean {
  if (set === 'avx512') return ['avx512f', 'avx512cd', 'avx512vl', 'avx512dq', 'avx512bw'].every((f) => flags.has(f));
  return flags.has(set);
}

/**
 * The variant ggml loads on a CPU with these /proc/cpuinfo flags: the highest score among the
 * variants whose sets it has (1 + the sets' scores); the first listed wins a tie, as ggml keeps the
 * first best in directory order only when strictly greater (no two variants here tie).
 */
export function expectedX86Variant(flags: Set<string>): string {
  let best = 'x64';
  let bestScore = 0;
  for (const [name, sets] of Object.entries(X86_VARIANTS)) {
    if (!sets.every((s) => has(flags, s))) continue;
    const score = 1 + sets.reduce((a, s) => a + SCORE[s], 0);
    if (score > bestScore) [best, bestScore] = [name, score];
  }
  return best;
}

/** The flags of this machine's first CPU (Linux), or undefined elsewhere. */
export function hostCpuFlags(read: (f: string) => string): Set<string> | undefined {
  try {
    const m = /^flags\s*:\s*(.*)$/m.exec(read('/proc/cpuinfo'));
    return m ? new Set(m[1].split(/\s+/)) : undefined;
  } catch {
    return undefined;
  }
}
