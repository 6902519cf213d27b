/**
 * The extension's one settings accessor: reads `reposnap.*` through {@link readSettings} (typed,
 * validated, defaults applied), reports invalid values once, and tells listeners which keys
 * changed so each can apply them without a reload.
 */
import * as vscode from 'vscode';
import { readSettings, SETTING_KEYS, type ReposnapSettings } from './settings';

/** Typed, live view of the `reposnap.*` settings. */
export class Settings implements vscode.Disposable {
  private current: ReposnapSettings;
  private readonly emitter = new vscode.EventEmitter<ReadonlySet<keyof ReposnapSettings>>();
  private readonly subscription: vscode.Disposable;
  private reported = new Set<string>();

  /** Fires with the keys whose values changed. */
  readonly onDidChange = this.emitter.event;

  constructor(private readonly log: (line: string) => void) {
    this.current = this.read();
    this.subscription = vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('reposnap')) return;
      const before = this.current;
      this.current = this.read();
      const changed = new Set(SETTING_KEYS.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(this.current[k])));
      if (changed.size > 0) this.emitter.fire(changed);
    });
  }

  /** The settings now. */
  get(): ReposnapSettings {
    return this.current;
  }

  private read(): ReposnapSettings {
    const { settings, problems } = readSettings(vscode.workspace.getConfiguration('reposnap'));
    for (const p of problems) {
      this.log(`settings: ${p}`);
      if (!this.reported.has(p)) {
        this.reported.add(p);
        void vscode.window.showWarningMessage(`RepoSnap: ${p}`);
      }
    }
    return settings;
  }

  /** Stops listening to configuration changes. */
  dispose(): void {
    this.subscription.dispose();
    this.emitter.dispose();
  }
}
