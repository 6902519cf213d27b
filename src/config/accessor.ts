/**
 * The extension's one settings accessor: reads `reposnap.*` through {@link readSettings} (typed,
 * validated, defaults applied), reports invalid values once, and tells listeners which keys
 * changed so each can apply them without a reload. A workspace value that weakens what is kept
 * out (workspace-overrides.ts: `exclude` negations re-including a secret, `maxFileBytes`) is
 * asked about once per value and window, and ignored until allowed; the allowed values are
 * remembered in the workspace's state.
 */
import * as vscode from 'vscode';
import { readSettings, SETTING_KEYS, type ReposnapSettings } from './settings';
import { withoutUnaccepted, workspaceOverrides, type GuardedPlaces, type WorkspaceOverride } from './workspace-overrides';

/** The workspace-state key of the workspace overrides the user allowed (`WorkspaceOverride.id`s). */
export const ACCEPTED_OVERRIDES_KEY = 'reposnap.acceptedWorkspaceOverrides';

/** The confirmation's buttons. */
export const ALLOW_OVERRIDE = 'Allow';
export const KEEP_IGNORING = 'Keep Ignoring';

/** Where the allowed overrides are kept: `ExtensionContext.workspaceState` fits. */
export interface OverrideMemory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

/** Typed, live view of the `reposnap.*` settings. */
export class Settings implements vscode.Disposable {
  private current: ReposnapSettings;
  private readonly emitter = new vscode.EventEmitter<ReadonlySet<keyof ReposnapSettings>>();
  private readonly subscription: vscode.Disposable;
  private reported = new Set<string>();

  /** Fires with the keys whose values changed. */
  readonly onDidChange = this.emitter.event;

  private readonly asked = new Set<string>();
  private readonly acceptedNow = new Set<string>();

  /**
   * `log` gets a line per invalid value; `memory` (the workspace state) keeps the workspace
   * overrides the user allowed, so that they are not asked about again (without one, only for
   * this window).
   */
  constructor(
    private readonly log: (line: string) => void,
    private readonly memory?: OverrideMemory,
  ) {
    this.current = this.read();
    this.subscription = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('reposnap')) this.refresh();
    });
  }

  /** Reads the settings again and tells the listeners which keys changed. */
  private refresh(): void {
    const before = this.current;
    this.current = this.read();
    const changed = new Set(SETTING_KEYS.filter((k) => JSON.stringify(before[k]) !== JSON.stringify(this.current[k])));
    if (changed.size > 0) this.emitter.fire(changed);
  }

  /** The ids of the allowed workspace overrides. */
  private accepted(): Set<string> {
    return new Set([...(this.memory?.get<string[]>(ACCEPTED_OVERRIDES_KEY) ?? []), ...this.acceptedNow]);
  }

  /** Asks about one workspace override (once per window); on "Allow", remembers it and applies it. */
  private async confirm(override: WorkspaceOverride): Promise<void> {
    const pick = await vscode.window.showWarningMessage(`RepoSnap: ${override.message}`, ALLOW_OVERRIDE, KEEP_IGNORING);
    if (pick !== ALLOW_OVERRIDE) return;
    this.acceptedNow.add(override.id);
    await this.memory?.update(ACCEPTED_OVERRIDES_KEY, [...this.accepted()]);
    this.log(`settings: the workspace's reposnap.${override.key} was allowed`);
    this.refresh();
  }

  /** The settings now. */
  get(): ReposnapSettings {
    return this.current;
  }

  private read(): ReposnapSettings {
    const configuration = vscode.workspace.getConfiguration('reposnap');
    const { settings, problems } = readSettings(configuration);
    for (const p of problems) {
      this.log(`settings: ${p}`);
      if (!this.reported.has(p)) {
        this.reported.add(p);
        void vscode.window.showWarningMessage(`RepoSnap: ${p}`);
      }
    }
    const places: GuardedPlaces = { exclude: configuration.inspect('exclude'), maxFileBytes: configuration.inspect('maxFileBytes') };
    const overrides = workspaceOverrides(places);
    const accepted = this.accepted();
    for (const o of overrides) {
      if (accepted.has(o.id) || this.asked.has(o.id)) continue;
      this.asked.add(o.id);
      this.log(`settings: ignoring the workspace's reposnap.${o.key} until allowed`);
      void this.confirm(o);
    }
    return withoutUnaccepted(settings, places, overrides, accepted);
  }

  /** Stops listening to configuration changes. */
  dispose(): void {
    this.subscription.dispose();
    this.emitter.dispose();
  }
}
