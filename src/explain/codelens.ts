/**
 * The "RepoSnap: Explain" CodeLens above functions, methods and classes, from the document's
 * symbols (whatever language extension provides them). The title names RepoSnap so that it is
 * told apart from other extensions' lenses on the same line. `reposnap.codeLens` turns it off, live.
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

/** The lens's title. */
export const EXPLAIN_LENS_TITLE = 'RepoSnap: Explain';

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

  /**
   * A "RepoSnap: Explain" lens at the first line of each function, method, constructor and class
   * symbol. Its command gets the document, the symbol's range, its name and its qualified name
   * (`Outer.inner`, the key of its explanation's thread).
   */
  async provideCodeLenses(document: vscode.TextDocument, token: vscode.CancellationToken): Promise<vscode.CodeLens[]> {
    if (!this.settings.get().codeLens) return [];
    const symbols = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[] | undefined>(
      'vscode.executeDocumentSymbolProvider',
      document.uri,
    );
    if (!symbols || token.isCancellationRequested) return [];
    const lenses: vscode.CodeLens[] = [];
    const visit = (s: vscode.DocumentSymbol | vscode.SymbolInformation, parent: string | undefined) => {
      if (lenses.length >= MAX_LENSES) return;
      const range = 'range' in s ? s.range : s.location.range;
      const qualified = parent ? `${parent}.${s.name}` : 'containerName' in s && s.containerName ? `${s.containerName}.${s.name}` : s.name;
      if (EXPLAINED_KINDS.has(s.kind)) {
        lenses.push(
          new vscode.CodeLens(new vscode.Range(range.start, range.start), {
            title: EXPLAIN_LENS_TITLE,
            tooltip: `RepoSnap: explain ${s.name} in the context of the whole repository`,
            command: 'reposnap.explainRange',
            arguments: [document.uri, range, s.name, qualified],
          }),
        );
      }
      if ('children' in s) for (const c of s.children) visit(c, qualified);
    };
    for (const s of symbols) visit(s, undefined);
    return lenses;
  }

  /** Stops listening to settings. */
  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
