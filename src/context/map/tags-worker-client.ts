/**
 * The tags parser on a worker thread (`node:worker_threads`): the packing thread posts each file's
 * text and grammar, the worker (tags-worker.ts) parses it with tree-sitter and posts its tags back.
 * Parsing a 1.7 MB file of 40K definitions took 2–4 s of one core, during which the packing thread
 * saw no signal (issue 29, item 7); on the worker it waits without blocking, and an abort
 * (`raceAbort` in ranked.ts) is seen at once. One worker per process, started on first use; it
 * keeps the process alive only while a parse is pending. A worker that dies (a grammar that
 * aborts) rejects what it was parsing, and the next parse starts a new one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { GrammarId } from './languages';
import type { FileTags, TagsParser } from './tags';

/** What the packing thread posts: one file to parse. */
export interface TagsRequest {
  id: number;
  text: string;
  grammar: GrammarId;
}

/** What the worker posts back: the file's tags, or the parse's error message. */
export type TagsResponse = { id: number; tags: FileTags } | { id: number; error: string };

/**
 * The worker's script: `tags-worker.js` beside this module in the bundle (`dist/`, build.mjs), or,
 * running from the sources, `tags-worker-tsx.cjs` (which loads tsx, then tags-worker.ts); undefined
 * when neither exists.
 */
export function tagsWorkerScript(): string | undefined {
  for (const name of ['tags-worker.js', 'tags-worker-tsx.cjs']) {
    const file = path.join(__dirname, name);
    if (fs.existsSync(file)) return file;
  }
  return undefined;
}

/**
 * A {@link TagsParser} whose parses run on a worker thread started from `script`. Each call posts
 * one request; replies are matched by id. Rejects with the worker's error for a failed parse, and
 * with `the tree-sitter worker stopped (…)` for every pending parse when the worker dies.
 */
export function createWorkerTagsParser(script: string): TagsParser {
  let worker: Worker | undefined;
  let nextId = 0;
  const pending = new Map<number, { resolve: (tags: FileTags) => void; reject: (e: Error) => void; waited: boolean; unlisten: () => void }>();
  // parses a caller still waits for: the worker keeps the process alive only while there is one,
  // so that a command cancelled in the middle of a long parse exits at once
  let waiting = 0;
  const keepAlive = (): void => {
    if (worker === undefined) return;
    if (waiting > 0) worker.ref();
    else worker.unref();
  };
  const settle = (id: number): { resolve: (tags: FileTags) => void; reject: (e: Error) => void } | undefined => {
    const p = pending.get(id);
    if (p === undefined) return undefined;
    pending.delete(id);
    p.unlisten();
    if (p.waited) waiting--;
    keepAlive();
    return p;
  };

  const start = (): Worker => {
    const w = new Worker(script);
    w.unref();
    const fail = (why: string): void => {
      if (worker !== w) return;
      worker = undefined;
      const e = new Error(`the tree-sitter worker stopped (${why})`);
      for (const p of pending.values()) {
        p.unlisten();
        p.reject(e);
      }
      pending.clear();
      waiting = 0;
    };
    w.on('message', (m: TagsResponse) => {
      const p = settle(m.id);
      if (p === undefined) return;
      if ('error' in m) p.reject(new Error(m.error));
      else p.resolve(m.tags);
    });
    w.on('error', (e) => fail(e.message));
    w.on('exit', (code) => fail(`exit code ${code}`));
    return w;
  };

  return {
    parse(text, grammar, options = {}) {
      const { signal } = options;
      const w = (worker ??= start());
      const id = nextId++;
      return new Promise<FileTags>((resolve, reject) => {
        const waited = signal?.aborted !== true;
        // the listener goes when the parse settles: one signal serves every file of a pack
        const onAbort = (): void => {
          const p = pending.get(id);
          if (p === undefined || !p.waited) return;
          p.waited = false;
          waiting--;
          keepAlive();
        };
        const unlisten = (): void => signal?.removeEventListener('abort', onAbort);
        pending.set(id, { resolve, reject, waited, unlisten });
        if (waited) {
          waiting++;
          signal?.addEventListener('abort', onAbort, { once: true });
        }
        keepAlive();
        w.postMessage({ id, text, grammar } satisfies TagsRequest);
      });
    },
  };
}
