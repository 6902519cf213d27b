/**
 * The summary of bench/repoqa/large (issue 15): accuracy of each packing on the questions about
 * files that smallest-first packs in full (`inside`) and about the others (`outside`), time to
 * first token, tokens per section, written to `bench/results/repoqa-large-<model>.json`.
 *
 * Every aggregate is over the questions answered with all three packings (a run cut in the middle
 * of a question leaves that question out of the comparison, not out of `records`).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Question, QuestionKind } from '../questions';
import { ALL_PACKINGS, EXTRA_PACKINGS, LARGE_PACKINGS, type LargePacking, type SectionTokens } from './prompt';

/** `inside`: the question's file is packed in full by smallest-first; `outside`: it is not. */
export type Subset = 'outside' | 'inside';

/** Every subset, in report order. */
export const SUBSETS: readonly Subset[] = ['outside', 'inside'];

/**
 * The subset of a question: `inside` when the file that defines its subject is among the files
 * smallest-first packs in full, else `outside`.
 * @param smallestFirstFiles paths of the files smallest-first packs in full (relative, `/`-separated)
 */
export function subsetOf(q: Pick<Question, 'file'>, smallestFirstFiles: ReadonlySet<string>): Subset {
  return smallestFirstFiles.has(q.file) ? 'inside' : 'outside';
}

/** One question answered with one packing (a line of the run's JSONL). */
export interface LargeRecord extends Question {
  packing: LargePacking;
  subset: Subset;
  /** The subject's file is in full in this packing's prefix. */
  inFull: boolean;
  /** The subject's file is in this packing's repository map. */
  inMap: boolean;
  /** A chunk of the subject's file was retrieved for the question. */
  fileRetrieved: boolean;
  /** The subject's own chunk (its file and name) was retrieved for the question. */
  subjectRetrieved: boolean;
  /** The retrieved chunks, best first: `path#name`. */
  retrieved: string[];
  /** The greedy answer (full attention), its stop reason, and whether it is correct (scoring.ts). */
  text: string;
  stop: string;
  correct: boolean;
  /** Prompt tokens: prefix + retrieval + question. */
  L: number;
  prefixTokens: number;
  retrievalTokens: number;
  questionTokens: number;
  /** Restoring the prefix's state from memory [ms]. */
  restoreMs: number;
  /** Prefilling what follows the prefix (retrieval + question, and the window's last prefix tokens) [ms]. */
  prefillMs: number;
  /** Decoding the answer [ms]. */
  answerMs: number;
}

/**
 * A question not asked with one packing (a line of the run's JSONL): its thread turn does not fit
 * the question's room of that packing's prompt (prompt.ts `questionSkipReason`).
 */
export interface SkippedRecord extends Question {
  packing: LargePacking;
  subset: Subset;
  /** Why it was not asked. */
  skipped: string;
  /** Tokens of the question's thread turn, and the room it had [tokens]. */
  questionTokens: number;
  questionRoom: number;
}

/** A line of the run's JSONL: an answered or a skipped question. */
export type RunRecord = LargeRecord | SkippedRecord;

/** Whether a JSONL record is a skipped question. */
export function isSkipped(r: RunRecord): r is SkippedRecord {
  return typeof (r as Partial<SkippedRecord>).skipped === 'string';
}

/** Skipped questions of one repository. */
export interface SkippedCount {
  repo: string;
  /** Questions skipped with at least one packing, per subset and in all. */
  outside: number;
  inside: number;
  total: number;
  /** Each skipped question's id and reason (its first record's). */
  questions: { id: string; subset: Subset; reason: string }[];
}

/**
 * Skipped questions per repository (repositories in first-seen order; a question skipped with
 * several packings counts once). Repositories listed in `repos` with none skipped get a zero row.
 */
export function countSkipped(skipped: readonly Pick<SkippedRecord, 'id' | 'repo' | 'subset' | 'skipped'>[], repos: readonly string[] = []): SkippedCount[] {
  const rows = new Map<string, SkippedCount>();
  for (const repo of repos) rows.set(repo, { repo, outside: 0, inside: 0, total: 0, questions: [] });
  for (const r of skipped) {
    let row = rows.get(r.repo);
    if (!row) rows.set(r.repo, (row = { repo: r.repo, outside: 0, inside: 0, total: 0, questions: [] }));
    if (row.questions.some((q) => q.id === r.id)) continue;
    row.questions.push({ id: r.id, subset: r.subset, reason: r.skipped });
    row[r.subset]++;
    row.total++;
  }
  return [...rows.values()];
}

/** One row of `summary`. */
export interface SummaryRow {
  packing: LargePacking;
  subset: Subset;
  /** Questions. */
  n: number;
  /** Share answered correctly, in [0, 1]. */
  accuracy: number;
}

/**
 * The records of the questions answered with every packing of `packings` (in record order).
 * @param packings the packings a question must have been answered with (default the three)
 */
export function completeRecords<R extends Pick<LargeRecord, 'id' | 'packing'>>(records: readonly R[], packings: readonly LargePacking[] = LARGE_PACKINGS): R[] {
  const answered = new Map<string, Set<string>>();
  for (const r of records) answered.set(r.id, (answered.get(r.id) ?? new Set()).add(r.packing));
  return records.filter((r) => packings.every((p) => answered.get(r.id)!.has(p)));
}

/**
 * `summary`: for each packing and subset with at least one question answered with every packing,
 * the number of those questions and the share answered correctly. A question recorded twice for
 * a packing counts once (its first record).
 * @param packings the packings compared, in row order (default the three: `summary`;
 *   the held-out run's `heldOut.rows` pass the packings it answered with)
 */
export function summarize(records: readonly Pick<LargeRecord, 'id' | 'packing' | 'subset' | 'correct'>[], packings: readonly LargePacking[] = LARGE_PACKINGS): SummaryRow[] {
  const complete = completeRecords(records, packings);
  const rows: SummaryRow[] = [];
  for (const packing of packings) {
    for (const subset of SUBSETS) {
      const seen = new Set<string>();
      let n = 0;
      let correct = 0;
      for (const r of complete) {
        if (r.packing !== packing || r.subset !== subset || seen.has(r.id)) continue;
        seen.add(r.id);
        n++;
        if (r.correct) correct++;
      }
      if (n > 0) rows.push({ packing, subset, n, accuracy: correct / n });
    }
  }
  return rows;
}

/** The target: ranked+map+retrieval ≥ 25 points above smallest-first on `outside`, no worse on `inside`. */
export interface TargetCheck {
  subset: Subset;
  /** Accuracy of ranked+map+retrieval − smallest-first [points of accuracy, in [−1, 1]]; null when a row is missing. */
  gain: number | null;
  /** The least gain the target asks (0.25 outside, 0 inside). */
  required: number;
  met: boolean;
}

/** Checks the target on `summary` rows. */
export function checkTarget(summary: readonly SummaryRow[]): TargetCheck[] {
  return SUBSETS.map((subset) => {
    const acc = (p: LargePacking) => summary.find((r) => r.packing === p && r.subset === subset)?.accuracy;
    const a = acc('ranked+map+retrieval');
    const b = acc('smallest-first');
    const gain = a === undefined || b === undefined ? null : a - b;
    const required = subset === 'outside' ? 0.25 : 0;
    return { subset, gain, required, met: gain !== null && gain >= required - 1e-12 };
  });
}

/**
 * `extra`: for a packing besides the three (`EXTRA_PACKINGS`), each subset's rows
 * `{packing, subset, n, accuracy}` for all four packings over the questions answered with all four
 * (a paired comparison: the same questions in every row; the first record of a duplicate counts).
 * No rows for a subset without such a question.
 */
export function summarizeExtra(records: readonly Pick<LargeRecord, 'id' | 'packing' | 'subset' | 'correct'>[], extra: LargePacking): SummaryRow[] {
  const packings = [...LARGE_PACKINGS, extra];
  const seen = new Map<string, Set<string>>();
  for (const r of records) seen.set(r.id, (seen.get(r.id) ?? new Set()).add(r.packing));
  const paired = records.filter((r) => packings.every((p) => seen.get(r.id)!.has(p)));
  const rows: SummaryRow[] = [];
  for (const subset of SUBSETS) {
    for (const packing of packings) {
      const counted = new Set<string>();
      let n = 0;
      let correct = 0;
      for (const r of paired) {
        if (r.packing !== packing || r.subset !== subset || counted.has(r.id)) continue;
        counted.add(r.id);
        n++;
        if (r.correct) correct++;
      }
      if (n > 0) rows.push({ packing, subset, n, accuracy: correct / n });
    }
  }
  return rows;
}

/** Accuracy by a grouping key, per packing (only complete questions; every packing they were answered with). */
export function accuracyBy(records: readonly LargeRecord[], key: (r: LargeRecord) => string): { group: string; packing: LargePacking; n: number; accuracy: number }[] {
  const complete = completeRecords(records);
  const groups = [...new Set(complete.map(key))].sort();
  const out: { group: string; packing: LargePacking; n: number; accuracy: number }[] = [];
  for (const group of groups) {
    for (const packing of ALL_PACKINGS) {
      const rs = complete.filter((r) => r.packing === packing && key(r) === group);
      if (rs.length > 0) out.push({ group, packing, n: rs.length, accuracy: rs.filter((r) => r.correct).length / rs.length });
    }
  }
  return out;
}

/** One packing of one repository: its prefix and what making it cost. */
export interface PackingInfo {
  sections: SectionTokens;
  prefixTokens: number;
  /** Files in full / in the map. */
  fullFiles: number;
  mappedFiles: number;
  /** Room kept for the retrieval section [tokens]. */
  retrievalRoom: number;
  /** The prefix's prefill [ms] (when its state was made, possibly by an earlier run) and when. */
  prefillMs: number;
  prefilledAt?: string;
  /** Loading the prefix's state file [ms], when this run loaded it instead of prefilling. */
  loadMs?: number;
}

/** One repository of the run. */
export interface RepoInfo {
  repo: string;
  /** Source files the include patterns keep (packable text files). */
  files: number;
  /** Tokens of all their sections (the product's file sections, unlimited budget). */
  sourceTokens: number;
  /** sourceTokens / contextSize. */
  timesContext: number;
  /** Files smallest-first packs in full. */
  smallestFirstFiles: string[];
  /** Questions generated (the model's kinds) outside / inside, and selected. */
  generated: Record<Subset, number>;
  selected: Record<Subset, number>;
  packings: Partial<Record<LargePacking, PackingInfo>>;
}

/** Inputs of {@link buildLargeReport} besides the records. */
export interface LargeReportInput {
  modelId: string;
  modelFile: string;
  contextSize: number;
  answerTokens: number;
  kinds: readonly QuestionKind[];
  repos: readonly RepoInfo[];
  /** Questions skipped (not asked with some packing), by {@link countSkipped}; none when absent. */
  skipped?: readonly SkippedRecord[];
  /** Per extra packing: fields written with its `extra` rows (what it is, how it was run). */
  extraNotes?: Partial<Record<LargePacking, Record<string, unknown>>>;
  /** Extra fields written as they are (e.g. what was not run, and why). */
  notes: Record<string, unknown>;
}

const mean = (xs: readonly number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/**
 * The report: `summary` (see {@link summarize}), the target, `extra` (see {@link summarizeExtra}: a
 * packing besides the three, on the questions it answered), the skipped questions per repository
 * ({@link countSkipped}), accuracy by kind, repository and where the subject's file was, time to first token per packing, tokens per section per repository,
 * and every record.
 *
 * Time to first token: `warmMs` = restoring the cached prefix (from memory) + prefilling the
 * retrieval section and the question (the first token is the argmax of the prompt's last logits);
 * `coldMs` = the prefix's prefill + the same question prefill (nothing cached).
 */
export function buildLargeReport(records: readonly LargeRecord[], input: LargeReportInput) {
  const summary = summarize(records);
  const complete = completeRecords(records);
  const ttft = ALL_PACKINGS.filter((p) => LARGE_PACKINGS.includes(p) || complete.some((r) => r.packing === p)).map((packing) => {
    const rs = complete.filter((r) => r.packing === packing);
    const prefill = (r: LargeRecord) => input.repos.find((x) => x.repo === r.repo)?.packings[packing]?.prefillMs ?? NaN;
    return {
      packing,
      n: rs.length,
      warmMs: mean(rs.map((r) => r.restoreMs + r.prefillMs)),
      coldMs: mean(rs.map((r) => prefill(r) + r.prefillMs)),
      questionPrefillMs: mean(rs.map((r) => r.prefillMs)),
      retrievalTokens: mean(rs.map((r) => r.retrievalTokens)),
      questionTokens: mean(rs.map((r) => r.questionTokens)),
      L: mean(rs.map((r) => r.L)),
    };
  });
  const where = (r: LargeRecord) => (r.inFull ? 'file in full' : r.subjectRetrieved ? 'subject retrieved' : r.fileRetrieved ? 'other chunk of file retrieved' : r.inMap ? 'file in map only' : 'file in tree only');
  return {
    model: input.modelId,
    modelFile: input.modelFile,
    contextSize: input.contextSize,
    answerTokens: input.answerTokens,
    attention: 'full attention (no SnapKV) over the packed context, greedy',
    kinds: input.kinds,
    summary,
    target: checkTarget(summary),
    extra: EXTRA_PACKINGS.filter((p) => records.some((r) => r.packing === p)).map((packing) => ({ packing, rows: summarizeExtra(records, packing), ...input.extraNotes?.[packing] })),
    questions: new Set(complete.map((r) => r.id)).size,
    skipped: countSkipped(input.skipped ?? [], input.repos.map((r) => r.repo)),
    byKind: accuracyBy(records, (r) => `${r.subset}:${r.kind}`),
    byRepo: accuracyBy(records, (r) => `${r.subset}:${r.repo}`),
    bySubjectPlace: accuracyBy(records, (r) => `${r.packing}:${r.subset}:${where(r)}`).filter((x) => x.group.startsWith(`${x.packing}:`)),
    ttft,
    repos: input.repos,
    ...input.notes,
    records,
  };
}

/** Writes the report as JSON (two-space indented); returns the file. */
export function writeLargeReport(records: readonly LargeRecord[], input: LargeReportInput, out: string): string {
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(buildLargeReport(records, input), null, 2) + '\n');
  return out;
}

/** The ceiling's packing label: the whole repository packed in full, full attention (no SnapKV). */
export const CEILING_PACKING = 'whole-repository';

/**
 * One question answered by the ceiling (a line of the ceiling run's JSONL): full attention (no
 * SnapKV) over a context holding the whole repository in full, greedy, scored like the packings.
 */
export interface CeilingRecord extends Question {
  packing: typeof CEILING_PACKING;
  /** The question's subset in the packed run (by smallest-first at the run's context size). */
  subset: Subset;
  text: string;
  stop: string;
  correct: boolean;
  /** Prompt tokens: prefix + question. */
  L: number;
  prefixTokens: number;
  questionTokens: number;
  /** Restoring the prefix's state from memory, prefilling the question, decoding the answer [ms]. */
  restoreMs: number;
  prefillMs: number;
  answerMs: number;
  /** The machine's 1-, 5- and 15-minute load averages when the answer was done (`os.loadavg()`). */
  load: number[];
}

/** One row of the ceiling's comparison: a packing (or the ceiling) on one repository's questions of one subset. */
export interface CeilingRow {
  repo: string;
  packing: LargePacking | typeof CEILING_PACKING;
  subset: Subset;
  /** Questions. */
  n: number;
  /** Share answered correctly, in [0, 1]. */
  accuracy: number;
}

/**
 * The ceiling beside the packings on the same questions: per repository and subset, a row for
 * the ceiling over the questions it answered, then a row per packing of `packings` over its
 * records of those same questions (its first record of each; a packing with none of them gets
 * no row). Repositories and subsets in the order the ceiling's records first name them.
 * @param ceiling the ceiling's records
 * @param packed the packed run's records (the report's `records`, scored)
 * @param packings the packings compared, in row order
 */
export function ceilingRows(
  ceiling: readonly Pick<CeilingRecord, 'id' | 'repo' | 'subset' | 'correct'>[],
  packed: readonly Pick<LargeRecord, 'id' | 'repo' | 'packing' | 'subset' | 'correct'>[],
  packings: readonly LargePacking[] = ALL_PACKINGS,
): CeilingRow[] {
  const groups = new Map<string, { repo: string; subset: Subset; ids: Set<string> }>();
  for (const r of ceiling) {
    const k = `${r.repo}|${r.subset}`;
    if (!groups.has(k)) groups.set(k, { repo: r.repo, subset: r.subset, ids: new Set() });
    groups.get(k)!.ids.add(r.id);
  }
  const rate = (rs: readonly { id: string; correct: boolean }[]) => {
    const seen = new Set<string>();
    let n = 0;
    let correct = 0;
    for (const r of rs) {
      if (seen.has(r.id)) continue;
      seen.add(r.id);
      n++;
      if (r.correct) correct++;
    }
    return { n, accuracy: n === 0 ? 0 : correct / n };
  };
  const rows: CeilingRow[] = [];
  for (const { repo, subset, ids } of groups.values()) {
    rows.push({ repo, packing: CEILING_PACKING, subset, ...rate(ceiling.filter((r) => r.repo === repo && ids.has(r.id))) });
    for (const packing of packings) {
      const rs = packed.filter((r) => r.packing === packing && r.repo === repo && ids.has(r.id));
      if (rs.length > 0) rows.push({ repo, packing, subset, ...rate(rs) });
    }
  }
  return rows;
}

/**
 * Sets top-level fields of an existing report file (the other fields, `summary` included, stay
 * byte for byte as they were parsed and are written back in their order; a new field goes last,
 * before `records`). Returns the file.
 * @throws Error when the file does not exist or is not a JSON object
 */
export function mergeReportFields(out: string, fields: Record<string, unknown>): string {
  if (!fs.existsSync(out)) throw new Error(`${out}: no report to add ${Object.keys(fields).join(', ')} to (run the packings first)`);
  const report = JSON.parse(fs.readFileSync(out, 'utf8')) as unknown;
  if (typeof report !== 'object' || report === null || Array.isArray(report)) throw new Error(`${out} is not a JSON object`);
  const old = report as Record<string, unknown>;
  const merged: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(old)) {
    if (k === 'records') continue;
    merged[k] = k in fields ? fields[k] : v;
  }
  for (const [k, v] of Object.entries(fields)) if (!(k in merged)) merged[k] = v;
  if ('records' in old) merged.records = old.records;
  fs.writeFileSync(out, JSON.stringify(merged, null, 2) + '\n');
  return out;
}
