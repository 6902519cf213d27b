/**
 * The "Explain" CodeLens above functions, methods and classes, from the document's symbols
 * (whatever language extension provides them). `reposnap.codeLens` turns it off, live.
 */
import * as vscode from 'vscode';
import type { Settings } from '../config/accessor';

/** Symbol kinds that get an "Explain" lens. */
export const EXPLAINED_KINDS: ReadonlySet<vscode.SymbolKind> = new Set([
  vscode.SymbolKind.Function,
  vscode.SymbolKind.Method,
  vscode.SymbolKind.Class,
  vscode.SymbolKind.Constructor,
]);

/** Lenses per document, at most (huge generated files). */
const MAX_LENSES = 300;

/** Provides "Explain" lenses. */
export class ExplainCodeLensProvider implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly subscription: vscode.Disposable;
  /** Fires when `reposnap.codeLens` changes. */
  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(private readonly settings: Settings) {
    this.subscription = settings.onDidChange((keys) => keys.has('codeLens') && this.changed.fire());
  }

  /** An "Explain" lens at the first line of each function, method, constructor and class symbol. */
  async provideCodeLenses(document: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
    if (!this.settings.get().codeLens) return [];
    const symbols = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined>(
      'vscode.executeDocumentSymbolProvider',
      document.uri,
    );
    if (!symbols || token.isCancellationRequested) return [];
    const lenses: vscode.CodeLens[] = [];
    const visit = (s: vscode.DocumentSymbol | vscode.SymbolInformation) => {
      if (lenses.length >= MAX_LENSES) return;
      const range = 'range' in s ? s.range : s.location.range;
      if (EXPLAINED_KINDS.has(s.kind)) {
        lenses.push(
          new vscode.CodeLens(new vscode.Range(range.start, range.start), {
            title: 'Explain',
            tooltip: `RepoSnap: explain ${s.name} in the context of the whole repository`,
            command: 'reposnap.explainRange',
            arguments: [document.uri, range, s.name],
          }),
        );
      }
      if ('children' in s) for (const c of s.children) visit(c);
    };
    for (const s of symbols) visit(s);
    return lenses;
  }

  /** Stops listening to settings. */
  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
