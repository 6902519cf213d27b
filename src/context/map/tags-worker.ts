/**
 * The tree-sitter worker thread (tags-worker-client.ts starts it): parses each posted file with
 * the in-thread parser and posts back its tags or the error's message. Bundled as
 * `dist/tags-worker.js` (build.mjs).
 */
import { parentPort } from 'node:worker_threads';
import { createInThreadTagsParser } from './tags';
import type { TagsRequest, TagsResponse } from './tags-worker-client';

const parser = createInThreadTagsParser();

parentPort?.on('message', (m: TagsRequest) => {
  parser.parse(m.text, m.grammar).then(
    (tags) => parentPort!.postMessage({ id: m.id, tags } satisfies TagsResponse),
    (e: unknown) => parentPort!.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) } satisfies TagsResponse),
  );
});
