/**
 * A small stand-in for the `vscode` module, so that the extension's own classes (the explain
 * controller, the CodeLens provider, the status bar, the commands, `activate`) run under node's
 * test runner. Importing this file first makes `require('vscode')` resolve to it. It implements
 * the API surface those classes touch, and records what they do (comment threads created, editor
 * scrolls, commands run, messages shown, quick picks) in {@link fake} for the tests to check.
 * Answers to modal messages and quick picks are scripted per test (`fake.answers`).
 */
import Module from 'node:module';
import path from 'node:path';

// ---- registration: `vscode` resolves to this file --------------------------------------------
const self = __filename;
const M = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const resolve = M._resolveFilename;
M._resolveFilename = function (request: string, ...rest: unknown[]) {
  return request === 'vscode' ? self : resolve.call(this, request, ...rest);
};

// ---- value types ------------------------------------------------------------------------------
export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(a: Position | number, b: Position | number, c?: number, d?: number) {
    this.start = typeof a === 'number' ? new Position(a, b as number) : a;
    this.end = typeof a === 'number' ? new Position(c!, d!) : (b as Position);
  }
  get isEmpty(): boolean {
    return this.start.line === this.end.line && this.start.character === this.end.character;
  }
  /** As vscode's `Range.isEqual`: same start and end positions. */
  isEqual(other: Range): boolean {
    const same = (p: Position, q: Position) => p.line === q.line && p.character === q.character;
    return same(this.start, other.start) && same(this.end, other.end);
  }
}

/** As vscode's `Location`: a document and a position (or range) in it. */
export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Position | Range,
  ) {}
}

/** As vscode's `LanguageModelTextPart`. */
export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}

/** As vscode's `LanguageModelToolResult`. */
export class LanguageModelToolResult {
  constructor(readonly content: unknown[]) {}
}

export class Selection extends Range {
  get active(): Position {
    return this.end;
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  static parse(s: string): Uri {
    return new Uri(s.split(':')[0]!, s.replace(/^file:\/\//, ''));
  }
  static joinPath(u: Uri, ...parts: string[]): Uri {
    return new Uri(u.scheme, path.join(u.fsPath, ...parts));
  }
  get path(): string {
    return this.fsPath;
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class MarkdownString {
  isTrusted: unknown;
  constructor(
    public value = '',
    public supportThemeIcons = false,
  ) {}
  appendMarkdown(s: string): this {
    this.value += s;
    return this;
  }
  appendText(s: string): this {
    this.value += s;
    return this;
  }
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class EventEmitter<T> {
  private listeners = new Set<(e: T) => void>();
  event = (listener: (e: T) => void) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };
  fire(e: T): void {
    for (const l of this.listeners) l(e);
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class CodeLens {
  constructor(
    readonly range: Range,
    readonly command?: { title: string; command: string; tooltip?: string; arguments?: unknown[] },
  ) {}
}

export class RelativePattern {
  constructor(
    readonly base: unknown,
    readonly pattern: string,
  ) {}
}

export const SymbolKind = { File: 0, Module: 1, Namespace: 2, Package: 3, Class: 4, Method: 5, Property: 6, Field: 7, Constructor: 8, Enum: 9, Interface: 10, Function: 11, Variable: 12 };
export const CommentMode = { Editing: 0, Preview: 1 };
export const CommentThreadCollapsibleState = { Collapsed: 0, Expanded: 1 };
export const StatusBarAlignment = { Left: 1, Right: 2 };
export const TextEditorRevealType = { Default: 0, InCenter: 1, InCenterIfOutsideViewport: 2, AtTop: 3 };
export const ViewColumn = { Active: -1, Beside: -2, One: 1 };
export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const FileType = { Unknown: 0, File: 1, Directory: 2, SymbolicLink: 64 };

// ---- documents and editors ----------------------------------------------------------------------
/** A text document held in memory. */
export class FakeDocument {
  private readonly lines: string[];
  constructor(
    readonly uri: Uri,
    readonly text: string,
    readonly languageId = 'typescript',
  ) {
    this.lines = text.split('\n');
  }
  getText(range?: Range): string {
    if (!range) return this.text;
    const out: string[] = [];
    for (let l = range.start.line; l <= range.end.line; l++) {
      const line = this.lines[l] ?? '';
      const from = l === range.start.line ? range.start.character : 0;
      const to = l === range.end.line ? range.end.character : line.length;
      out.push(line.slice(from, to));
    }
    return out.join('\n');
  }
  lineAt(line: number): { range: Range; text: string } {
    const text = this.lines[line] ?? '';
    return { text, range: new Range(line, 0, line, text.length) };
  }
}

/** An editor showing lines [top, bottom] of a document; records each `revealRange`. */
export class FakeEditor {
  selection = new Selection(new Position(0, 0), new Position(0, 0));
  constructor(
    readonly document: FakeDocument,
    public visibleRanges: Range[] = [new Range(0, 0, 40, 0)],
  ) {}
  revealRange(range: Range, type?: number): void {
    fake.revealed.push({ uri: this.document.uri.toString(), line: range.start.line, type });
    // the editor scrolls: AtTop puts the line first
    if (type === TextEditorRevealType.AtTop) {
      const height = this.visibleRanges[0]!.end.line - this.visibleRanges[0]!.start.line;
      this.visibleRanges = [new Range(range.start.line, 0, range.start.line + height, 0)];
    }
  }
}

// ---- what the extension did, for the tests ----------------------------------------------------------
export interface FakeThread {
  uri: Uri;
  range: Range;
  comments: { body: MarkdownString }[];
  label?: string;
  contextValue?: string;
  canReply?: boolean;
  collapsibleState?: number;
  disposed: boolean;
  dispose(): void;
}

export interface FakeStatusItem {
  id: string;
  text: string;
  tooltip?: unknown;
  command?: string;
  name?: string;
  accessibilityInformation?: { label: string };
  backgroundColor?: ThemeColor;
  visible: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

/** What the extension did, and the scripted answers of the user. */
export const fake = {
  threads: [] as FakeThread[],
  revealed: [] as { uri: string; line: number; type?: number }[],
  executed: [] as { command: string; args: unknown[] }[],
  messages: [] as { level: 'info' | 'warning' | 'error'; message: string; options?: unknown; items: string[] }[],
  quickPicks: [] as { items: { label: string; description?: string }[]; options?: unknown }[],
  statusItems: [] as FakeStatusItem[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  codeLensProviders: [] as unknown[],
  webviewViewProviders: new Map<string, unknown>(),
  watchers: 0,
  documents: new Map<string, FakeDocument>(),
  editors: [] as FakeEditor[],
  configuration: {} as Record<string, unknown>,
  /** Workspace settings (a repository's `.vscode/settings.json`): they win over `configuration` in `get`, as in VS Code, and are `inspect`'s `workspaceValue`. */
  workspaceConfiguration: {} as Record<string, unknown>,
  /** Scripted user answers: the button a message returns, the quick pick row (by label) chosen. */
  answers: { message: undefined as string | undefined, quickPick: undefined as string | undefined },
  /** Results of `executeCommand` for commands the extension does not register (`vscode.executeDocumentSymbolProvider`). */
  commandResults: new Map<string, unknown>(),
  reset(): void {
    this.threads.length = 0;
    this.revealed.length = 0;
    this.executed.length = 0;
    this.messages.length = 0;
    this.quickPicks.length = 0;
    this.statusItems.length = 0;
    this.commands.clear();
    this.codeLensProviders.length = 0;
    this.webviewViewProviders.clear();
    this.watchers = 0;
    this.documents.clear();
    this.editors.length = 0;
    this.configuration = {};
    this.workspaceConfiguration = {};
    this.answers = { message: undefined, quickPick: undefined };
    this.commandResults.clear();
  },
  /** Opens `text` as a document at `file` in an editor showing lines [top, top + height]. */
  openEditor(file: string, text: string, top = 0, height = 40): FakeEditor {
    const doc = new FakeDocument(Uri.file(file), text);
    this.documents.set(doc.uri.toString(), doc);
    const editor = new FakeEditor(doc, [new Range(top, 0, top + height, 0)]);
    this.editors.push(editor);
    window.activeTextEditor = editor;
    return editor;
  },
};

const disposable = () => ({ dispose() {} });

// ---- namespaces ------------------------------------------------------------------------------------
export const comments = {
  createCommentController(id: string, label: string) {
    return {
      id,
      label,
      options: undefined as unknown,
      createCommentThread(uri: Uri, range: Range, comments: { body: MarkdownString }[]): FakeThread {
        const t: FakeThread = {
          uri,
          range,
          comments,
          disposed: false,
          dispose() {
            this.disposed = true;
          },
        };
        fake.threads.push(t);
        return t;
      },
      dispose() {},
    };
  },
};

export const window = {
  activeTextEditor: undefined as FakeEditor | undefined,
  get visibleTextEditors(): FakeEditor[] {
    return fake.editors;
  },
  async showTextDocument(doc: FakeDocument): Promise<FakeEditor> {
    let e = fake.editors.find((x) => x.document === doc);
    if (!e) {
      e = new FakeEditor(doc);
      fake.editors.push(e);
    }
    return e;
  },
  createOutputChannel() {
    const noop = () => {};
    return { info: noop, warn: noop, error: noop, debug: noop, trace: noop, appendLine: noop, show: noop, dispose: noop };
  },
  createStatusBarItem(id: string): FakeStatusItem {
    const item: FakeStatusItem = {
      id,
      text: '',
      visible: false,
      show() {
        this.visible = true;
      },
      hide() {
        this.visible = false;
      },
      dispose() {
        this.visible = false;
      },
    };
    fake.statusItems.push(item);
    return item;
  },
  async showInformationMessage(message: string, ...rest: unknown[]) {
    return record('info', message, rest);
  },
  async showWarningMessage(message: string, ...rest: unknown[]) {
    return record('warning', message, rest);
  },
  async showErrorMessage(message: string, ...rest: unknown[]) {
    return record('error', message, rest);
  },
  async showQuickPick<T extends { label: string }>(items: T[], options?: unknown): Promise<T | undefined> {
    fake.quickPicks.push({ items, options });
    return items.find((i) => i.label === fake.answers.quickPick);
  },
  registerWebviewViewProvider(id: string, provider: unknown) {
    fake.webviewViewProviders.set(id, provider);
    return disposable();
  },
  createWebviewPanel() {
    throw new Error('fake vscode: createWebviewPanel is not faked');
  },
  async withProgress<R>(_o: unknown, task: (p: { report(): void }, t: unknown) => Promise<R>): Promise<R> {
    return task({ report() {} }, { isCancellationRequested: false, onCancellationRequested: disposable });
  },
  async showOpenDialog() {
    return undefined;
  },
  async showInputBox() {
    return undefined;
  },
  setStatusBarMessage: disposable,
};

function record(level: 'info' | 'warning' | 'error', message: string, rest: unknown[]): string | undefined {
  const options = rest.length > 0 && typeof rest[0] === 'object' && rest[0] !== null ? rest[0] : undefined;
  const items = rest.filter((r): r is string => typeof r === 'string');
  fake.messages.push({ level, message, options, items });
  return items.find((i) => i === fake.answers.message);
}

export const workspace = {
  workspaceFolders: undefined as { uri: Uri; name: string; index: number }[] | undefined,
  getConfiguration(section?: string) {
    const prefix = section ? `${section}.` : '';
    return {
      get: <T>(key: string, dflt?: T) => ((fake.workspaceConfiguration[prefix + key] ?? fake.configuration[prefix + key]) as T | undefined) ?? dflt,
      inspect: (key: string) => ({ key: prefix + key, globalValue: fake.configuration[prefix + key], workspaceValue: fake.workspaceConfiguration[prefix + key] }),
      has: (key: string) => prefix + key in fake.configuration,
      update: async (key: string, value: unknown) => {
        fake.configuration[prefix + key] = value;
      },
    };
  },
  onDidChangeConfiguration: () => disposable(),
  asRelativePath(uri: Uri | string): string {
    const p = typeof uri === 'string' ? uri : uri.fsPath;
    const root = workspace.workspaceFolders?.[0]?.uri.fsPath;
    return root && p.startsWith(`${root}/`) ? p.slice(root.length + 1) : p;
  },
  async openTextDocument(uri: Uri): Promise<FakeDocument> {
    const doc = fake.documents.get(uri.toString());
    if (!doc) throw new Error(`fake vscode: no document ${uri.toString()}`);
    return doc;
  },
  createFileSystemWatcher() {
    fake.watchers++;
    return { onDidChange: disposable, onDidCreate: disposable, onDidDelete: disposable, dispose() {} };
  },
  async findFiles() {
    return [];
  },
  fs: {},
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown) {
    fake.commands.set(id, fn);
    return { dispose: () => fake.commands.delete(id) };
  },
  async executeCommand(command: string, ...args: unknown[]): Promise<unknown> {
    fake.executed.push({ command, args });
    const fn = fake.commands.get(command);
    if (fn) return fn(...args);
    return fake.commandResults.get(command);
  },
};

export const languages = {
  registerCodeLensProvider(_selector: unknown, provider: unknown) {
    fake.codeLensProviders.push(provider);
    return disposable();
  },
};

/**
 * The chat namespaces of a host without VS Code's chat APIs (VS Code before 1.90, forks without
 * chat): no functions. A test that plays a host with them assigns `createChatParticipant`,
 * `registerLanguageModelChatProvider` and `registerTool` and removes them after.
 */
export const chat: Record<string, unknown> = {};
export const lm: Record<string, unknown> = {};

export const env = {
  clipboard: { writeText: async () => {} },
  openExternal: async () => true,
};

// ---- extension context ------------------------------------------------------------------------

/** An in-memory `Memento` (workspaceState / globalState). */
export function memento() {
  const m = new Map<string, unknown>();
  return { get: <T>(k: string, d?: T) => (m.has(k) ? (m.get(k) as T) : d), update: async (k: string, v: unknown) => void m.set(k, v), keys: () => [...m.keys()], setKeysForSync() {} };
}

/**
 * An `ExtensionContext` for `activate`: the extension at `root`, its storage, global storage and
 * log folders under `tmp` (not created), empty mementos.
 */
export function extensionContext(root: string, tmp: string) {
  return {
    subscriptions: [] as { dispose(): unknown }[],
    workspaceState: memento(),
    globalState: memento(),
    extensionUri: Uri.file(root),
    extensionPath: root,
    storageUri: Uri.file(path.join(tmp, 'storage')),
    globalStorageUri: Uri.file(path.join(tmp, 'global')),
    logUri: Uri.file(path.join(tmp, 'log')),
  };
}
