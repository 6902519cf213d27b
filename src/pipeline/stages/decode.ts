/**
 * Stage 4, decode: samples the answer (greedy unless the request sets a temperature), streaming
 * each text piece as a `token` event.
 */
import { AbortError } from '../../engine/errors';
import type { GenerateSummary } from '../../engine/session';
import type { Question } from './question';

/** The answer {@link decode} produced. */
export interface Decoded {
  text: string;
  /** The session's position where the answer starts (its tokens are `session.tokens.slice(answerStart)`). */
  answerStart: number;
  /** Time to first token from the start of the question [ms]; 0 without any text. */
  ttftMs: number;
  decodeMs: number;
  summary: GenerateSummary;
}

/**
 * Decodes up to `maxTokens` tokens.
 * @throws AbortError when the request is cancelled while decoding.
 */
export async function decode(q: Question): Promise<Decoded> {
  const { session, req } = q;
  let ttftMs = 0;
  let text = '';
  const answerStart = session.position;
  const td = performance.now();
  const gen = session.generate({
    maxTokens: q.maxTokens,
    sampling: { temperature: req.temperature ?? 0, topP: req.topP, seed: req.seed },
    signal: req.signal,
  });
  let summary: GenerateSummary;
  for (;;) {
    const r = await gen.next();
    if (r.done) {
      summary = r.value;
      break;
    }
    if (!text) ttftMs = performance.now() - q.t0;
    text += r.value;
    q.onEvent({ kind: 'token', text: r.value });
  }
  const decodeMs = performance.now() - td;
  if (summary.reason === 'aborted') throw new AbortError();
  return { text, answerStart, ttftMs, decodeMs, summary };
}
