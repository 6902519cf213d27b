/**
 * Why a path under the repository root did not become a section of the packed prompt.
 *
 * - `'ignored'`     excluded by a `.gitignore` file or `.git/info/exclude`. Ignored paths are
 *                   only counted (`PackResult.ignoredCount`), never listed individually; the
 *                   value exists so that callers can use one vocabulary for all exclusions.
 * - `'binary'`      a NUL byte in the first 8 KiB, or the content is not valid UTF-8.
 * - `'too-large'`   the file is larger than the byte cap (`maxFileBytes`).
 * - `'over-budget'` the file is text, but the token budget was used up by this file or an
 *                   earlier one (see `packRepository`).
 * - `'unreadable'`  a directory or file that could not be listed, opened or read (permission
 *                   denied, removed while packing, ...). `detail` carries the error code.
 * - `'symlink'`     a symbolic link; links are never followed, whatever they point to.
 * - `'special'`     a FIFO, socket, character or block device.
 */
export type SkipReason =
  | 'ignored'
  | 'binary'
  | 'too-large'
  | 'over-budget'
  | 'unreadable'
  | 'symlink'
  | 'special';

/**
 * A path that was looked at but not packed.
 *
 * `path` is relative to the repository root, with `/` separators and no leading `./`
 * (for an unreadable directory it is the directory's path, without a trailing slash).
 * `detail` is a short human-readable explanation (an errno code, sizes in bytes, token
 * counts); its wording is not a stable interface.
 */
export interface SkippedFile {
  path: string;
  reason: SkipReason;
  detail?: string;
}

/**
 * Compares two strings by UTF-16 code units (the same order as `<` on strings), which is
 * locale-independent and therefore deterministic across machines. Returns a negative
 * number, zero or a positive number, as `Array.prototype.sort` expects.
 */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
