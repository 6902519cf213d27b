/**
 * The benchmarks' resumable result files: JSON Lines whose first line is `{ "config": … }` (the
 * run's settings) and every further line one record, appended as it finishes. A rerun with the
 * same config skips what is there; a line cut by a killed run is dropped (it runs again).
 * Used by bench/repoqa/run.ts and bench/repoqa/large/run.ts.
 */
import fs from 'node:fs';

/**
 * Reads the records of `file`, written with `config` (compared as JSON); [] when the file is
 * absent or empty. Unparsable record lines are skipped.
 * @throws Error when the file's first line names another config.
 */
export function readJsonlRecords<R>(file: string, config: unknown): R[] {
  if (!fs.existsSync(file)) return [];
  const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '');
  if (lines.length === 0) return [];
  const head = JSON.parse(lines[0]!) as { config?: unknown };
  if (JSON.stringify(head.config) !== JSON.stringify(config)) {
    throw new Error(`${file} was written with ${JSON.stringify(head.config)}, not ${JSON.stringify(config)}: delete it or pass another --jsonl`);
  }
  const out: R[] = [];
  for (const l of lines.slice(1)) {
    try {
      out.push(JSON.parse(l) as R);
    } catch {
      // a line cut by a killed run: that record runs again
    }
  }
  return out;
}

/** Starts `file` with its `{ config }` line when it is absent or empty (a resumed run appends to it). */
export function startJsonl(file: string, config: unknown): void {
  if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8').trim() === '') fs.writeFileSync(file, JSON.stringify({ config }) + '\n');
}
