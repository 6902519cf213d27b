/**
 * `reposnap ask --show-context`: what the model read and what SnapKV kept, as a text table —
 * the summary line, the files in the prompt sorted by kept share (highest first) with their
 * tokens, then the files left out and why.
 */
import { escapeControls, quotePath } from './terminal-text';
import { autoPackingText, byKeptShare, leftOutText, percent, sectionName, statusLabel, summaryText, type ContextReport } from '../pipeline/context-report';

/** Width of the kept-share bar [characters]. */
const BAR_CHARS = 10;

/**
 * Most left-out files the table lists, those left out for another reason than the budget first
 * (the rest are counted by reason): with the default packing on this repository 461 of 475 files
 * are left out, and 461 lines of "did not fit the context" buried the answer's stats.
 */
export const TABLE_LEFT_OUT_LINES = 20;

/**
 * The table, lines joined with `\n` (no trailing newline):
 *
 * ```text
 * context: Packed 2 of 3 files (8 tokens) · SnapKV kept 4 per head (31 %)
 *   kept               tokens  file
 *   ███·······   33 %       3  a.ts
 *   ██········   15 %       5  b.ts
 * left out: 1 file
 *   big.ts: did not fit the context — needs 900 tokens, 2 of 10 left
 * ```
 *
 * The `packing:` line is there only when the `auto` packing chose (`summary.packingAuto`;
 * {@link autoPackingText}). The prompt's sections that are not files (the ranked packing's file tree and repository map)
 * follow the files as `(file tree)`, `(repository map)`, `(retrieved chunks)`. Files in the map
 * only or with retrieved chunks read `path (map)` and `path (retrieved)` with the tokens and kept share of their blocks in those
 * sections, a file in both `path (map + retrieved)` with its blocks in both. A share that is not
 * known (a continued thread) reads `?`. Past the report's listing
 * limit (`summary.leftOutUnlisted`), the left-out count includes the unlisted files and a last
 * left-out line counts them by reason; the table itself lists at most {@link TABLE_LEFT_OUT_LINES}
 * left-out files (other reasons than the budget first) and counts the rest the same way; `ignored` entries are counted in a last line, pointing to
 * `reposnap pack --list`. Paths and details come from the repository: a path with whitespace, a
 * quote or a control character is quoted (`quotePath`), control characters in a detail (a
 * symlink's target) are escaped (`escapeControls`), so that no file name drives the terminal.
 */
export function formatContextTable(report: ContextReport): string {
  const lines = [`context: ${summaryText(report.summary)}`];
  if (report.summary.packingAuto === true && report.summary.packing !== undefined) lines.push(`packing: ${autoPackingText(report.summary.packing)}`);
  const rows = [
    ...byKeptShare(report.files).map((f) => ({ name: f.status === 'full' ? quotePath(f.path) : `${quotePath(f.path)} (${statusLabel(f)})`, tokens: f.tokens, keptShare: f.keptShare })),
    ...(report.sections ?? []).map((s) => ({ name: `(${sectionName(s.kind)})`, tokens: s.tokens, keptShare: s.keptShare })),
  ];
  if (rows.length > 0) {
    const tok = (t: number | null) => (t === null ? '-' : t.toLocaleString('en-US'));
    const tokW = Math.max('tokens'.length, ...rows.map((r) => tok(r.tokens).length));
    lines.push(`  ${'kept'.padEnd(BAR_CHARS + 9)}${'tokens'.padStart(tokW)}  file`);
    for (const r of rows) {
      const share = r.keptShare === null ? `${' '.repeat(BAR_CHARS)}      ?` : `${bar(r.keptShare)} ${percent(r.keptShare).padStart(6)}`;
      lines.push(`  ${share}  ${tok(r.tokens).padStart(tokW)}  ${r.name}`);
    }
  }
  const left = report.files.filter((f) => f.status === 'left-out');
  const unlisted = report.summary.leftOutUnlisted ?? 0;
  const leftCount = left.length + unlisted;
  if (leftCount > 0) {
    lines.push(`left out: ${leftCount.toLocaleString('en-US')} file${leftCount === 1 ? '' : 's'}`);
    // what a user may act on (a secret, a binary, a size cap) before the files the budget left out
    const shown = [...left.filter((f) => f.reason !== 'over-budget'), ...left.filter((f) => f.reason === 'over-budget')].slice(0, TABLE_LEFT_OUT_LINES);
    for (const f of shown) lines.push(`  ${quotePath(f.path)}: ${escapeControls(leftOutText(f))}`);
    const more = leftCount - shown.length;
    if (more > 0) {
      const byReason: Partial<Record<string, number>> = report.summary.leftOutReasons ?? {};
      if (report.summary.leftOutReasons === undefined) for (const f of left) byReason[f.reason ?? 'left out'] = (byReason[f.reason ?? 'left out'] ?? 0) + 1;
      const reasons = Object.entries(byReason)
        .map(([reason, n]) => `${reason} ${n!.toLocaleString('en-US')}`)
        .join(', ');
      lines.push(`  … ${more.toLocaleString('en-US')} more not listed (all left out by reason: ${reasons}; --json or 'reposnap pack --list' lists them)`);
    }
  }
  const ignored = report.summary.ignored;
  if (ignored > 0) {
    lines.push(`ignored: ${ignored.toLocaleString('en-US')} entr${ignored === 1 ? 'y' : 'ies'} by .gitignore and exclude patterns, never read (reposnap pack --list shows them)`);
  }
  return lines.join('\n');
}

/** `███·······`: the share in tenths, rounded (a share above 0 shows at least one block). */
function bar(share: number): string {
  const full = share > 0 ? Math.max(1, Math.round(share * BAR_CHARS)) : 0;
  return '█'.repeat(full) + '·'.repeat(BAR_CHARS - full);
}
