/**
 * A resumable run of the fidelity benchmark: one JSON line per measured prompt, appended as each
 * prompt finishes, after a header line with the run's settings. A run with `--resume` reads the
 * prompts already measured under the same settings and measures only the others; a run without it
 * starts the file again. Runs on the real models take hours on two cores: a stopped run loses at
 * most the prompt it was measuring.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The first line of a checkpoint file. */
export interface CheckpointHeader {
  kind: 'fidelity-checkpoint';
  /** Everything that changes a measurement (model digest, prompts' digests, budgets, policies, …). */
  config: unknown;
}

/** Key of a config for comparison: JSON with object keys sorted. */
function stableJson(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : x));
}

/** An open checkpoint: the measurements read back, and appending new ones. */
export class Checkpoint<T extends { promptId: number }> {
  private constructor(
    /** The checkpoint file. */
    readonly file: string,
    /** Measurements already in the file, by prompt id (empty unless resumed). */
    readonly done: ReadonlyMap<number, T>,
  ) {}

  /**
   * Opens `file` for a run with `config`. With `resume`, reads the measurements already there
   * (a last line cut off by a stopped run is dropped; its prompt is measured again); without it,
   * or when the file does not exist, writes a new file holding only the header.
   * @throws Error when resuming a file made with another config, or one that is not a checkpoint
   *   (the message names the file and says to remove it or run without --resume).
   */
  static open<T extends { promptId: number }>(file: string, config: unknown, resume: boolean): Checkpoint<T> {
    const header: CheckpointHeader = { kind: 'fidelity-checkpoint', config };
    if (resume && fs.existsSync(file)) {
      const lines = fs.readFileSync(file, 'utf8').split('\n');
      const complete = lines.slice(0, -1); // every whole line ends with \n; the rest was cut off
      let head: CheckpointHeader | null = null;
      try {
        head = JSON.parse(complete[0] ?? '') as CheckpointHeader;
      } catch {
        head = null;
      }
      if (!head || head.kind !== 'fidelity-checkpoint') throw new Error(`${file} is not a fidelity checkpoint: remove it or run without --resume`);
      if (stableJson(head.config) !== stableJson(config)) throw new Error(`${file} was made with other settings (model, prompts, budgets, steps or policies): remove it or run without --resume`);
      const done = new Map<number, T>();
      for (const line of complete.slice(1)) {
        if (line.trim() === '') continue;
        const m = JSON.parse(line) as T;
        done.set(m.promptId, m);
      }
      // drop a cut-off last line so that the next append starts on a line of its own
      fs.writeFileSync(file, complete.map((l) => l + '\n').join(''));
      return new Checkpoint<T>(file, done);
    }
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(header) + '\n');
    return new Checkpoint<T>(file, new Map());
  }

  /** Appends one measurement (one line, written before the call returns). */
  append(m: T): void {
    fs.appendFileSync(this.file, JSON.stringify(m) + '\n');
  }
}

/**
 * The order to measure n prompts in: indices sorted by their bit-reversed value (van der Corput,
 * base 2), so that any first k of them spread over the whole range of prompts (the prompts' lengths
 * rise with their index): n = 6 gives 0, 4, 2, 1, 5, 3. A run stopped early then holds short and
 * long prompts alike.
 */
export function measureOrder(n: number): number[] {
  let bits = 0;
  while (1 << bits < n) bits++;
  const reverse = (i: number) => {
    let r = 0;
    for (let b = 0; b < bits; b++) if (i & (1 << b)) r |= 1 << (bits - 1 - b);
    return r;
  };
  return Array.from({ length: n }, (_, i) => i).sort((a, b) => reverse(a) - reverse(b));
}
