/**
 * The cache stats panel's page (bundled to dist/webview/stats.js): a summary, three charts
 * (Chart.js, bundled) and the table of recorded questions. Chart and table colours are the
 * stats palette (src/stats/palette.ts): opaque, passing WCAG AA against the editor background of
 * the current theme; recomputed when the theme changes.
 */
import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip } from 'chart.js';
import { statsPalette, themeKindOf, type StatsPalette } from '../../src/stats/palette';
import { isCold, type QuestionRecord } from '../../src/stats/records';
import type { FromStatsWebview, ToStatsWebview } from '../../src/stats/protocol';

Chart.register(BarController, BarElement, CategoryScale, Legend, LinearScale, LineController, LineElement, PointElement, Tooltip);

const vscode = acquireVsCodeApi<FromStatsWebview, unknown>();
const app = document.getElementById('app')!;
app.innerHTML = `
<header><h1>RepoSnap cache stats</h1><button id="clear" class="secondary">Clear Cache</button></header>
<section id="summary" class="summary"></section>
<section class="charts">
  <figure><figcaption>KV cache per question (MiB): before and after SnapKV</figcaption><div class="chart"><canvas id="kv"></canvas></div></figure>
  <figure><figcaption>Compression ratio B / L</figcaption><div class="chart"><canvas id="ratio"></canvas></div></figure>
  <figure><figcaption>Time to first token (s) by cache outcome</figcaption><div class="chart"><canvas id="ttft"></canvas></div></figure>
</section>
<section><table id="table"><thead><tr>
  <th>#</th><th>when</th><th>source</th><th>question</th><th>model</th><th>L</th><th>B</th><th>B/L</th><th>KV before</th><th>KV after</th>
  <th>prefill</th><th>snap</th><th>TTFT</th><th>decode</th><th>cache</th>
</tr></thead><tbody></tbody></table></section>
<p id="engine" class="muted"></p>`;

document.getElementById('clear')!.addEventListener('click', () => vscode.postMessage({ type: 'clear' }));

const css = getComputedStyle(document.body);
const color = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
let palette: StatsPalette;

/** Reads the theme (body class and editor background) and applies the palette to Chart.js and the table. */
function applyTheme(): void {
  palette = statsPalette(themeKindOf(document.body.classList), color('--vscode-editor-background', '')).palette;
  document.body.style.setProperty('--reposnap-hit', palette.hitText);
  document.body.style.setProperty('--reposnap-partial', palette.partialText);
  document.body.style.setProperty('--reposnap-miss', palette.missText);
  Chart.defaults.color = color('--vscode-foreground', '#ccc');
  Chart.defaults.borderColor = color('--vscode-widget-border', 'rgba(128,128,128,0.3)');
}
applyTheme();
Chart.defaults.font.family = css.getPropertyValue('--vscode-font-family') || 'sans-serif';
Chart.defaults.animation = false;
let lastRecords: QuestionRecord[] = [];
// VS Code swaps the body's theme class (and the variables) on a theme change
new MutationObserver(() => {
  applyTheme();
  draw(lastRecords);
}).observe(document.body, { attributes: true, attributeFilter: ['class'] });

const MiB = 2 ** 20;
const charts: Chart[] = [];

function draw(records: QuestionRecord[]): void {
  lastRecords = records;
  for (const c of charts.splice(0)) c.destroy();
  const labels = records.map((_, i) => `#${i + 1}`);
  const opts = { responsive: true, maintainAspectRatio: false, plugins: { legend: { position: 'bottom' as const } } };
  charts.push(
    new Chart(document.getElementById('kv') as HTMLCanvasElement, {
      type: 'bar',
      data: {
        labels,
        datasets: [
          { label: 'before (L cells)', data: records.map((r) => r.kvBytesBefore / MiB), backgroundColor: palette.kvBefore },
          { label: 'after (B cells)', data: records.map((r) => r.kvBytesAfter / MiB), backgroundColor: palette.kvAfter },
        ],
      },
      options: opts,
    }),
    new Chart(document.getElementById('ratio') as HTMLCanvasElement, {
      type: 'line',
      data: { labels, datasets: [{ label: 'B / L', data: records.map((r) => r.ratio), borderColor: palette.ratio, backgroundColor: palette.ratio }] },
      options: { ...opts, scales: { y: { min: 0, max: 1 } } },
    }),
    new Chart(document.getElementById('ttft') as HTMLCanvasElement, {
      type: 'bar',
      data: {
        labels,
        datasets: [
          { label: 'cold (miss, off)', data: records.map((r) => (isCold(r.cache) ? r.ttftMs / 1000 : null)), backgroundColor: palette.cold },
          { label: 'warm (hit, partial, continue)', data: records.map((r) => (isCold(r.cache) ? null : r.ttftMs / 1000)), backgroundColor: palette.warm },
        ],
      },
      options: { ...opts, scales: { x: { stacked: true }, y: { stacked: true } } },
    }),
  );
}

const fmtMs = (ms: number | null) => (ms === null ? '–' : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`);
const fmtMiB = (b: number) => `${(b / MiB).toFixed(2)} MiB`;

function cell(text: string, cls?: string): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

window.addEventListener('message', (e: MessageEvent<ToStatsWebview>) => {
  const { records, summary, engine } = e.data;
  const s = document.getElementById('summary')!;
  s.replaceChildren(
    ...[
      ['questions', String(summary.questions)],
      ['cache hit / partial / continue / miss', `${summary.outcomes.hit} / ${summary.outcomes.partial} / ${summary.outcomes.continue} / ${summary.outcomes.miss + summary.outcomes.off}`],
      ['mean B / L', summary.meanRatio === null ? '–' : summary.meanRatio.toFixed(2)],
      ['mean TTFT cold', fmtMs(summary.meanTtftMs.cold)],
      ['mean TTFT warm', fmtMs(summary.meanTtftMs.warm)],
      ['KV saved by SnapKV', fmtMiB(summary.kvBytesSaved)],
    ].map(([k, v]) => {
      const d = document.createElement('div');
      d.className = 'stat';
      const b = document.createElement('b');
      b.textContent = v!;
      const span = document.createElement('span');
      span.textContent = k!;
      d.append(b, span);
      return d;
    }),
  );
  const tbody = document.querySelector('#table tbody')!;
  tbody.replaceChildren(
    ...records.map((r, i) => {
      const tr = document.createElement('tr');
      tr.append(
        cell(String(i + 1)),
        cell(new Date(r.at).toLocaleTimeString()),
        cell(r.source),
        cell(r.question, 'question'),
        cell(r.model),
        cell(r.L.toLocaleString('en-US'), 'num'),
        // an interleaved sliding-window model: B is the global layers'; the sliding layers' cells beside it
        cell(r.swaWindow !== undefined ? `${r.B.toLocaleString('en-US')} + ${(r.swaCells ?? 0).toLocaleString('en-US')} sliding` : r.B.toLocaleString('en-US'), 'num'),
        cell(r.ratio.toFixed(2), 'num'),
        cell(fmtMiB(r.kvBytesBefore), 'num'),
        cell(fmtMiB(r.kvBytesAfter), 'num'),
        cell(fmtMs(r.prefillMs), 'num'),
        cell(fmtMs(r.snapMs), 'num'),
        cell(fmtMs(r.ttftMs), 'num'),
        cell(fmtMs(r.decodeMs), 'num'),
        cell(r.cache, `cache-${r.cache}`),
      );
      return tr;
    }),
  );
  if (records.length === 0) {
    const tr = document.createElement('tr');
    const td = cell('No questions yet: ask one in the RepoSnap chat.', 'muted');
    td.colSpan = 15;
    tr.append(td);
    tbody.append(tr);
  }
  document.getElementById('engine')!.textContent = engine;
  draw(records);
});

vscode.postMessage({ type: 'ready' });
