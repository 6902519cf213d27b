/**
 * Plain chat completion on the engine, for callers whose prompt is not RepoSnap's layout (the
 * Language Model Chat Provider, src/lm/provider.ts): the messages rendered with the model's chat
 * template (llama.cpp's `llama_chat_apply_template`; a plain "role: text" transcript when the model
 * has none llama.cpp knows), prefilled with full attention and decoded. No repository is packed,
 * no SnapKV runs and nothing is cached: SnapKV needs RepoSnap's layout (a repository prefix and a
 * question in the observation window), which an arbitrary conversation does not have.
 */
import { AbortError, ContextOverflowError } from '../engine/errors';
import type { ChatMessage, EngineModel } from '../engine/model';
import { createSession, type SessionOptions } from '../engine/session';
import { defaultContextSize } from './context-size';
import type { AskEvent } from './request';

/** One completion request. */
export interface CompleteRequest {
  model: EngineModel;
  messages: ChatMessage[];
  /** Context size [tokens]; default the model's training context, at most 8192 ({@link defaultContextSize}). */
  contextSize?: number;
  /** The longest answer [tokens]. */
  maxTokens: number;
  session?: Pick<SessionOptions, 'flashAttention' | 'kvCacheType'>;
  signal?: AbortSignal;
}

/** What {@link complete} reports as it runs: the pipeline's own `prefill` and `token` events (src/pipeline/request.ts `AskEvent`). */
export type CompleteEvent = Extract<AskEvent, { kind: 'prefill' } | { kind: 'token' }>;

/** What a finished completion measured. */
export interface CompleteStats {
  /** Tokens of the rendered prompt (BOS included when the model adds one). */
  promptTokens: number;
  /** Tokens decoded. */
  decodeTokens: number;
  prefillMs: number;
  decodeMs: number;
}

/**
 * The messages as the model reads them: its chat template with the assistant's turn opened, or
 * (no template llama.cpp knows) one "role: text" paragraph per message ending in "assistant:".
 */
export function renderMessages(model: EngineModel, messages: ChatMessage[]): { text: string; templated: boolean } {
  const rendered = model.applyChatTemplate(messages, true);
  if (rendered !== null) return { text: rendered, templated: true };
  return { text: `${messages.map((m) => `${m.role}: ${m.content}`).join('\n\n')}\n\nassistant:`, templated: false };
}

/**
 * Tokens of `text` with the model's own tokenizer (`llama_tokenize`, no BOS, special-token text
 * kept as text): what `provideTokenCount` reports.
 */
export function countTokens(model: EngineModel, text: string): number {
  return model.tokenize(text).length;
}

/**
 * Runs one completion: render, tokenize (special tokens parsed, BOS added when the model wants
 * it), prefill, decode greedily up to `maxTokens`, streaming each text piece.
 * @throws ContextOverflowError when the prompt and `maxTokens` do not fit the context; AbortError
 *   when `signal` aborts (checked inside each ubatch of the prefill and between decoded tokens).
 */
export async function complete(req: CompleteRequest, onEvent: (e: CompleteEvent) => void): Promise<CompleteStats> {
  const contextSize = req.contextSize || defaultContextSize(req.model);
  const { text, templated } = renderMessages(req.model, req.messages);
  const tokens = req.model.tokenize(text, { addSpecial: true, parseSpecial: templated });
  if (tokens.length + req.maxTokens > contextSize) {
    throw new ContextOverflowError(
      `The conversation is ${tokens.length.toLocaleString('en-US')} tokens; with an answer of up to ${req.maxTokens.toLocaleString('en-US')} tokens it does not fit the context of ${contextSize.toLocaleString('en-US')} tokens: shorten it or raise the reposnap.contextSize setting.`,
    );
  }
  const session = createSession(req.model, { ...req.session, contextSize, snapWindow: 0, fingerprintMemo: null });
  try {
    const t0 = performance.now();
    await session.prefill(tokens, { signal: req.signal, onProgress: (p) => onEvent({ kind: 'prefill', done: p.done, total: p.total, tokensPerSecond: p.tokensPerSecond }) });
    const prefillMs = performance.now() - t0;
    const t1 = performance.now();
    const gen = session.generate({ maxTokens: req.maxTokens, sampling: { temperature: 0 }, signal: req.signal });
    let decodeTokens = 0;
    for (;;) {
      const r = await gen.next();
      if (r.done) {
        decodeTokens = r.value.tokens;
        if (r.value.reason === 'aborted') throw new AbortError();
        break;
      }
      onEvent({ kind: 'token', text: r.value });
    }
    return { promptTokens: tokens.length, decodeTokens, prefillMs, decodeMs: performance.now() - t1 };
  } finally {
    session.dispose();
  }
}
