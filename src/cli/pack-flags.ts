/**
 * The packing flags that `reposnap ask` and `reposnap pack` share: one option table, one help
 * text, one parser, so that `pack` lists exactly what `ask` would pack with the same flags.
 */
import { DEFAULT_SETTINGS } from '../config/settings';
import { DEFAULT_MAX_FILE_BYTES } from '../context/filter';
import type { PackNotice } from '../context/pack';
import { PACK_ORDERS, type PackOrder } from '../context/pack-order';
import { DEFAULT_MAX_WALK_ENTRIES } from '../context/walk';
import { escapeControls } from './terminal-text';
import { type ArgumentChecks, intOption, PACKING_HELP, packingOption, type PackingFlag, UsageError } from './usage';

/** util.parseArgs options of the packing flags (spread into each command's table). */
export const PACK_FLAGS = {
  include: { type: 'string', multiple: true },
  exclude: { type: 'string', multiple: true },
  'no-default-excludes': { type: 'boolean' },
  'keep-generated': { type: 'boolean' },
  order: { type: 'string' },
  packing: { type: 'string' },
  'max-file-bytes': { type: 'string' },
  'max-walk-entries': { type: 'string' },
} as const;

/** `--order`'s values ({@link PackOrder}). */
const ORDERS: readonly PackOrder[] = PACK_ORDERS;

/**
 * The packing flags' help lines, the same in `reposnap ask --help` and `reposnap pack --help`.
 * @param packingNote lines printed after `--packing`'s (each indented like a description).
 */
export function packFlagsHelp(packingNote = ''): string {
  return `  --include <glob>        pack only matching files (gitignore syntax; repeatable)
  --exclude <glob>        leave matching files out (gitignore syntax; repeatable); '!pattern' re-includes
                          a default exclude, e.g. --exclude '!dist/'
  --no-default-excludes   pack lockfiles, build output, node_modules, vendor, *.min.js, … too
  --keep-generated        keep minified and generated files
  --order git|mtime|path  prompt order: rarely changed files first by git history (no git: mtime),
                          least recently modified first, or by path (default ${DEFAULT_SETTINGS.order})
${PACKING_HELP}${packingNote}  --max-file-bytes <n>    skip files larger than this (default ${DEFAULT_MAX_FILE_BYTES})
  --max-walk-entries <n>  stop walking the repository after this many entries (default ${DEFAULT_MAX_WALK_ENTRIES});
                          the part of the tree seen by then is packed, with a notice
`;
}

/** The packing flags' values, in `PackOptions`' words. */
export interface PackFlags {
  /** `--include` patterns (absent: everything). */
  include?: string[];
  /** `--exclude` patterns. */
  exclude?: string[];
  /** false with `--no-default-excludes`. */
  defaultExcludes: boolean;
  /** false with `--keep-generated`. */
  skipGenerated: boolean;
  order: PackOrder;
  packing: PackingFlag;
  /** Per-file size cap [bytes], ≥ 0. */
  maxFileBytes: number;
  /** The most entries the walk records [entries], ≥ 1. */
  maxWalkEntries: number;
}

/**
 * Parses the packing flags; a bad value is kept in `checks` (reported in argument order).
 * @param values parseArgs' values of a table that holds {@link PACK_FLAGS}.
 * @returns the flags (a bad one's default in its place: `checks.throwFirst()` reports it).
 */
export function packFlags(
  values: { include?: string[]; exclude?: string[]; 'no-default-excludes'?: boolean; 'keep-generated'?: boolean; order?: string; packing?: string; 'max-file-bytes'?: string; 'max-walk-entries'?: string },
  checks: ArgumentChecks,
): PackFlags {
  const order = checks.check('order', () => {
    const order = values.order ?? DEFAULT_SETTINGS.order;
    if (!(ORDERS as readonly string[]).includes(order)) throw new UsageError(`--order must be git, mtime or path (got '${order}')`, { option: 'order' });
    return order as PackOrder;
  });
  return {
    ...(values.include !== undefined ? { include: values.include } : {}),
    ...(values.exclude !== undefined ? { exclude: values.exclude } : {}),
    defaultExcludes: !values['no-default-excludes'],
    skipGenerated: !values['keep-generated'],
    order: order ?? DEFAULT_SETTINGS.order,
    packing: checks.check('packing', () => packingOption(values.packing)) ?? DEFAULT_SETTINGS.packing,
    maxFileBytes: checks.check('max-file-bytes', () => intOption('max-file-bytes', values['max-file-bytes'], DEFAULT_MAX_FILE_BYTES, 0)) ?? DEFAULT_MAX_FILE_BYTES,
    maxWalkEntries: checks.check('max-walk-entries', () => intOption('max-walk-entries', values['max-walk-entries'], DEFAULT_MAX_WALK_ENTRIES, 1)) ?? DEFAULT_MAX_WALK_ENTRIES,
  };
}

/**
 * A packer notice as the CLI prints it: its message with control characters escaped and, for a
 * walk that stopped at its bound, the flag that raises the bound and its value this time.
 */
export function noticeText(notice: PackNotice): string {
  const flag = notice.code === 'walk-limit' ? `; --max-walk-entries <n> raises the bound (now ${notice.truncation.maxEntries})` : '';
  return `${escapeControls(notice.message)}${flag}`;
}
