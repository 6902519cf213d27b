import { throwIfAborted, raceAbort } from './errors';
import { DEFAULT_MAX_FILE_BYTES, readTextFile, type FileVerdict } from './filter';
import { formatFileSection } from './section';
import { compareCodeUnits, type SkippedFile } from './types';
import { walkRepository } from './walk';

export type { SkipReason, SkippedFile } from './types';

/** Options for `packRepository`. */
export interface PackOptions {
  /**
   * Tokens available for all file sections together (as counted by `countTokens`, summed
   * per section). Must be a number ≥ 0; `Infinity` means no limit.
   */
  tokenBudget: number;
  /**
   * The model's tokenizer: the number of tokens in `text` (a whole formatted section). May
   * be async. Must return a finite number ≥ 0. Errors it throws reject `packRepository`.
   */
  countTokens: (text: string) => number | Promise<number>;
  /** Per-file cap in bytes; larger files are skipped as `'too-large'`. Default 262144 (256 KiB). */
  maxFileBytes?: number;
  /**
   * Aborting rejects `packRepository` with an error whose `name` is `'AbortError'` (the
   * signal's reason when it is such an error, else a `DOMException`), also while waiting
   * for `countTokens`.
   */
  signal?: AbortSignal;
  /**
   * Progress callback. `'walk'`: `done` = candidate files found so far (no `total`).
   * `'read'`: `done` of `total` candidate files read and classified. `'tokenize'`: `done`
   * sections tokenized (no `total`; tokenizing stops once the budget is used up).
   * Errors it throws reject `packRepository`.
   */
  onProgress?: (p: { phase: 'walk' | 'read' | 'tokenize'; done: number; total?: number }) => void;
}

/** One file included in the packed prompt. */
export interface PackedFile {
  /** Path relative to the repository root, `/`-separated. */
  path: string;
  /** Size of the file on disk, in bytes. */
  bytes: number;
  /** Tokens of `text`, as returned by `countTokens`. */
  tokens: number;
  /** The formatted section (`formatFileSection(path, content)`), ending with a newline. */
  text: string;
}

/** What `packRepository` produced. */
export interface PackResult {
  /** The absolute, resolved repository root. */
  root: string;
  /** Included files, in code-unit order of `path`; concatenating their `text` gives the prompt. */
  files: PackedFile[];
  /** Files (and unreadable directories) not included, other than ignored ones, in code-unit order of `path`. */
  skipped: SkippedFile[];
  /** Sum of `files[i].tokens`, in tokens; always ≤ `tokenBudget`. */
  totalTokens: number;
  /** Sum of `files[i].bytes`, in bytes. */
  totalBytes: number;
  /**
   * Number of entries excluded by ignore rules. An ignored directory counts as one entry
   * (it is not entered). Entries named `.git` are not counted.
   */
  ignoredCount: number;
}

/** How many file reads run ahead of tokenization. */
const READ_AHEAD = 16;

/**
 * Packs the repository at `root` into formatted file sections that fit a token budget.
 *
 * 1. Walks the tree (`walkRepository`): `.gitignore` files at every level and
 *    `.git/info/exclude` are honoured, `.git` is never entered, symlinks are not followed.
 * 2. Reads each candidate file in code-unit order of its relative path and classifies it
 *    (`readTextFile`): `'binary'`, `'too-large'` (over `maxFileBytes` bytes), `'unreadable'`
 *    or text. Empty files are included as empty sections.
 * 3. Formats each text file with `formatFileSection` and counts its tokens with
 *    `countTokens`. Sections are added greedily in path order while the running total
 *    stays ≤ `tokenBudget`; a section that does not fit is skipped as `'over-budget'` and
 *    packing goes on with the next file, so one large file cannot crowd out every file
 *    after it. Once fewer tokens are left than the smallest possible section (its header),
 *    the remaining text files are skipped without being tokenized.
 *
 * Units: sizes in bytes, budget and counts in tokens. `totalTokens` is the sum of per-section
 * counts, which may differ slightly from the token count of the concatenated sections.
 *
 * Errors: rejects with `RangeError`/`TypeError` for invalid options or a `countTokens`
 * result that is not a finite number ≥ 0; with the fs error if `root` cannot be listed;
 * with an AbortError (`name === 'AbortError'`) when `signal` aborts; with whatever
 * `countTokens` or `onProgress` throw. Problems with individual entries never reject: they
 * are reported in `skipped`.
 */
export async function packRepository(root: string, options: PackOptions): Promise<PackResult> {
  const { tokenBudget, countTokens, signal, onProgress } = options;
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  if (typeof tokenBudget !== 'number' || Number.isNaN(tokenBudget) || tokenBudget < 0) {
    throw new RangeError(`tokenBudget must be a number >= 0, got ${String(tokenBudget)}`);
  }
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes < 0) {
    throw new RangeError(`maxFileBytes must be an integer >= 0, got ${String(maxFileBytes)}`);
  }
  if (typeof countTokens !== 'function') throw new TypeError('countTokens must be a function');
  throwIfAborted(signal);

  const walked = await walkRepository(root, {
    ...(signal !== undefined ? { signal } : {}),
    onProgress: (filesFound) => onProgress?.({ phase: 'walk', done: filesFound }),
  });
  const candidates = walked.files;
  const total = candidates.length;

  const files: PackedFile[] = [];
  const skipped: SkippedFile[] = [...walked.skipped];
  let totalTokens = 0;
  let totalBytes = 0;
  let tokenized = 0;
  let budgetExhausted = false;
  // a section is at least its header and fences: stop tokenizing when not even that fits
  const minSectionTokens = 4;

  // Reads never reject (failures are verdicts), so starting them early is safe even if we abort.
  const reads: Array<Promise<FileVerdict> | undefined> = new Array(total);
  let nextRead = 0;
  const readAhead = (upTo: number): void => {
    for (; nextRead < Math.min(total, upTo); nextRead++) {
      reads[nextRead] = readTextFile(candidates[nextRead]!.absPath, { maxFileBytes });
    }
  };

  for (let i = 0; i < total; i++) {
    throwIfAborted(signal);
    readAhead(i + READ_AHEAD);
    const file = candidates[i]!;
    const verdict = await raceAbort(reads[i]!, signal);
    reads[i] = undefined;
    onProgress?.({ phase: 'read', done: i + 1, total });

    if (verdict.kind === 'skip') {
      skipped.push({ path: file.path, reason: verdict.reason, detail: verdict.detail });
      continue;
    }
    if (budgetExhausted) {
      skipped.push({ path: file.path, reason: 'over-budget', detail: 'token budget used up by earlier files' });
      continue;
    }

    const text = formatFileSection(file.path, verdict.text);
    const tokens = await raceAbort(Promise.resolve(countTokens(text)), signal);
    if (typeof tokens !== 'number' || !Number.isFinite(tokens) || tokens < 0) {
      throw new TypeError(`countTokens must return a finite number >= 0, got ${String(tokens)} for ${file.path}`);
    }
    tokenized++;
    onProgress?.({ phase: 'tokenize', done: tokenized });

    if (totalTokens + tokens <= tokenBudget) {
      files.push({ path: file.path, bytes: verdict.bytes, tokens, text });
      totalTokens += tokens;
      totalBytes += verdict.bytes;
    } else {
      budgetExhausted = tokenBudget - totalTokens < minSectionTokens;
      skipped.push({
        path: file.path,
        reason: 'over-budget',
        detail: `section needs ${tokens} tokens, ${tokenBudget - totalTokens} of ${tokenBudget} left`,
      });
    }
  }
  throwIfAborted(signal);

  skipped.sort((a, b) => compareCodeUnits(a.path, b.path));
  return { root: walked.root, files, skipped, totalTokens, totalBytes, ignoredCount: walked.ignoredCount };
}
