/**
 * Plots of the code-QA benchmark, from bench/results/repoqa-<model>.json: Vega-Lite specs
 * rendered to SVG and PNG by bench/fidelity/plot.ts `render` (Vega headless, resvg).
 *
 *   node --import tsx bench/repoqa/plot.ts [--in bench/results/repoqa-smollm2.json]
 *
 * Writes repoqa-<model>.{svg,png}: exact-match accuracy (full attention as a dashed line),
 * agreement with full attention and KL of the answer vs budget for SnapKV, StreamingLLM and
 * random eviction, with 95 % bootstrap bands; and repoqa-<model>-grid.{svg,png} when the SnapKV
 * grid ran: agreement and KL of every window × kernel × pooling.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { render } from '../fidelity/plot';
import type { Summary } from '../fidelity/metrics';

/** The parts of the result JSON the plots read. */
export interface RepoQaPlotInput {
  meta: { model: { id: string }; questions: number; gridQuestions: number };
  results: { policy: string; fraction: number; n: number; accuracy: Summary; agreement: Summary; kl: Summary }[];
  grid: { policy: string; fraction: number; n: number; accuracy: Summary; agreement: Summary; kl: Summary }[];
}

type Spec = Record<string, unknown>;
const FONT = 'DejaVu Sans, Liberation Sans, Arial, sans-serif';
const SERIES: Record<string, { label: string; color: string }> = {
  snapkv: { label: 'SnapKV w=32 max k=7 (RepoSnap default)', color: '#1f4e99' },
  streamingllm: { label: 'StreamingLLM (4 sinks + recent)', color: '#2ca25f' },
  random: { label: 'random + window 32', color: '#7f7f7f' },
  'knorm-t32': { label: 'key norm (last 32 kept)', color: '#d95f02' },
  'knorm0.5-topup-snapkv-w32-max-k7': { label: 'key norm 50 % + SnapKV w=32 max k=7', color: '#7570b3' },
  'snapkv-w32-max-k7-code-b1': { label: 'SnapKV + code prior β=1', color: '#e7298a' },
  'snapkv-w32-max-k7-code-b4': { label: 'SnapKV + code prior β=4', color: '#66a61e' },
};
const xBudget = { field: 'budget', type: 'quantitative', title: 'budget B/L [%] (log scale)', scale: { type: 'log', domain: [4.5, 55] }, axis: { values: [5, 10, 25, 50], format: 'd' } };

type Metric = 'accuracy' | 'agreement' | 'kl';

function values(input: RepoQaPlotInput, metric: Metric): Record<string, unknown>[] {
  const k = metric === 'kl' ? 1 : 100;
  const floor = metric === 'kl' ? 1e-4 : -Infinity;
  return input.results
    .filter((r) => SERIES[r.policy])
    .map((r) => ({ series: SERIES[r.policy]!.label, budget: 100 * r.fraction, mean: Math.max(floor, k * r[metric].mean), low: Math.max(floor, k * r[metric].ciLow), high: Math.max(floor, k * r[metric].ciHigh) }));
}

function panel(input: RepoQaPlotInput, metric: Metric, title: string, yTitle: string, yScale: Record<string, unknown>): Spec {
  // the legend names the series this run has (a --scorer or --prior run has no baselines)
  const shown = Object.entries(SERIES).filter(([name]) => input.results.some((r) => r.policy === name));
  const color = { field: 'series', type: 'nominal', title: null, scale: { domain: shown.map(([, s]) => s.label), range: shown.map(([, s]) => s.color) }, legend: { orient: 'bottom', direction: 'vertical', labelLimit: 320, symbolType: 'stroke', symbolStrokeWidth: 3, symbolOpacity: 1 } };
  const axis = yScale.type === 'log' ? { values: [1e-4, 1e-3, 1e-2, 0.1, 1, 10], format: '~g' } : {};
  const layer: Spec[] = [
    { mark: { type: 'errorband', opacity: 0.18 }, encoding: { x: xBudget, y: { field: 'low', type: 'quantitative', title: yTitle, scale: yScale, axis }, y2: { field: 'high' }, color } },
    { mark: { type: 'line', point: true, strokeWidth: 2 }, encoding: { x: xBudget, y: { field: 'mean', type: 'quantitative', title: yTitle, scale: yScale, axis }, color } },
  ];
  const full = input.results.find((r) => r.policy === 'full');
  if (metric === 'accuracy' && full) {
    layer.push({ data: { values: [{ y: 100 * full.accuracy.mean }] }, mark: { type: 'rule', strokeDash: [6, 4], color: '#c51b8a', strokeWidth: 2 }, encoding: { y: { field: 'y', type: 'quantitative' } } });
    title = `accuracy (dashed: full attention ${(100 * full.accuracy.mean).toFixed(1)} %)`;
  }
  return { title: { text: title, fontSize: 12 }, width: 250, height: 220, data: { values: values(input, metric) }, layer };
}

/** Main plot: accuracy, agreement and KL vs budget. */
export function mainSpec(input: RepoQaPlotInput): Spec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `Code questions on real repositories: ${input.meta.model.id}, ${input.meta.questions} questions`, subtitle: 'mean over questions; bands: 95 % bootstrap interval of the mean', fontSize: 14 },
    config: { font: FONT, view: { stroke: null } },
    hconcat: [
      panel(input, 'accuracy', 'exact-match accuracy', 'accuracy [%]', { domain: [0, 100] }),
      panel(input, 'agreement', 'agreement with full attention', 'same answer as full [%]', { domain: [0, 100] }),
      panel(input, 'kl', 'KL(full ‖ compressed) of the answer', 'mean KL [nats] (log scale)', { type: 'log' }),
    ],
    resolve: { scale: { color: 'shared' } },
  };
}

/** Every SnapKV configuration of the grid: agreement and KL vs budget, one column per window. */
export function gridSpec(input: RepoQaPlotInput): Spec | null {
  const rows = input.grid.filter((r) => /^snapkv(-w\d+-k\d+-(max|avg))?$/.test(r.policy));
  if (rows.length === 0) return null;
  const parse = (p: string) => {
    const m = /^snapkv-w(\d+)-k(\d+)-(max|avg)$/.exec(p);
    return m ? { window: `w = ${m[1]}`, kernel: `kernel ${m[2]}`, pooling: m[3]! } : { window: 'w = 32', kernel: 'kernel 7', pooling: 'max' };
  };
  const data = (metric: Metric) => rows.map((r) => ({ ...parse(r.policy), budget: 100 * r.fraction, value: metric === 'kl' ? Math.max(1e-4, r.kl.mean) : 100 * r[metric].mean }));
  const facet = (metric: Metric, yTitle: string, yScale: Record<string, unknown>): Spec => ({
    data: { values: data(metric) },
    facet: { column: { field: 'window', type: 'nominal', title: null, sort: ['w = 8', 'w = 16', 'w = 32'] } },
    spec: {
      width: 220,
      height: 180,
      mark: { type: 'line', point: true },
      encoding: {
        x: xBudget,
        y: { field: 'value', type: 'quantitative', title: yTitle, scale: yScale, axis: yScale.type === 'log' ? { values: [1e-4, 1e-3, 1e-2, 0.1, 1, 10], format: '~g' } : {} },
        color: { field: 'kernel', type: 'nominal', title: 'pooling kernel', scale: { range: ['#1b9e77', '#d95f02', '#7570b3'] }, legend: { symbolType: 'stroke', symbolStrokeWidth: 3 } },
        strokeDash: { field: 'pooling', type: 'nominal', title: 'pooling', scale: { domain: ['max', 'avg'], range: [[1, 0], [6, 4]] }, legend: null },
      },
    },
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `SnapKV grid on ${input.meta.gridQuestions} questions: ${input.meta.model.id}`, subtitle: 'observation window × pooling (solid: max, dashed: avg) × kernel; mean over the grid questions', fontSize: 14 },
    config: { font: FONT, view: { stroke: '#ddd' } },
    vconcat: [facet('agreement', 'agreement with full [%]', { zero: false }), facet('kl', 'mean KL [nats] (log scale)', { type: 'log' })],
  };
}

/** Writes the plots of one result file into `dir` as repoqa-<key>[-grid].{svg,png}; returns the files. */
export async function writeRepoQaPlots(input: RepoQaPlotInput, dir: string, key: string): Promise<string[]> {
  const written: string[] = [];
  for (const [name, spec] of [[`repoqa-${key}`, mainSpec(input)], [`repoqa-${key}-grid`, gridSpec(input)]] as const) {
    if (!spec) continue;
    const { svg, png } = await render(spec);
    for (const [ext, data] of [['svg', svg], ['png', png]] as const) {
      const file = path.join(dir, `${name}.${ext}`);
      fs.writeFileSync(file, data);
      written.push(file);
    }
  }
  return written;
}

async function main(): Promise<void> {
  const { values: v } = parseArgs({ options: { in: { type: 'string' } } });
  const file = path.resolve(v.in ?? path.join(__dirname, '..', 'results', 'repoqa-smollm2.json'));
  const key = path.basename(file, '.json').replace(/^repoqa-/, '');
  const input = JSON.parse(fs.readFileSync(file, 'utf8')) as RepoQaPlotInput;
  for (const f of await writeRepoQaPlots(input, path.dirname(file), key)) console.log(`wrote ${path.relative(process.cwd(), f)}`);
}

if (require.main === module) void main();
