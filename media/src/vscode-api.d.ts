/** The API VS Code injects into webviews (`acquireVsCodeApi`), typed by the page's messages and state. */
interface VsCodeApi<Out, State> {
  postMessage(message: Out): void;
  getState(): State | undefined;
  setState(state: State): void;
}

declare function acquireVsCodeApi<Out = unknown, State = unknown>(): VsCodeApi<Out, State>;
