import type { PackResult } from './pack';
import { compareCodeUnits, type SkipReason } from './types';

/** One line of the manifest: a path and what became of it. */
export interface ManifestEntry {
  /** Path relative to the repository root, `/`-separated; directories end with `/`. */
  path: string;
  /** `'included'`, or why the entry was left out. */
  status: 'included' | SkipReason;
  /** Tokens of the section: for included files, and for over-budget files that were tokenized. */
  tokens?: number;
  /** Size on disk in bytes, where known. */
  bytes?: number;
  /** The reason's detail, or for included files their notes joined with `'; '` (may be absent). */
  detail?: string;
}

/** Totals of a pack, by status. */
export interface ManifestTotals {
  /** Included files, their bytes on disk and their tokens. */
  files: number;
  bytes: number;
  tokens: number;
  /** Number of entries per reason they were left out (only reasons that occur). */
  leftOut: Partial<Record<SkipReason, number>>;
}

/**
 * Flattens a `PackResult` into one list: included files first, in prompt order, then every
 * skipped and ignored entry in code-unit order of path. Pure function.
 */
export function manifestEntries(result: PackResult): ManifestEntry[] {
  const included: ManifestEntry[] = result.files.map((f) => ({
    path: f.path,
    status: 'included',
    tokens: f.tokens,
    bytes: f.bytes,
    ...(f.notes.length > 0 ? { detail: f.notes.join('; ') } : {}),
  }));
  const leftOut: ManifestEntry[] = [
    ...result.skipped.map((s): ManifestEntry => ({
      path: s.path,
      status: s.reason,
      ...(s.tokens !== undefined ? { tokens: s.tokens } : {}),
      ...(s.detail !== undefined ? { detail: s.detail } : {}),
    })),
    ...result.ignored.map((e): ManifestEntry => ({ path: e.isDirectory ? e.path + '/' : e.path, status: e.reason, detail: e.detail })),
  ].sort((a, b) => compareCodeUnits(a.path, b.path));
  return [...included, ...leftOut];
}

/** Counts of a `PackResult`: included files, bytes and tokens, and left-out entries by reason. Pure function. */
export function manifestTotals(result: PackResult): ManifestTotals {
  const leftOut: Partial<Record<SkipReason, number>> = {};
  for (const { reason } of [...result.skipped, ...result.ignored]) leftOut[reason] = (leftOut[reason] ?? 0) + 1;
  return { files: result.files.length, bytes: result.totalBytes, tokens: result.totalTokens, leftOut };
}
