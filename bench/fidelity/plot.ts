/**
 * Plots of the fidelity benchmark, from bench/results/fidelity.json: Vega-Lite specs compiled
 * and rendered headless by Vega to SVG, rasterized to PNG by resvg.
 *
 *   node --import tsx bench/fidelity/plot.ts [--in bench/results/fidelity.json] [--out bench/results]
 *
 * Plots take the result file's name (fidelity-coder.json → fidelity-coder.png, …). Writes fidelity.{svg,png} (quality vs budget, one line per plotted policy, 95 % bootstrap
 * bands of the mean over prompts), fidelity-snapkv-grid.{svg,png} (every SnapKV configuration)
 * and fidelity-probes.{svg,png} (retrieval recall; follow-up re-snap vs continue).
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { FollowUpReport, PolicyRecord, ResultRow, RetrievalReport } from './report';

/** The parts of fidelity.json the plots read. */
export interface PlotInput {
  policies: PolicyRecord[];
  results: ResultRow[];
  retrieval?: RetrievalReport | null;
  followUp?: FollowUpReport | null;
  meta: {
    prompts: { n: number; minL: number; maxL: number; source?: 'stories' | 'code' };
    steps: number;
    /** The model (`label` absent in results written before real models: stories260K). */
    model?: { file: string; label?: string };
  };
}

/** The model's name for titles: meta.model.label, else stories260K (the only model before issue 13). */
export function modelLabel(input: PlotInput): string {
  return input.meta.model?.label ?? 'stories260K';
}

/** A Vega-Lite spec (kept loose: the library validates it). */
type Spec = Record<string, unknown>;

const FONT = 'DejaVu Sans, Liberation Sans, Arial, sans-serif';
const X_TICKS = [5, 10, 25, 50];
/** Colours by policy family (and a second shade for a second SnapKV). */
const PALETTE = ['#1f4e99', '#2ca25f', '#e6550d', '#7f7f7f', '#c51b8a', '#6baed6'];

const xBudget = { field: 'budget', type: 'quantitative', title: 'budget B/L [%] (log scale)', scale: { type: 'log', domain: [4.5, 55] }, axis: { values: X_TICKS, format: 'd' } };

/** One panel: mean line + points + band, coloured by `series`. */
function panel(title: string, yTitle: string, yScale: Record<string, unknown>, series: string[], colors: string[], legendColumns = 3): Spec {
  const color = { field: 'series', type: 'nominal', title: null, scale: { domain: series, range: colors }, legend: { orient: 'bottom', direction: 'horizontal', columns: legendColumns, labelLimit: 320, symbolType: 'stroke', symbolStrokeWidth: 3, symbolOpacity: 1 } };
  // log axes: ticks and grid lines at the decades only
  const axis = yScale.type === 'log' ? { values: yTitle.startsWith('perplexity') ? [1, 2, 5, 10, 20, 50, 100] : [1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10], format: '~g' } : {};
  return {
    title,
    width: 250,
    height: 220,
    layer: [
      { mark: { type: 'errorband', opacity: 0.18 }, encoding: { x: xBudget, y: { field: 'low', type: 'quantitative', title: yTitle, scale: yScale, axis }, y2: { field: 'high' }, color } },
      { mark: { type: 'line', point: true, strokeWidth: 2 }, encoding: { x: xBudget, y: { field: 'mean', type: 'quantitative', title: yTitle, scale: yScale, axis }, color } },
    ],
  };
}

type Metric = 'top1' | 'kl' | 'pplRatio';

function metricRows(rows: readonly ResultRow[], labels: Map<string, string>, metric: Metric): Record<string, unknown>[] {
  const scale = metric === 'top1' ? 100 : 1;
  const floor = metric === 'kl' ? 1e-5 : -Infinity;
  return rows
    .filter((r) => labels.has(r.policy))
    .map((r) => ({ series: labels.get(r.policy), budget: 100 * r.fraction, mean: Math.max(floor, scale * r[metric].mean), low: Math.max(floor, scale * r[metric].ciLow), high: Math.max(floor, scale * r[metric].ciHigh) }));
}

/** Main plot: top-1, KL and perplexity ratio vs budget for the plotted policies. */
export function mainSpec(input: PlotInput): Spec {
  const plotted = input.policies.filter((p) => p.plotted);
  const labels = new Map(plotted.map((p) => [p.id, p.label]));
  const series = plotted.map((p) => p.label);
  const colors = PALETTE.slice(0, series.length);
  const withData = (metric: Metric, spec: Spec): Spec => ({ ...spec, data: { values: metricRows(input.results, labels, metric) } });
  // a policy that loses the plot's scale (ratios of 10+ on a real model) would flatten the others: log axis then
  const pplLog = input.results.some((r) => labels.has(r.policy) && r.pplRatio.mean > 3);
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: `What compression costs: ${modelLabel(input)}, ${input.meta.prompts.n} ${input.meta.prompts.source === 'code' ? 'source-code prompts' : 'prompts'} of ${input.meta.prompts.minL}–${input.meta.prompts.maxL} tokens, ${input.meta.steps} teacher-forced tokens`,
      subtitle: 'mean over prompts; bands: 95 % bootstrap interval of the mean',
      fontSize: 14,
    },
    config: { font: FONT, view: { stroke: null } },
    hconcat: [
      withData('top1', panel('top-1 agreement with full attention', 'top-1 agreement [%]', { zero: false }, series, colors)),
      withData('kl', panel('KL(full ‖ compressed)', 'mean KL [nats] (log scale)', { type: 'log' }, series, colors)),
      withData('pplRatio', pplLog ? panel('perplexity ratio (compressed / full)', 'perplexity ratio (log scale)', { type: 'log', domainMin: 0.9 }, series, colors) : panel('perplexity ratio (compressed / full)', 'perplexity ratio', { zero: false }, series, colors)),
    ],
    resolve: { scale: { color: 'shared' } },
  };
}

/** Every SnapKV configuration: top-1 and KL vs budget, one column per window. */
export function gridSpec(input: PlotInput): Spec {
  const snap = input.policies.filter((p) => p.family === 'snapkv');
  const values = (metric: Metric) =>
    input.results
      .filter((r) => snap.some((p) => p.id === r.policy))
      .map((r) => {
        const p = snap.find((q) => q.id === r.policy)!;
        const v = metric === 'top1' ? 100 * r.top1.mean : Math.max(1e-5, r.kl.mean);
        return { window: `w = ${p.params.window}`, kernel: `kernel ${p.params.kernel}`, pooling: String(p.params.pooling), budget: 100 * r.fraction, value: v };
      });
  const facet = (metric: Metric, yTitle: string, yScale: Record<string, unknown>): Spec => ({
    data: { values: values(metric) },
    facet: { column: { field: 'window', type: 'nominal', title: null, sort: ['w = 8', 'w = 16', 'w = 32'] } },
    spec: {
      width: 220,
      height: 180,
      mark: { type: 'line', point: true },
      encoding: {
        x: xBudget,
        y: { field: 'value', type: 'quantitative', title: yTitle, scale: yScale, axis: yScale.type === 'log' ? { values: [1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1], format: '~g' } : {} },
        color: { field: 'kernel', type: 'nominal', title: 'pooling kernel', scale: { range: ['#1b9e77', '#d95f02', '#7570b3'] }, legend: { symbolType: 'stroke', symbolStrokeWidth: 3 } },
        strokeDash: { field: 'pooling', type: 'nominal', title: 'pooling', legend: { symbolType: 'stroke', symbolStrokeWidth: 2, symbolStrokeColor: '#333' } },
      },
    },
  });
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `SnapKV grid on ${modelLabel(input)}: observation window × pooling × kernel (mean over prompts)`, fontSize: 14 },
    config: { font: FONT, view: { stroke: '#ddd' } },
    vconcat: [facet('top1', 'top-1 agreement [%]', { zero: false }), facet('kl', 'mean KL [nats] (log scale)', { type: 'log' })],
  };
}

/** Probes: retrieval recall vs budget; follow-up re-snap vs continue. */
export function probesSpec(input: PlotInput): Spec | null {
  const parts: Spec[] = [];
  const r = input.retrieval;
  if (r && r.items > 0) {
    const plotted = input.policies.filter((p) => p.plotted && r.byPolicy.some((b) => b.policy === p.id));
    const series = plotted.map((p) => p.label);
    const values = r.byPolicy
      .filter((b) => plotted.some((p) => p.id === b.policy))
      .map((b) => ({ series: plotted.find((p) => p.id === b.policy)!.label, budget: 100 * b.fraction, mean: 100 * b.recall.rate, low: 100 * b.recall.low, high: 100 * b.recall.high }));
    parts.push({ ...panel(`retrieval: name recall (${r.items} items; full attention ${(100 * r.fullRecall.rate).toFixed(0)} %)`, 'recall [%] (band: 95 % Wilson)', { domain: [0, 100] }, series, PALETTE.slice(0, series.length), 1), data: { values } });
  }
  const f = input.followUp;
  if (f && f.items > 0) {
    const series = ['continue on the cache snapped for Q1', 're-snap from the full prefix for Q2'];
    const pick = (metric: 'kl' | 'top1') =>
      f.byFraction.flatMap((b) =>
        (['continue', 'resnap'] as const).map((mode, i) => {
          const s = b[mode][metric];
          const k = metric === 'top1' ? 100 : 1;
          return { series: series[i], budget: 100 * b.fraction, mean: k * s.mean, low: k * s.ciLow, high: k * s.ciHigh };
        }),
      );
    parts.push({ ...panel(`follow-up: second answer, KL (${f.items} threads)`, 'mean KL [nats] (log scale)', { type: 'log' }, series, ['#e6550d', '#1f4e99'], 1), data: { values: pick('kl') } });
    parts.push({ ...panel('follow-up: second answer, top-1 agreement', 'top-1 agreement [%]', { zero: false }, series, ['#e6550d', '#1f4e99'], 1), data: { values: pick('top1') } });
  }
  if (parts.length === 0) return null;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Probes: retrieval of a name introduced once; follow-up questions', subtitle: 'follow-up: RepoSnap default SnapKV (w = 32, max, kernel 7) on the same number of cells in both modes; bands: 95 % intervals', fontSize: 14, anchor: 'start', offset: 16 },
    config: { font: FONT, view: { stroke: null } },
    hconcat: parts,
    resolve: { scale: { color: 'independent' } },
  };
}

/** Renders a Vega-Lite spec to SVG text and PNG bytes (2× zoom, white background). */
export async function render(spec: Spec): Promise<{ svg: string; png: Buffer }> {
  const vl = await import('vega-lite');
  const vega = await import('vega');
  const { spec: vgSpec } = vl.compile(spec as unknown as Parameters<typeof vl.compile>[0]);
  const view = new vega.View(vega.parse(vgSpec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  const { Resvg } = await import('@resvg/resvg-js');
  const png = new Resvg(svg, { background: 'white', fitTo: { mode: 'zoom', value: 2 }, font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' } }).render().asPng();
  return { svg, png };
}

/**
 * Writes every plot of a result file into `dir` as `<prefix>.{svg,png}`, `<prefix>-snapkv-grid.*`
 * (when the run had more than the two plotted SnapKV settings) and `<prefix>-probes.*` (when it
 * ran a probe); returns the files written. The prefix defaults to `fidelity` (the stories260K run's names).
 */
export async function writePlots(input: PlotInput, dir: string, prefix = 'fidelity'): Promise<string[]> {
  const written: string[] = [];
  const grid = input.policies.filter((p) => p.family === 'snapkv').length > 2;
  const specs: [string, Spec | null][] = [
    [prefix, mainSpec(input)],
    [`${prefix}-snapkv-grid`, grid ? gridSpec(input) : null],
    [`${prefix}-probes`, probesSpec(input)],
  ];
  for (const [name, spec] of specs) {
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
  const { values } = parseArgs({ options: { in: { type: 'string' }, out: { type: 'string' } } });
  const root = path.resolve(__dirname, '..', '..');
  const file = values.in ?? path.join(root, 'bench', 'results', 'fidelity.json');
  const input = JSON.parse(fs.readFileSync(file, 'utf8')) as PlotInput;
  // plots are named after the result file: fidelity.json → fidelity.png, fidelity-coder.json → fidelity-coder.png
  for (const f of await writePlots(input, values.out ?? path.dirname(file), path.basename(file, '.json'))) console.log(`wrote ${path.relative(process.cwd(), f)}`);
}

if (require.main === module) void main();
