/** The one-line summary printed after an answer. */
import type { AskStats } from '../pipeline/ask';

/**
 * `stats: L=… B=… ratio=… …` — key=value pairs, times in ms, speeds in tokens/s, sizes in bytes.
 * With the ranked packing, `packing=ranked mapped=N retrieved=M` follow `skipped` (files in the
 * repository map only, files with retrieved chunks; `ContextSummary`); a packing the `auto`
 * packing chose reads `packing=auto:ranked mapped=N retrieved=M` or `packing=auto:smallest-first`. For an interleaved
 * sliding-window model (Gemma 3) B counts the global layers and `swa_cells=C swa_window=W` follow
 * it: the cells the sliding-window layers hold (min(L, W)) and their window (issue 17).
 */
export function formatStats(s: AskStats): string {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : 'nan');
  return [
    'stats:',
    `L=${s.L}`,
    `B=${s.B}`,
    ...(s.swaWindow !== undefined ? [`swa_cells=${s.swaCells ?? 0}`, `swa_window=${s.swaWindow}`] : []),
    `ratio=${f(s.ratio, 2)}`,
    `snap=${s.snap ? 'on' : 'off'}`,
    `files=${s.files}`,
    `skipped=${s.skipped}`,
    ...packingPairs(s),
    ...(s.droppedTurns > 0 ? [`dropped_turns=${s.droppedTurns}`] : []),
    `pack_ms=${f(s.packMs)}`,
    `cache=${s.cache}`,
    `reused=${s.reusedTokens}`,
    `prefilled=${s.prefilledTokens}`,
    `restore_ms=${f(s.restoreMs)}`,
    `prefill_ms=${f(s.prefillMs)}`,
    `prefill_tok_s=${f(s.prefillTokS)}`,
    `snap_ms=${f(s.snapMs, 2)}`,
    `ttft_ms=${f(s.ttftMs)}`,
    `decode_tokens=${s.decodeTokens}`,
    `decode_tok_s=${f(s.decodeTokS)}`,
    `n_kv=${s.nKvBefore}->${s.nKvAfter}`,
    `kv_bytes=${s.kvBytesBefore}->${s.kvBytesAfter}`,
    `stop=${s.stopReason}`,
  ].join(' ');
}

/** The stats line's packing pairs (see {@link formatStats}); none for a smallest-first packing that auto did not choose. */
function packingPairs(s: AskStats): string[] {
  const summary = s.context?.summary;
  if (summary?.packing === undefined) return [];
  const auto = summary.packingAuto === true ? 'auto:' : '';
  if (summary.packing === 'ranked') return [`packing=${auto}ranked`, `mapped=${summary.mappedFiles ?? 0}`, `retrieved=${summary.retrievedFiles ?? 0}`];
  return auto === '' ? [] : [`packing=${auto}smallest-first`];
}
