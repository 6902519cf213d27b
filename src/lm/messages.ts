/**
 * A Language Model Chat Provider request's messages (`vscode.LanguageModelChatRequestMessage`:
 * a role and parts) as the engine's chat messages (role, text) for the model's chat template.
 * Parts are read by shape, so this runs without `vscode`: a text part (`LanguageModelTextPart`,
 * `value`), a tool call (`LanguageModelToolCallPart`: `callId`, `name`, `input`) as one line
 * naming the tool and its input, a tool result (`LanguageModelToolResultPart`: `callId`,
 * `content`) as its text parts; other parts (images, data) are left out, as the model reads text only.
 */

/** `vscode.LanguageModelChatMessageRole`: User = 1, Assistant = 2 (System = 3 where a version has it). */
export const ROLE = { User: 1, Assistant: 2, System: 3 } as const;

/** A message the engine renders (src/host/protocol.ts `CompleteParams.messages`). */
export interface EngineMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/** The text of one part, or '' for a part the model cannot read. */
export function partText(part: unknown): string {
  if (!isObj(part)) return '';
  if (typeof part.value === 'string') return part.value;
  if (typeof part.name === 'string' && typeof part.callId === 'string') return `[tool call ${part.name}: ${JSON.stringify(part.input ?? {})}]`;
  if (typeof part.callId === 'string' && Array.isArray(part.content)) return part.content.map(partText).join('');
  return '';
}

/** The text of a message's parts, joined (a string message is its own text). */
export function messageText(message: unknown): string {
  if (typeof message === 'string') return message;
  if (!isObj(message) || !Array.isArray(message.content)) return '';
  return message.content.map(partText).join('');
}

/** The messages in order with their roles (an unknown role reads as the user's); empty messages are dropped. */
export function engineMessages(messages: readonly unknown[]): EngineMessage[] {
  const out: EngineMessage[] = [];
  for (const m of messages) {
    const content = messageText(m);
    if (!content) continue;
    const role = isObj(m) ? m.role : undefined;
    out.push({ role: role === ROLE.Assistant ? 'assistant' : role === ROLE.System ? 'system' : 'user', content });
  }
  return out;
}
