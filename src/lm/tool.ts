/**
 * `reposnap_askRepository({ question })`, a Language Model Tool for agent mode (issue 32, item 3;
 * `vscode.lm.registerTool`, package.json `contributes.languageModelTools`): asks RepoSnap's
 * repository-aware pipeline (the chat's own: {@link EngineService.ask} with packing, the cached
 * repository prefix and SnapKV) and returns the answer with the files it read, highest kept share
 * first. It only reads: nothing is edited, so `prepareInvocation` says what will run and asks no
 * confirmation (package.json tags it `read-only`). Each call is its own engine thread.
 */
import { randomUUID } from 'node:crypto';
import * as vscode from 'vscode';
import type { ServiceAsk } from '../host/service';
import type { WireAskStats } from '../host/protocol';
import { badgeText } from '../chat/protocol';
import { answerStats, failureCard } from '../chat/view';
import { packedReferences } from '../chat/participant/references';
import { AbortError } from '../engine/errors';

/** The tool's name (package.json `contributes.languageModelTools[0].name`). */
export const TOOL_NAME = 'reposnap_askRepository';

/** The tool's input (its `inputSchema`). */
export interface AskRepositoryInput {
  question: string;
}

/** What the tool asks through: the window's engine service. */
export interface ToolEngine {
  ask(q: ServiceAsk): Promise<WireAskStats>;
}

/** The tool's result text: the answer, the packed files by kept share, the badge. */
export function toolResultText(answer: string, stats: WireAskStats): string {
  const files = packedReferences(stats.context).map((f) => `- ${f.path}${f.keptShare === null ? '' : ` (${Math.round(100 * f.keptShare)} % kept)`}`);
  return [answer.trim(), '', files.length > 0 ? `Files RepoSnap read (highest kept share first):\n${files.join('\n')}` : '', '', badgeText(answerStats(stats))].join('\n').replace(/\n{3,}/g, '\n\n').trim();
}

/** The tool. */
export class AskRepositoryTool implements vscode.LanguageModelTool<AskRepositoryInput> {
  constructor(private readonly engine: ToolEngine) {}

  /** What the Chat view shows before and while it runs; no confirmation (it edits nothing). */
  prepareInvocation(options: vscode.LanguageModelToolInvocationPrepareOptions<AskRepositoryInput>): vscode.PreparedToolInvocation {
    const q = String(options.input?.question ?? '').trim();
    const short = q.length > 120 ? `${q.slice(0, 119)}…` : q;
    return { invocationMessage: `Asking RepoSnap about the repository (local model, read-only): "${short}"` };
  }

  /** Answers the question; a failure is returned as its card's title and text (the model reads it), a cancel throws. */
  async invoke(options: vscode.LanguageModelToolInvocationOptions<AskRepositoryInput>, token: vscode.CancellationToken): Promise<vscode.LanguageModelToolResult> {
    const question = String(options.input?.question ?? '').trim();
    if (!question) return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart('The question is empty: pass { "question": "…" }.')]);
    const controller = new AbortController();
    const cancel = token.onCancellationRequested(() => controller.abort());
    let text = '';
    try {
      const stats = await this.engine.ask({
        threadId: `tool:${randomUUID()}`,
        question,
        source: 'chat',
        signal: controller.signal,
        onEvent: (e) => {
          if (e.kind === 'token') text += e.text;
        },
      });
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(toolResultText(text, stats))]);
    } catch (e) {
      if (e instanceof AbortError) throw e;
      const card = failureCard(e);
      return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(`RepoSnap could not answer: ${card.title}. ${card.text}`)]);
    } finally {
      cancel.dispose();
    }
  }
}
