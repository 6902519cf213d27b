/**
 * What the model read, and what SnapKV kept of it (issue 14, section 4): every file the packer
 * looked at, with its status in the prompt, its tokens and, for a file in the prompt, the share
 * of its KV positions that SnapKV kept over all layers and KV heads.
 *
 * The prompt is [head │ sections … │ thread and question], the sections in pack order
 * (`PackResult.sections`: one per file in full, and with the ranked packing a file tree before
 * them and a repository map after); a section occupies the positions [start, end) of the
 * sequence. SnapKV keeps,
 * per layer and KV head, B of the L positions ([nLayer][nHeadKv][B] from `snapKept`); a file's
 * kept share is the number of kept (layer, head, position) triples inside its span divided by
 * tokens × nLayer × nHeadKv.
 */
import type { SkippedFile, SkipReason } from '../context/types';

/**
 * Where a file stands in the prompt: `'full'`, its whole text is a section of the prompt;
 * `'map'`, only its definitions are in the ranked packing's repository map (`PackResult.mapped`);
 * `'retrieved'`, chunks of it (functions, methods, small types) are in the question's retrieval
 * section (issue 15; a retrieved file may also be in the map: `ContextFile.parts`); `'left-out'`,
 * it is not in the prompt (`reason` says why).
 */
export type ContextFileStatus = 'full' | 'map' | 'retrieved' | 'left-out';

/** One file of the repository as the answer saw it (`reposnap ask --json`, `context.files`). */
export interface ContextFile {
  /** Path relative to the repository root, `/`-separated. */
  path: string;
  status: ContextFileStatus;
  /**
   * Tokens the file takes in the prompt [tokens]: its section for `'full'`; for `'map'`, its block
   * of the repository map (path line and definition lines, `MappedFile.tokens`); for
   * `'retrieved'`, its retrieved chunks' blocks in the retrieval section (each `path:first-last`
   * line with its fenced lines, `Retrieved.spans`), plus its map block when it is also in the map
   * (`parts`); 0 for a left-out file. `null` for a `'map'` or
   * `'retrieved'` file whose blocks' tokens were not given (reports stored before they were).
   * Spans are clamped to their section, so the tokens never exceed the section's.
   */
  tokens: number | null;
  /**
   * Share of the file's KV positions kept, over all layers and KV heads, in [0, 1]: kept
   * (layer, head, position) triples inside the file's span ÷ (tokens × nLayer × nHeadKv); for
   * `'map'` and `'retrieved'` files the span is the union of its blocks' spans in the map or the
   * retrieval section (placed by the blocks' offsets: a tokenizer that merges across a block
   * boundary may shift them by a token or so).
   * 1 with full attention (SnapKV off, refused, or L ≤ B). `null` for a left-out file, for a
   * `'map'` or `'retrieved'` file whose blocks' offsets were not given or take no token, and when
   * not known: a follow-up that continued the thread's compressed cache (its positions were
   * chosen by an earlier question's snap).
   */
  keptShare: number | null;
  /**
   * A file in more than one section of the prompt (a `'retrieved'` file whose definitions are
   * also in the repository map): its blocks per section, the map's then the retrieval section's.
   * The file's `tokens` are then the parts' sum (`null` when one is not known) and its
   * `keptShare` is over all of its blocks' spans. Absent for a file in one section.
   */
  parts?: ContextFilePart[];
  /** Left out: the packer's reason (see `SkipReason`). */
  reason?: SkipReason;
  /** Left out: the packer's detail for humans ("needs 812 tokens, 40 of 1500 left …"). */
  detail?: string;
}

/** A file's blocks in one section that is not a file ({@link ContextFile.parts}). */
export interface ContextFilePart {
  /** The section's kind ({@link ContextSection.kind}): the repository map, or the retrieval section. */
  section: 'map' | 'retrieval';
  /** The blocks' tokens in this section [tokens], as {@link ContextFile.tokens} for a `'map'` or `'retrieved'` file. */
  tokens: number | null;
  /** As {@link ContextFile.keptShare}, over the blocks' spans in this section. */
  keptShare: number | null;
}

/**
 * How the answer attended to the prompt: `'snapkv'`, on a cache compressed by this question's
 * snap; `'full'`, on every position (SnapKV off, refused, or L ≤ B); `'continued'`, on a thread's
 * cache compressed by an earlier question (follow-up mode `continue`).
 */
export type ContextAttention = 'snapkv' | 'full' | 'continued';

/** The one-line summary: "Packed 37 of 164 files (12,480 tokens) · SnapKV kept 1,024 per head (8 %)". */
export interface ContextSummary {
  /** Files in the prompt. */
  packedFiles: number;
  /**
   * Files the packer looked at: packed plus left out (`PackResult.skipped`). Entries that
   * `.gitignore` or the excludes left out unread are not counted (see `ignored`).
   */
  totalFiles: number;
  /** How files were chosen (`PackResult.packing`); absent for a report built without it. */
  packing?: 'smallest-first' | 'ranked';
  /** true when `packing` was chosen by the `auto` packing (`PackResult.auto`); absent otherwise. */
  packingAuto?: true;
  /**
   * Files in the repository map: `'map'` files and `'retrieved'` files also in the map (with
   * `parts`); absent in reports stored before issue 15. (Reports made before a file could be
   * both counted the `'map'` files only.)
   */
  mappedFiles?: number;
  /** Files whose status is `'retrieved'`; absent in reports stored before issue 15. */
  retrievedFiles?: number;
  /**
   * Left-out files not listed in `files` (beyond `ContextReportInput.maxLeftOut`); absent when
   * every left-out file is listed.
   */
  leftOutUnlisted?: number;
  /** Left-out files by reason, listed or not; present only with `leftOutUnlisted`. */
  leftOutReasons?: Partial<Record<SkipReason, number>>;
  /** Entries left out unread by `.gitignore`, `.git/info/exclude` and the exclude patterns (a directory counts once). */
  ignored: number;
  /** Tokens of the packed file sections [tokens]. */
  fileTokens: number;
  /** Prompt tokens L (head, files, thread and question). */
  promptTokens: number;
  attention: ContextAttention;
  /**
   * Cells kept per layer and KV head, the mean over layers and heads [cells]: B for a uniform
   * budget, L with full attention; `null` when continued (not known).
   */
  keptPerHead: number | null;
  /** keptPerHead ÷ L, in [0, 1]; `null` when continued. */
  keptRatio: number | null;
}

/** A section of the prompt that is not one file (the ranked packing's file tree, repository map and retrieval section). */
export interface ContextSection {
  /** The section's kind (`PackSection.kind`: `'tree'`, `'map'`; `'retrieval'` for the question's retrieved chunks). */
  kind: string;
  tokens: number;
  /** As {@link ContextFile.keptShare}, over the section's span. */
  keptShare: number | null;
}

/**
 * {@link ContextSummary}, every file (packed files in prompt order, then the left-out ones by
 * path), and the prompt's sections that are not files (empty with the smallest-first packing).
 */
export interface ContextReport {
  summary: ContextSummary;
  files: ContextFile[];
  sections: ContextSection[];
}

/** A span of prompt positions [start, end) (token indices of the sequence). */
export interface PromptSpan {
  start: number;
  end: number;
}

/** The positions SnapKV kept (`EngineSession.snapKept()` with the snap's layer and head counts). */
export interface KeptPositions {
  /**
   * [nLayer][nHeadKv][rowLength] original positions, ascending per row, −1 padded where a
   * head kept fewer than rowLength (non-uniform allocations).
   */
  positions: Int32Array;
  nLayer: number;
  nHeadKv: number;
}

/**
 * The spans of consecutive sections: the first starts at `offset`, each one `tokens[i]` long.
 * @throws RangeError when an offset or a count is not an integer ≥ 0.
 */
export function sectionSpans(offset: number, tokens: readonly number[]): PromptSpan[] {
  if (!Number.isInteger(offset) || offset < 0) throw new RangeError(`the first section's offset must be an integer >= 0, got ${offset}`);
  const spans: PromptSpan[] = [];
  let at = offset;
  for (const n of tokens) {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`a section's token count must be an integer >= 0, got ${n}`);
    spans.push({ start: at, end: at + n });
    at += n;
  }
  return spans;
}

/**
 * Kept (layer, head, position) triples inside each span, summed over all layers and KV heads.
 * Spans may come in any order but must not overlap; positions outside every span (the head,
 * the thread, the question) count for none. −1 padding is skipped.
 * @param L the sequence's length before the snap: every span and kept position lies in [0, L).
 * @returns one count per span, in the order of `spans`, each in [0, (end − start) · nLayer · nHeadKv].
 * @throws RangeError when the kept array is not nLayer·nHeadKv rows of equal length, a span lies
 *   outside [0, L) or overlaps another, or a kept position is outside [0, L).
 */
export function keptPerSpan(kept: KeptPositions, spans: readonly PromptSpan[], L: number): number[] {
  const rows = kept.nLayer * kept.nHeadKv;
  if (!Number.isInteger(rows) || rows <= 0 || kept.positions.length % rows !== 0) {
    throw new RangeError(`${kept.positions.length} kept positions are not ${kept.nLayer} layers × ${kept.nHeadKv} KV heads of equal rows`);
  }
  // position → index of its span (−1: in no span)
  const owner = new Int32Array(L).fill(-1);
  spans.forEach((s, i) => {
    if (!(Number.isInteger(s.start) && Number.isInteger(s.end) && s.start >= 0 && s.start <= s.end && s.end <= L)) {
      throw new RangeError(`span ${i} [${s.start}, ${s.end}) is not inside the prompt [0, ${L})`);
    }
    for (let p = s.start; p < s.end; p++) {
      if (owner[p] !== -1) throw new RangeError(`span ${i} [${s.start}, ${s.end}) overlaps span ${owner[p]} at position ${p}`);
      owner[p] = i;
    }
  });
  const counts = new Array<number>(spans.length).fill(0);
  for (const p of kept.positions) {
    if (p === -1) continue;
    if (!(p >= 0 && p < L)) throw new RangeError(`kept position ${p} is outside the prompt [0, ${L})`);
    const i = owner[p]!;
    if (i >= 0) counts[i]!++;
  }
  return counts;
}

/** How the answer attended: this question's snap (with its kept positions), full attention, or a continued thread. */
export type AttentionInput = { kind: 'snapkv'; kept: KeptPositions } | { kind: 'full' } | { kind: 'continued' };

/** Inputs of {@link contextReport}. */
export interface ContextReportInput {
  /**
   * The prompt's sections in prompt order (`kind` `'file'` with its `path` for a file in full), the
   * files left out, and the count of ignored entries (see `PackResult`).
   */
  pack: {
    sections: readonly { kind: string; path?: string; tokens: number }[];
    skipped: readonly SkippedFile[];
    ignoredCount: number;
    /** How files were chosen (`PackResult.packing`). */
    packing?: 'smallest-first' | 'ranked';
    /** Whether the `auto` packing chose `packing` (`PackResult.auto`); default false. */
    auto?: boolean;
    /**
     * Files in the repository map (`PackResult.mapped`), with their block's tokens and offset in
     * the `'map'` section when known (`MappedFile.tokens`, `.offset`) [tokens]; default none.
     */
    mapped?: readonly { path: string; tokens?: number; offset?: number }[];
  };
  /**
   * The question's retrieval section (ranked packing), right after the last pack section: its
   * tokens in the prompt and each retrieved chunk's file with its block's tokens and, when known,
   * its offset from the section's start (`Retrieved.spans`) [tokens]. A file may come several
   * times (one per chunk). Default none.
   */
  retrieval?: { tokens: number; files: readonly { path: string; tokens: number; offset?: number }[] };
  /** Tokens before the first section (the template's head, BOS included). */
  headTokens: number;
  /** Prompt tokens L (the sequence's length when SnapKV ran). */
  L: number;
  attention: AttentionInput;
  /**
   * Most left-out files listed in `files` (the first ones in `pack.skipped`'s order); the others
   * are only counted (`ContextSummary.leftOutUnlisted`, and by reason in `leftOutReasons`).
   * Default `MAX_LEFT_OUT_LISTED`. An integer ≥ 0 or `Infinity`.
   */
  maxLeftOut?: number;
}

/**
 * Default {@link ContextReportInput.maxLeftOut}: a repository of 20,000 files left ~19,800 out,
 * whose entries made the answer's stats 3.8 MB, which the extension host parsed off IPC and
 * serialized again for the chat view (0.2–0.4 s on its thread; bench/pack-host.ts).
 */
export const MAX_LEFT_OUT_LISTED = 500;

/**
 * The context report of one answer: each section's span is [headTokens + the tokens of the
 * sections before it, + its tokens), and its kept share follows from the kept positions
 * ({@link keptPerSpan}). Left-out files carry the packer's reason and detail.
 * @throws RangeError when the sections' spans do not fit in L or the kept positions do not match (see {@link keptPerSpan}).
 */
export function contextReport(input: ContextReportInput): ContextReport {
  const { pack, L, attention } = input;
  const retrieval = input.retrieval !== undefined && input.retrieval.tokens > 0 ? input.retrieval : undefined;
  const spanSections = [...pack.sections, ...(retrieval ? [{ kind: 'retrieval', tokens: retrieval.tokens }] : [])];
  const spans = sectionSpans(input.headTokens, spanSections.map((f) => f.tokens));
  const end = spans.length > 0 ? spans[spans.length - 1]!.end : input.headTokens;
  if (end > L) throw new RangeError(`the packed sections end at token ${end}, past the prompt's ${L} tokens`);

  let shares: (number | null)[];
  let keptPerHead: number | null;
  if (attention.kind === 'snapkv') {
    const { nLayer, nHeadKv, positions } = attention.kept;
    const counts = keptPerSpan(attention.kept, spans, L);
    shares = counts.map((c, i) => {
      const n = spans[i]!.end - spans[i]!.start;
      return n > 0 ? c / (n * nLayer * nHeadKv) : null;
    });
    let total = 0;
    for (const p of positions) if (p !== -1) total++;
    keptPerHead = total / (nLayer * nHeadKv);
  } else if (attention.kind === 'full') {
    shares = spans.map((s) => (s.end > s.start ? 1 : null));
    keptPerHead = L;
  } else {
    shares = spans.map(() => null);
    keptPerHead = null;
  }

  // the map's and the retrieval section's blocks, per file: spans clamped to their section
  const mapAt = spanSections.findIndex((sec) => sec.kind === 'map');
  const blockSpans = new Map<string, PromptSpan[]>();
  const placeBlock = (path: string, section: number, offset: number | undefined, tokens: number | undefined): void => {
    if (section < 0 || offset === undefined || tokens === undefined) return;
    const { start, end } = spans[section]!;
    if (!(Number.isInteger(offset) && offset >= 0 && Number.isInteger(tokens) && tokens >= 0)) throw new RangeError(`${path}: a block's offset and tokens must be integers >= 0, got ${offset} and ${tokens}`);
    const span = { start: Math.min(start + offset, end), end: Math.min(start + offset + tokens, end) };
    if (span.end > span.start) blockSpans.set(path, [...(blockSpans.get(path) ?? []), span]);
  };
  const mappedEntries = new Map((pack.mapped ?? []).map((m) => [m.path, m]));
  for (const m of mappedEntries.values()) placeBlock(`map:${m.path}`, mapAt, m.offset, m.tokens);
  for (const r of retrieval?.files ?? []) placeBlock(`retrieval:${r.path}`, retrieval ? spanSections.length - 1 : -1, r.offset, r.tokens);
  const blockKeys = [...blockSpans.keys()];
  // inside: kept (layer, head, position) triples in the block's spans (null when not counted)
  const blockShare = new Map<string, { tokens: number; keptShare: number | null; inside: number | null }>();
  {
    const all = blockKeys.flatMap((k) => blockSpans.get(k)!);
    const kept = attention.kind === 'snapkv' ? attention.kept : undefined;
    const counts = kept !== undefined ? keptPerSpan(kept, all, L) : undefined;
    let at = 0;
    for (const k of blockKeys) {
      const own = blockSpans.get(k)!;
      const tokens = own.reduce((n, sp) => n + sp.end - sp.start, 0);
      let keptShare: number | null = null;
      let inside: number | null = null;
      if (counts !== undefined && kept !== undefined) {
        inside = counts.slice(at, at + own.length).reduce((a, b) => a + b, 0);
        keptShare = inside / (tokens * kept.nLayer * kept.nHeadKv);
      } else if (attention.kind === 'full') keptShare = 1;
      at += own.length;
      blockShare.set(k, { tokens, keptShare, inside });
    }
  }

  const files: ContextFile[] = [];
  const sections: ContextSection[] = [];
  spanSections.forEach((sec, i) => {
    if (sec.kind === 'file' && sec.path !== undefined) files.push({ path: sec.path, status: 'full', tokens: sec.tokens, keptShare: shares[i]! });
    else sections.push({ kind: sec.kind, tokens: sec.tokens, keptShare: shares[i]! });
  });
  const packed = files.length;
  const fileTokens = files.reduce((n, f) => n + (f.tokens ?? 0), 0);
  const retrievedTokens = new Map<string, number>();
  for (const r of retrieval?.files ?? []) retrievedTokens.set(r.path, (retrievedTokens.get(r.path) ?? 0) + r.tokens);
  const mappedPaths = new Set((pack.mapped ?? []).map((m) => m.path));
  let mappedFiles = 0;
  let retrievedFiles = 0;
  const maxLeftOut = input.maxLeftOut ?? MAX_LEFT_OUT_LISTED;
  if (!(maxLeftOut === Infinity || (Number.isInteger(maxLeftOut) && maxLeftOut >= 0))) throw new RangeError(`maxLeftOut must be an integer >= 0 or Infinity, got ${maxLeftOut}`);
  let listedLeftOut = 0;
  let leftOutUnlisted = 0;
  const leftOutReasons: Partial<Record<SkipReason, number>> = {};
  // a file's blocks in the map and in the retrieval section, each with its tokens and kept share
  const mapPart = (path: string): ContextFilePart => {
    const placed = blockShare.get(`map:${path}`);
    return { section: 'map', tokens: placed?.tokens ?? mappedEntries.get(path)?.tokens ?? null, keptShare: placed?.keptShare ?? null };
  };
  const retrievalPart = (path: string, chunkTokens: number): ContextFilePart => {
    const placed = blockShare.get(`retrieval:${path}`);
    return { section: 'retrieval', tokens: placed?.tokens ?? chunkTokens, keptShare: placed?.keptShare ?? null };
  };
  for (const s of pack.skipped) {
    const chunkTokens = retrievedTokens.get(s.path);
    const inMap = mappedPaths.has(s.path);
    if (inMap) mappedFiles++;
    if (chunkTokens !== undefined) {
      retrievedFiles++;
      const retrieved = retrievalPart(s.path, chunkTokens);
      if (!inMap) {
        files.push({ path: s.path, status: 'retrieved', tokens: retrieved.tokens, keptShare: retrieved.keptShare });
        continue;
      }
      // in the map and retrieved: both blocks are the file's, the row counts them together
      const parts = [mapPart(s.path), retrieved];
      files.push({ path: s.path, status: 'retrieved', ...together(parts, [blockShare.get(`map:${s.path}`), blockShare.get(`retrieval:${s.path}`)], attention), parts });
      continue;
    }
    if (inMap) {
      const { tokens, keptShare } = mapPart(s.path);
      files.push({ path: s.path, status: 'map', tokens, keptShare });
      continue;
    }
    leftOutReasons[s.reason] = (leftOutReasons[s.reason] ?? 0) + 1;
    if (listedLeftOut >= maxLeftOut) {
      leftOutUnlisted++;
      continue;
    }
    listedLeftOut++;
    files.push({ path: s.path, status: 'left-out', tokens: 0, keptShare: null, reason: s.reason, ...(s.detail !== undefined ? { detail: s.detail } : {}) });
  }
  return {
    summary: {
      packedFiles: packed,
      totalFiles: packed + pack.skipped.length,
      ...(pack.packing !== undefined ? { packing: pack.packing } : {}),
      ...(pack.packing !== undefined && pack.auto === true ? { packingAuto: true as const } : {}),
      mappedFiles,
      retrievedFiles,
      ...(leftOutUnlisted > 0 ? { leftOutUnlisted } : {}),
      ...(leftOutUnlisted > 0 ? { leftOutReasons } : {}),
      ignored: pack.ignoredCount,
      fileTokens,
      promptTokens: L,
      attention: attention.kind,
      keptPerHead,
      keptRatio: keptPerHead === null || L === 0 ? null : keptPerHead / L,
    },
    files,
    sections,
  };
}

/**
 * A file's tokens and kept share over all of its parts: the parts' tokens summed (null when one
 * is not known), and kept triples in all of its placed blocks ÷ (tokens × nLayer × nHeadKv)
 * (1 with full attention; null when a part is not placed or not counted).
 */
function together(
  parts: readonly ContextFilePart[],
  placed: readonly ({ tokens: number; inside: number | null } | undefined)[],
  attention: AttentionInput,
): { tokens: number | null; keptShare: number | null } {
  const tokens = parts.every((p) => p.tokens !== null) ? parts.reduce((n, p) => n + p.tokens!, 0) : null;
  if (tokens === null || !placed.every((b) => b !== undefined)) return { tokens, keptShare: null };
  if (attention.kind === 'full') return { tokens, keptShare: 1 };
  if (attention.kind !== 'snapkv' || !placed.every((b) => b!.inside !== null)) return { tokens, keptShare: null };
  const inside = placed.reduce((n, b) => n + b!.inside!, 0);
  return { tokens, keptShare: inside / (tokens * attention.kept.nLayer * attention.kept.nHeadKv) };
}

/**
 * The files in the prompt sorted by kept share, highest first (unknown shares last), ties in
 * prompt order; the left-out files are not included. Returns a new array.
 */
export function byKeptShare(files: readonly ContextFile[]): ContextFile[] {
  return files
    .filter((f) => f.status !== 'left-out')
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (b.f.keptShare ?? -1) - (a.f.keptShare ?? -1) || a.i - b.i)
    .map((x) => x.f);
}

/** The name of a section that is not a file: "file tree", "repository map" (else its kind). */
export function sectionName(kind: string): string {
  return kind === 'tree' ? 'file tree' : kind === 'map' ? 'repository map' : kind === 'retrieval' ? 'retrieved chunks' : kind;
}

/**
 * A file's label for the CLI's table and the chat's Context line: its status's
 * ({@link STATUS_LABELS}), or for a file in several sections each one's: "map + retrieved".
 */
export function statusLabel(f: Pick<ContextFile, 'status' | 'parts'>): string {
  if (f.parts === undefined || f.parts.length < 2) return STATUS_LABELS[f.status];
  return f.parts.map((p) => (p.section === 'map' ? STATUS_LABELS.map : STATUS_LABELS.retrieved)).join(' + ');
}

/** One short label per status, for the CLI's table and the chat's Context line. */
export const STATUS_LABELS: Record<ContextFileStatus, string> = {
  full: 'full',
  map: 'map',
  retrieved: 'retrieved',
  'left-out': 'left out',
};

/** Plain words for why a file was left out (the CLI's table and the chat's Context line). */
export const LEFT_OUT_REASONS: Record<SkipReason, string> = {
  ignored: 'ignored by .gitignore',
  excluded: 'excluded by a pattern',
  binary: 'binary',
  'too-large': 'larger than the file size cap',
  empty: 'empty',
  minified: 'minified',
  generated: 'generated',
  secret: 'holds a secret',
  'over-budget': 'did not fit the context',
  unreadable: 'unreadable',
  vanished: 'deleted while packing',
  changed: 'changed while packing',
  symlink: 'symbolic link (never followed)',
  special: 'not a regular file',
};

/** "did not fit the context — needs 812 tokens, 40 of 1500 left …": the reason in plain words, then the packer's detail. */
export function leftOutText(f: Pick<ContextFile, 'reason' | 'detail'>): string {
  const why = f.reason ? LEFT_OUT_REASONS[f.reason] ?? f.reason : 'left out';
  return f.detail ? `${why} — ${f.detail}` : why;
}

/**
 * The summary as one line: "Packed 37 of 164 files (12,480 tokens) · SnapKV kept 1,024 per head
 * (8 %)"; with full attention "· full attention (all 1,661 kept)", for a continued thread
 * "· continued the thread's SnapKV cache". Percentages below 1 % keep one decimal.
 */
export function summaryText(s: ContextSummary): string {
  return `${packedText(s)} · ${keptText(s)}`;
}

/**
 * What the `auto` packing chose and why, for the CLI's context table and `reposnap pack`:
 * "auto chose smallest-first (every file fits in full)" or "auto chose ranked (not every file fits
 * in full)".
 */
export function autoPackingText(packing: 'smallest-first' | 'ranked'): string {
  return packing === 'ranked' ? 'auto chose ranked (not every file fits in full)' : 'auto chose smallest-first (every file fits in full)';
}

/** "Packed 37 of 164 files (12,480 tokens)". */
export function packedText(s: ContextSummary): string {
  return `Packed ${n(s.packedFiles)} of ${n(s.totalFiles)} file${s.totalFiles === 1 ? '' : 's'} (${n(s.fileTokens)} tokens)`;
}

/** "SnapKV kept 1,024 per head (8 %)", "full attention (all 1,661 kept)" or "continued the thread's SnapKV cache". */
export function keptText(s: ContextSummary): string {
  if (s.attention === 'continued' || s.keptPerHead === null) return "continued the thread's SnapKV cache";
  if (s.attention === 'full') return `full attention (all ${n(s.promptTokens)} kept)`;
  return `SnapKV kept ${n(Math.round(s.keptPerHead))} per head (${percent(s.keptRatio ?? 0)})`;
}

/** A share in [0, 1] as a percentage: "8 %", "0.4 %", "99.7 %", "100 %" (rounded; one decimal below 1 % and above 99.5 %, so that only none reads "0 %" and only all "100 %"). */
export function percent(share: number): string {
  const p = share * 100;
  if ((p > 0 && p < 1) || (p >= 99.5 && p < 100)) return `${p.toFixed(1)} %`;
  return `${Math.round(p)} %`;
}

const n = (x: number) => x.toLocaleString('en-US');
