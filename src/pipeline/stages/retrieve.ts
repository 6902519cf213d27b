/**
 * Stage 1b, retrieve: complete the question part of a question that is not continuing a thread
 * with its retrieval section (issue 15, ranked packing: the BM25-best chunks of the files the pack
 * left out, placed after the repository prefix and before the thread) and check the answer's room
 * against the whole prompt. restore.ts runs it once it knows the thread's cache is not continued,
 * before it looks up the cached prefix (whose SnapKV window depends on the question part's length).
 * A continued thread's prompt is its cache and the new turn only, never this question's retrieval
 * section: it skips this stage (no BM25 work, no room counted for a section the prompt does not
 * hold, no secret reported from a file the prompt never reads; prefill.ts checks its room).
 */
import { withRetrievalSkips } from '../../context/pack';
import { retrieveChunks } from '../../context/retrieve/retrieve';
import { concatTokens } from '../../prompt/prompt';
import { checkAnswerRoom } from '../context-size';
import type { Question } from './question';

/**
 * Puts this question's retrieval section at the start of `q.suffix` (ranked packing with a
 * retrieval room and files to retrieve from; `q.retrieval`, `q.retrievalText` describe it), adds
 * the files retrieval found holding a secret to `q.pack`'s skipped list, checks that `maxTokens`
 * fits what the prompt leaves free, and adds the time taken to `q.packMs`. Does nothing for a
 * question that only prepares the prefix (`prepareOnly`: no question part).
 * @throws AnswerRoomError (before anything is prefilled) when the prompt leaves fewer than
 *   `maxTokens` tokens of the context; AbortError when `req.signal` aborts the retrieval.
 */
export async function retrieve(q: Question): Promise<void> {
  const { req } = q;
  if (req.prepareOnly) return;
  const t0 = performance.now();
  if (q.pack.packing === 'ranked' && q.retrievalRoom > 0 && q.pack.retrievable.length > 0) {
    const countTokens = (t: string) => req.model.tokenize(t).length;
    const retrieved = await retrieveChunks(q.pack.retrievable, req.question, { budget: q.retrievalRoom, countTokens, secrets: q.pack.secrets, signal: req.signal });
    // a file retrieval found holding a secret is reported as the packer reports its own
    q.pack = withRetrievalSkips(q.pack, retrieved.skipped);
    const tokens = retrieved.text !== '' ? req.model.tokenize(retrieved.text) : new Int32Array(0);
    q.suffix = concatTokens([tokens, q.suffix]);
    q.retrieval = { tokens: tokens.length, files: retrieved.spans };
    q.retrievalText = retrieved.text;
  }
  // an answer longer than the answer room is served from what the prompt left free, or refused
  // here, before the prefill, with the number that fits (never cut short at the context's end)
  checkAnswerRoom(q.contextSize, q.prefix.length + q.suffix.length, q.maxTokens, q.answerRoom, q.names);
  q.packMs += performance.now() - t0;
}
