/**
 * bench/followup: time to first token of the question flows the cache store enables, in one
 * run, on a synthetic model and a packed repository of about 16K tokens:
 *   cold (empty cache) · follow-up with resnap · follow-up with continue ·
 *   after editing the last file in pack order · after editing the first one.
 *
 *   node --import tsx bench/followup.ts [--tokens 16384] [--model file.gguf]
 *
 * Default model: a synthetic llama (8 layers, n_embd 1024, 16/4 heads, head size 64, F16,
 * the tiny model's 512-token tokenizer so that text can be packed), generated under
 * bench/.models. The repository is a copy of this project's src/ in a temporary folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CacheStore } from '../src/cache/store';
import { loadModel } from '../src/engine/model';
import { askRepository, type AskStats } from '../src/pipeline/ask';
import { textSyntheticModel } from './models';

async function main() {
  const { values } = parseArgs({ options: { tokens: { type: 'string' }, model: { type: 'string' }, 'max-tokens': { type: 'string' } } });
  const target = Number(values.tokens ?? 16384);
  const file = values.model ?? textSyntheticModel();
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
        snap: { enabled: true, window: 32, budget: 1024, kernel: 7, pooling: 'max' },
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
  rows.push(['cold (empty cache)', await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't1')]);
  rows.push(['follow-up, resnap', await ask('And how are the window queries captured?', 't1')]);
  rows.push(['follow-up, continue', await ask('Which file defines the budget default?', 't1', 'continue')]);
  const edit = (rel: string) => {
    const f = path.join(repo, rel);
    fs.appendFileSync(f, '\n// edited\n');
  };
  edit(packed[packed.length - 1]!);
  rows.push([`edit last file (${packed[packed.length - 1]})`, await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't2')]);
  edit(packed[0]!);
  rows.push([`edit first file (${packed[0]})`, await ask('Where does the engine compact the KV cache after SnapKV scoring?', 't3')]);

  const cold = rows[0]![1].ttftMs;
  console.log(`model ${model.info.description} (${path.basename(file)}), prompt ≈ ${rows[0]![1].L} tokens, ${packed.length} files, B = 1024`);
  console.log('| question | cache | reused tokens | prefilled | restore ms | prefill ms | snap ms | TTFT ms | vs cold |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const [name, s] of rows) {
    console.log(`| ${name} | ${s.cache} | ${s.reusedTokens} | ${s.prefilledTokens} | ${s.restoreMs.toFixed(0)} | ${s.prefillMs.toFixed(0)} | ${s.snapMs.toFixed(0)} | ${s.ttftMs.toFixed(0)} | ${(cold / s.ttftMs).toFixed(1)}× |`);
  }
  model.dispose();
  fs.rmSync(tmp, { recursive: true, force: true });
}

void main();
