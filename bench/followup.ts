/**
 * bench/followup: time to first token of the question flows the cache store enables, in one
 * run, on a synthetic or a real model and a packed repository of about 16K tokens:
 *   cold (empty cache) · follow-up with resnap · follow-up with continue ·
 *   after editing the last file in pack order · after editing the first one.
 *
 *   node --import tsx bench/followup.ts [--tokens 16384] [--model smollm2|coder|file.gguf]
 *        [--max-tokens 8] [--out file.md]
 *
 * Default model: a synthetic llama (8 layers, n_embd 1024, 16/4 heads, head size 64, F16,
 * the tiny model's 512-token tokenizer so that text can be packed), generated under
 * bench/.models; `--model` takes a real model of `npm run models` by name (bench/models.ts) or a
 * GGUF path. The repository is a copy of this project's src/ in a temporary folder, packed into a
 * context of --tokens + 512. Prints the table and writes it (Markdown) and the full stats (JSON
 * next to it) to bench/results/followup-<date>[-<model>].md unless --out says otherwise.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CacheStore } from '../src/cache/store';
import { loadModel } from '../src/engine/model';
import { SNAP_DEFAULTS } from '../src/config/snap-options';
import { askRepository, type AskStats } from '../src/pipeline/ask';
import { resolveBenchModel, textSyntheticModel } from './models';

async function main() {
  const { values } = parseArgs({ options: { tokens: { type: 'string' }, model: { type: 'string' }, 'max-tokens': { type: 'string' }, out: { type: 'string' } } });
  const target = Number(values.tokens ?? 16384);
  if (!(target >= 1024)) throw new Error('--tokens: at least 1024');
  const bench = values.model ? resolveBenchModel(values.model) : null;
  const file = bench?.file ?? textSyntheticModel();
  const out = path.resolve(values.out ?? path.join(__dirname, 'results', `followup-${new Date().toISOString().slice(0, 10)}${bench ? `-${bench.short}` : ''}.md`));
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'reposnap-followup-'));
  const repo = path.join(tmp, 'repo');
  fs.cpSync(path.join(__dirname, '..', 'src'), repo, { recursive: true });
  const model = await loadModel(file);
  const store = CacheStore.open(path.join(tmp, 'cache', 'ws'), { limits: { maxRamBytes: 0 } }); // every restore reads the disk
  const maxTokens = Number(values['max-tokens'] ?? 8);
  let packed: string[] = [];
  const ask = async (question: string, threadId: string, followUp: 'resnap' | 'continue' = 'resnap'): Promise<AskStats> => {
    const stats = await askRepository(
      {
        repo,
        question,
        model,
        store,
        threadId,
        followUp,
        contextSize: target + 512,
        maxTokens,
        // packed for these short answers, as before the answer room existed (docs/cache.md's tables)
        answerRoom: maxTokens,
        snap: SNAP_DEFAULTS,
        session: { flashAttention: 'auto' },
      },
      (e) => {
        if (e.kind === 'packed') packed = e.pack.files.map((f) => f.path);
      },
    );
    await store.flush();
    return stats;
  };

  const rows: [string, AskStats][] = [];
  const log = (name: string) => console.error(`[followup] ${name}: TTFT ${rows[rows.length - 1]![1].ttftMs.toFixed(0)} ms`);
  rows.push(['cold (empty cache)', await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't1')]);
  log('cold');
  rows.push(['follow-up, resnap', await ask('And how are the window queries captured?', 't1')]);
  log('resnap');
  rows.push(['follow-up, continue', await ask('Which file defines the budget default?', 't1', 'continue')]);
  log('continue');
  const edit = (rel: string) => {
    const f = path.join(repo, rel);
    fs.appendFileSync(f, '\n// edited\n');
  };
  edit(packed[packed.length - 1]!);
  rows.push([`edit last file (${packed[packed.length - 1]})`, await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't2')]);
  log('edit last');
  edit(packed[0]!);
  rows.push([`edit first file (${packed[0]})`, await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't3')]);
  log('edit first');

  const cold = rows[0]![1].ttftMs;
  const lines = [
    `model ${bench?.label ?? model.info.description} (${path.basename(file)}), prompt ≈ ${rows[0]![1].L} tokens, ${packed.length} files, B = ${SNAP_DEFAULTS.budget}, decode ${rows[0]![1].decodeTokS.toFixed(1)} tok/s at B; ${new Date().toISOString()}`,
    '| question | cache | reused tokens | prefilled | restore ms | prefill ms | snap ms | TTFT ms | vs cold |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(([name, s]) => `| ${name} | ${s.cache} | ${s.reusedTokens} | ${s.prefilledTokens} | ${s.restoreMs.toFixed(0)} | ${s.prefillMs.toFixed(0)} | ${s.snapMs.toFixed(0)} | ${s.ttftMs.toFixed(0)} | ${(cold / s.ttftMs).toFixed(1)}× |`),
  ];
  console.log(lines.join('\n'));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, lines.join('\n') + '\n');
  fs.writeFileSync(out.replace(/\.md$/, '') + '.json', JSON.stringify({ model: path.basename(file), label: bench?.label ?? model.info.description, tokens: target, files: packed.length, rows: rows.map(([name, s]) => ({ name, ...s })) }, null, 1) + '\n');
  console.error(`wrote ${path.relative(process.cwd(), out)}`);
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
}

void main();
