/**
 * Aggregation of the fidelity benchmark into bench/results/fidelity.json: summaries over prompts,
 * the probes, and the targets (reported, not asserted); plus the Markdown tables the run
 * prints.
 */
import type { PromptMeasurement } from './benchmark';
import type { FollowUpResult } from './follow-up';
import { summarize, type PromptFidelity, type Summary } from './metrics';
import type { EvictionPolicy, PolicyFamily } from './policy';
import type { RetrievalItem, RetrievalItemResult } from './retrieval';
import type { ModelMetadata } from '../../src/models/metadata';

/** The attention shape the fidelity JSON records for its model (`meta.model`). */
export interface ModelShapeRecord {
  nLayer: number;
  nHeadKv: number;
  nHead: number;
  /**
   * K head size [channels]: the GGUF's `<arch>.attention.key_length` (n_embd / n_head only when the
   * key is absent). Gemma 3 270M: 256, where n_embd / n_head = 640 / 4 = 160.
   */
  headSize: number;
  /** V head size [channels], recorded only where it differs from headSize (`attention.value_length`). */
  valueHeadSize?: number;
  nCtxTrain: number;
}

/**
 * The model's attention shape as the fidelity JSON records it, from the GGUF header (layers, heads,
 * head sizes: `readModelMetadata`) and llama.cpp's training context.
 */
export function modelShapeRecord(meta: ModelMetadata, nCtxTrain: number): ModelShapeRecord {
  return {
    nLayer: meta.blockCount,
    nHeadKv: meta.headCountKv,
    nHead: meta.headCount,
    headSize: meta.keyLength,
    ...(meta.valueLength !== meta.keyLength ? { valueHeadSize: meta.valueLength } : {}),
    nCtxTrain,
  };
}

/** One policy as recorded. */
export interface PolicyRecord {
  id: string;
  family: PolicyFamily;
  label: string;
  params: Readonly<Record<string, number | string>>;
  /** Drawn in the main plot. */
  plotted: boolean;
}

/** Fidelity of one policy at one budget, over prompts. */
export interface ResultRow {
  policy: string;
  /** B / L. */
  fraction: number;
  /** Prompts where B ≤ the policy's window (SnapKV and random then keep the last B positions). */
  degenerate: number;
  top1: Summary;
  kl: Summary;
  pplRatio: Summary;
}

/** A proportion with its 95 % Wilson interval. */
export interface Proportion {
  hits: number;
  n: number;
  rate: number;
  low: number;
  high: number;
}

/** Wilson score interval (95 %) of hits out of n. */
export function wilson(hits: number, n: number): Proportion {
  if (n === 0) return { hits, n, rate: NaN, low: NaN, high: NaN };
  const z = 1.959964;
  const p = hits / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return { hits, n, rate: p, low: Math.max(0, c - h), high: Math.min(1, c + h) };
}

/** Summaries of a list of per-prompt fidelities. */
export function summarizeFidelity(list: readonly PromptFidelity[]): { top1: Summary; kl: Summary; pplRatio: Summary } {
  return { top1: summarize(list.map((f) => f.top1)), kl: summarize(list.map((f) => f.kl)), pplRatio: summarize(list.map((f) => f.pplRatio)) };
}

/** Result rows of every policy × fraction. */
export function resultRows(measurements: readonly PromptMeasurement[], policies: readonly EvictionPolicy[], fractions: readonly number[]): ResultRow[] {
  const rows: ResultRow[] = [];
  for (const p of policies) {
    const window = typeof p.params.window === 'number' ? p.params.window : 0;
    fractions.forEach((fraction, fi) => {
      const list = measurements.map((m) => m.byPolicy[p.id]![fi]!);
      const degenerate = window > 0 ? measurements.filter((m) => Math.max(1, Math.round(fraction * m.L)) <= window).length : 0;
      rows.push({ policy: p.id, fraction, degenerate, ...summarizeFidelity(list) });
    });
  }
  return rows;
}

/** The retrieval section of the JSON. */
export interface RetrievalReport {
  candidates: number;
  fullRecalledCandidates: number;
  items: number;
  /** Full-attention recall on the items in this run (1 unless the engine's numbers changed). */
  fullRecall: Proportion;
  /** Items by filler distance [tokens]. */
  distances: Record<string, number>;
  byPolicy: { policy: string; fraction: number; recall: Proportion }[];
  /**
   * Recall split at a filler distance of 500 tokens (the model was trained on 512-token
   * sequences: farther names are recalled across distances it never saw).
   */
  byDistance: { policy: string; fraction: number; near: Proportion; far: Proportion }[];
  /** Per item: its description and hits [policy][fraction]. */
  perItem: { item: RetrievalItem; L: number; hits: Record<string, boolean[]> }[];
}

/** Aggregates the retrieval probe. */
export function retrievalReport(results: readonly RetrievalItemResult[], policies: readonly EvictionPolicy[], fractions: readonly number[], candidates: number, fullRecalled: number): RetrievalReport {
  const distances: Record<string, number> = {};
  for (const r of results) distances[r.item.distance] = (distances[r.item.distance] ?? 0) + 1;
  const byPolicy: RetrievalReport['byPolicy'] = [];
  for (const p of policies) {
    fractions.forEach((fraction, fi) => {
      const hits = results.filter((r) => r.byPolicy[p.id]![fi]).length;
      byPolicy.push({ policy: p.id, fraction, recall: wilson(hits, results.length) });
    });
  }
  const near = results.filter((r) => r.item.distance <= 500);
  const far = results.filter((r) => r.item.distance > 500);
  const byDistance: RetrievalReport['byDistance'] = [];
  for (const p of policies) {
    fractions.forEach((fraction, fi) => {
      const hits = (list: readonly RetrievalItemResult[]) => wilson(list.filter((r) => r.byPolicy[p.id]![fi]).length, list.length);
      byDistance.push({ policy: p.id, fraction, near: hits(near), far: hits(far) });
    });
  }
  return {
    candidates,
    fullRecalledCandidates: fullRecalled,
    items: results.length,
    fullRecall: wilson(results.filter((r) => r.full).length, results.length),
    distances,
    byPolicy,
    byDistance,
    perItem: results.map((r) => ({ item: r.item, L: r.L, hits: r.byPolicy })),
  };
}

/** The follow-up section of the JSON. */
export interface FollowUpReport {
  items: number;
  prefixLength: number;
  snapkv: { window: number; kernel: number; pooling: string };
  byFraction: {
    fraction: number;
    /** Mean cells when A2 is decoded. */
    cells: number;
    continue: { top1: Summary; kl: Summary; pplRatio: Summary };
    resnap: { top1: Summary; kl: Summary; pplRatio: Summary };
    /** Items where re-snap's KL is lower / equal / higher than continue's. */
    resnapBetterKl: number;
    resnapWorseKl: number;
  }[];
}

/** Aggregates the follow-up probe: results[item][fraction]. */
export function followUpReport(results: readonly FollowUpResult[][], fractions: readonly number[], prefixLength: number, snapkv: FollowUpReport['snapkv']): FollowUpReport {
  return {
    items: results.length,
    prefixLength,
    snapkv,
    byFraction: fractions.map((fraction, fi) => {
      const at = results.map((r) => r[fi]!);
      return {
        fraction,
        cells: at.reduce((a, r) => a + r.cells, 0) / at.length,
        continue: summarizeFidelity(at.map((r) => r.continue)),
        resnap: summarizeFidelity(at.map((r) => r.resnap)),
        resnapBetterKl: at.filter((r) => r.resnap.kl < r.continue.kl).length,
        resnapWorseKl: at.filter((r) => r.resnap.kl > r.continue.kl).length,
      };
    }),
  };
}

/** One target of issue 7 and whether this run meets it. */
export interface TargetCheck {
  target: string;
  met: boolean;
  detail: string;
}

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;

/** Checks the targets on the aggregated results. */
export function checkTargets(rows: readonly ResultRow[], snapkvIds: readonly string[], baselineIds: readonly string[], followUp: FollowUpReport | null): TargetCheck[] {
  const get = (id: string, f: number) => rows.find((r) => r.policy === id && r.fraction === f);
  const fractions = [...new Set(rows.map((r) => r.fraction))];
  const out: TargetCheck[] = [];
  for (const s of snapkvIds) {
    const misses: string[] = [];
    for (const f of fractions) {
      const a = get(s, f)!;
      for (const b of baselineIds) {
        const r = get(b, f)!;
        if (a.top1.mean < r.top1.mean) misses.push(`B/L ${pct(f)}: top-1 ${pct(a.top1.mean)} < ${b} ${pct(r.top1.mean)}`);
        if (a.kl.mean > r.kl.mean) misses.push(`B/L ${pct(f)}: KL ${a.kl.mean.toFixed(4)} > ${b} ${r.kl.mean.toFixed(4)}`);
        if (a.pplRatio.mean > r.pplRatio.mean) misses.push(`B/L ${pct(f)}: ppl ratio ${a.pplRatio.mean.toFixed(4)} > ${b} ${r.pplRatio.mean.toFixed(4)}`);
      }
    }
    out.push({ target: `${s} at or above ${baselineIds.join(' and ')} at every budget (mean top-1, KL, ppl ratio)`, met: misses.length === 0, detail: misses.length ? misses.join('; ') : 'met at every budget on all three metrics' });
  }
  for (const s of snapkvIds) {
    const a = get(s, 0.25);
    if (a) out.push({ target: `${s}: top-1 agreement ≥ 95 % at B/L = 25 %`, met: a.top1.mean >= 0.95, detail: `mean ${pct(a.top1.mean)} (95 % CI ${pct(a.top1.ciLow)}–${pct(a.top1.ciHigh)}, median ${pct(a.top1.median)})` });
  }
  const best = rows.filter((r) => r.fraction === 0.25 && r.policy.startsWith('snapkv')).sort((x, y) => y.top1.mean - x.top1.mean)[0];
  if (best) out.push({ target: 'best SnapKV grid configuration: top-1 agreement ≥ 95 % at B/L = 25 %', met: best.top1.mean >= 0.95, detail: `${best.policy}: mean ${pct(best.top1.mean)}` });
  if (followUp) {
    const misses = followUp.byFraction.filter((b) => b.resnap.top1.mean < b.continue.top1.mean || b.resnap.kl.mean > b.continue.kl.mean).map((b) => `B/L ${pct(b.fraction)}: re-snap top-1 ${pct(b.resnap.top1.mean)} KL ${b.resnap.kl.mean.toFixed(4)} vs continue ${pct(b.continue.top1.mean)} KL ${b.continue.kl.mean.toFixed(4)}`);
    out.push({ target: 're-snap at least as good as continuing for the second continuation (mean top-1 and KL, every budget)', met: misses.length === 0, detail: misses.length ? misses.join('; ') : 'met at every budget' });
  }
  return out;
}

/** Markdown table: policy × budget with top-1, KL and ppl ratio (mean [p25–p75]). */
export function markdownTable(rows: readonly ResultRow[], policies: readonly PolicyRecord[]): string {
  const lines = ['| policy | B/L | top-1 agreement | KL(full ‖ compressed) [nats] | perplexity ratio |', '|---|---|---|---|---|'];
  for (const p of policies) {
    for (const r of rows.filter((x) => x.policy === p.id)) {
      lines.push(
        `| ${p.label} | ${(100 * r.fraction).toFixed(0)} % | ${pct(r.top1.mean)} [${pct(r.top1.q25)}–${pct(r.top1.q75)}] | ${r.kl.mean.toFixed(4)} [${r.kl.q25.toFixed(4)}–${r.kl.q75.toFixed(4)}] | ${r.pplRatio.mean.toFixed(3)} [${r.pplRatio.q25.toFixed(3)}–${r.pplRatio.q75.toFixed(3)}] |`,
      );
    }
  }
  return lines.join('\n');
}
