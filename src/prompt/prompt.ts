/**
 * The prompt: [head │ file sections … │ between │ question │ tail]. Head, between and tail
 * come from the model's chat template (llama.cpp's built-in templates) or from a plain-text
 * layout when the model has none. The question goes last so that the observation window
 * covers it. Template text is tokenized with special tokens parsed; repository text and the
 * question never are (a file that contains `<|im_start|>` stays text).
 */
import type { EngineModel } from '../engine/model';

/** Instructions given to the model before the repository. */
export const SYSTEM_PROMPT =
  'You are RepoSnap, an assistant that answers questions about a code repository. ' +
  'The repository follows, one file per section: the file path on its own line, then the file in a fenced block. ' +
  'Answer the question after the repository. Cite files as path:line where it helps.';

/**
 * Placeholders rendered through the template and then split on. Delimited by a private-use
 * character, not NUL: llama_chat_apply_template takes C strings, so a NUL ended each message at
 * its first placeholder, no placeholder came back, and every model fell back to the plain layout.
 */
const REPO = '\uE000REPOSNAP_REPOSITORY\uE000';
const QUESTION = '\uE000REPOSNAP_QUESTION\uE000';
const ANSWER = '\uE000REPOSNAP_ANSWER\uE000';
const NEXT = '\uE000REPOSNAP_NEXT_QUESTION\uE000';

/** The template text around the repository and the question. */
export interface PromptLayout {
  /** Text before the first file section (BOS is added when tokenizing it). */
  head: string;
  /** Text between the repository and the question. */
  between: string;
  /** Text after the question (the assistant turn's opening). */
  tail: string;
  /** Text between an answer and the next question of the same thread. */
  afterAnswer: string;
  /** Whether the model's chat template was used. */
  templated: boolean;
}

/**
 * Splits the chat-template rendering of [system, user(repository + question)] around the
 * repository and the question. Falls back to a plain-text layout when the model has no
 * template llama.cpp knows.
 */
export function promptLayout(model: EngineModel): PromptLayout {
  const rendered = model.applyChatTemplate(
    [
      { role: 'system', content: SYSTEM_PROMPT },
      { role: 'user', content: `${REPO}\n\nQuestion: ${QUESTION}` },
      { role: 'assistant', content: ANSWER },
      { role: 'user', content: `Question: ${NEXT}` },
    ],
    true,
  );
  if (rendered !== null) {
    const i = rendered.indexOf(REPO);
    const j = rendered.indexOf(QUESTION);
    const k = rendered.indexOf(ANSWER);
    const m = rendered.indexOf(NEXT);
    if (i >= 0 && j > i && k > j && m > k) {
      return {
        head: rendered.slice(0, i),
        between: rendered.slice(i + REPO.length, j),
        tail: rendered.slice(j + QUESTION.length, k),
        afterAnswer: rendered.slice(k + ANSWER.length, m),
        templated: true,
      };
    }
  }
  return {
    head: `${SYSTEM_PROMPT}\n\nRepository:\n\n`,
    between: '\n\nQuestion: ',
    tail: '\nAnswer:',
    afterAnswer: '\n\nQuestion: ',
    templated: false,
  };
}

/** The template parts as tokens. */
export interface LayoutTokens {
  head: Int32Array;
  between: Int32Array;
  tail: Int32Array;
  afterAnswer: Int32Array;
}

/** Tokenizes the template parts (special tokens parsed; BOS on the head when the model adds it). */
export function tokenizeLayout(model: EngineModel, layout: PromptLayout): LayoutTokens {
  return {
    head: model.tokenize(layout.head, { addSpecial: true, parseSpecial: true }),
    between: model.tokenize(layout.between, { parseSpecial: true }),
    tail: model.tokenize(layout.tail, { parseSpecial: true }),
    afterAnswer: model.tokenize(layout.afterAnswer, { parseSpecial: true }),
  };
}

/**
 * Tokens of a thread's turns after the repository: for turn i, its opening (`between` for the
 * first, `afterAnswer` after that), the question, the tail, then the answer's tokens as decoded
 * (omitted for the turn being asked). This is exactly the token stream a thread's cache holds.
 */
export function threadTokens(
  model: EngineModel,
  layout: LayoutTokens,
  turns: readonly { question: string; answerTokens?: readonly number[] }[],
): Int32Array {
  const parts: ArrayLike<number>[] = [];
  turns.forEach((t, i) => {
    parts.push(i === 0 ? layout.between : layout.afterAnswer, model.tokenize(t.question), layout.tail);
    if (t.answerTokens) parts.push(t.answerTokens);
  });
  return concatTokens(parts);
}

/** Concatenates token arrays. */
export function concatTokens(parts: readonly ArrayLike<number>[]): Int32Array {
  const out = new Int32Array(parts.reduce((n, a) => n + a.length, 0));
  let o = 0;
  for (const a of parts) {
    out.set(a, o); // typed arrays and arrays alike, without spreading (a 100K-token question is one part)
    o += a.length;
  }
  return out;
}
