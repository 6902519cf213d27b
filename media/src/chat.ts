/**
 * The chat view's page (bundled to dist/webview/chat.js). Renders the state the extension sends
 * (src/chat/view.ts), streams tokens into the answer being written, and sends the user's
 * actions back as typed messages. Keeps the draft question in the webview state, so hiding
 * and showing the view loses nothing.
 */
import { contextLineHtml } from '../../src/chat/context-line';
import { WELCOME_CARD_ID, type ChatMessage, type ChatProgress, type ChatViewState, type ErrorCard, type FromWebview, type ToWebview } from '../../src/chat/protocol';
import { renderMarkdown, renderQuestion } from '../../src/chat/render';

interface PageState {
  draft: string;
}

const vscode = acquireVsCodeApi<FromWebview, PageState>();
const app = document.getElementById('app')!;

let state: ChatViewState | undefined;
const pending = new Set<string>();
let frame = 0;
/** Answers whose Context line is expanded (kept across redraws). */
const expanded = new Set<string>();

app.innerHTML = `
<header class="bar">
  <select id="threads" title="Threads" aria-label="Threads"></select>
  <button id="new" class="icon" title="New thread" aria-label="New thread">+</button>
  <button id="delete" class="icon" title="Delete this thread" aria-label="Delete this thread">✕</button>
</header>
<main id="messages" tabindex="-1"></main>
<div id="progress" hidden><div class="label"></div><div class="track"><div class="fill"></div></div></div>
<footer>
  <textarea id="input" rows="3" placeholder="Ask about this repository" title="Enter sends, Shift+Enter starts a new line" aria-label="Question (Enter sends, Shift+Enter starts a new line)"></textarea>
  <div class="actions">
    <span id="model" class="muted"></span>
    <button id="stop" class="secondary" hidden title="Stop the answer">Stop</button>
    <button id="send" title="Send (Enter)">Send</button>
  </div>
</footer>`;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const threadsEl = $<HTMLSelectElement>('threads');
const messagesEl = $<HTMLElement>('messages');
const progressEl = $<HTMLElement>('progress');
const input = $<HTMLTextAreaElement>('input');
const sendBtn = $<HTMLButtonElement>('send');
const stopBtn = $<HTMLButtonElement>('stop');

input.value = vscode.getState()?.draft ?? '';

function post(m: FromWebview): void {
  vscode.postMessage(m);
}

function send(): void {
  const text = input.value.trim();
  if (!text || state?.busy) return;
  post({ type: 'ask', text });
  input.value = '';
  vscode.setState({ draft: '' });
}

input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send();
  }
});
input.addEventListener('input', () => vscode.setState({ draft: input.value }));
sendBtn.addEventListener('click', send);
stopBtn.addEventListener('click', () => post({ type: 'stop' }));
$('new').addEventListener('click', () => post({ type: 'newThread' }));
$('delete').addEventListener('click', () => state && post({ type: 'deleteThread', id: state.active.id }));
threadsEl.addEventListener('change', () => post({ type: 'selectThread', id: threadsEl.value }));

messagesEl.addEventListener('click', (e) => {
  const target = e.target as HTMLElement;
  const action = target.closest<HTMLButtonElement>('button.card-action');
  if (action) {
    post({ type: 'action', messageId: action.dataset.card!, index: Number(action.dataset.index) });
    return;
  }
  const answerBtn = target.closest<HTMLButtonElement>('.answer-actions button');
  if (answerBtn) {
    const id = answerBtn.closest<HTMLElement>('.msg')?.dataset.id ?? '';
    if (answerBtn.classList.contains('retry')) {
      if (!state?.busy) post({ type: 'retry', messageId: id });
    } else {
      post({ type: 'copy', text: findMessage(id)?.text ?? '' });
      answerBtn.textContent = 'Copied';
      setTimeout(() => (answerBtn.textContent = 'Copy answer'), 1500);
    }
    return;
  }
  const copy = target.closest('button.copy');
  if (copy) {
    const code = copy.closest('.code-block')?.querySelector('code')?.textContent ?? '';
    post({ type: 'copy', text: code });
    copy.textContent = 'Copied';
    setTimeout(() => (copy.textContent = 'Copy'), 1500);
    return;
  }
  const a = target.closest('a');
  if (!a) return;
  e.preventDefault();
  if (a.classList.contains('file-link')) {
    const line = a.dataset.line ? Number(a.dataset.line) : undefined;
    const column = a.dataset.column ? Number(a.dataset.column) : undefined;
    post({ type: 'openFile', path: a.dataset.path!, ...(line ? { line } : {}), ...(column ? { column } : {}) });
  } else if (/^https?:/i.test(a.getAttribute('href') ?? '')) {
    post({ type: 'openExternal', url: a.getAttribute('href')! });
  }
});

function messageEl(m: ChatMessage): HTMLElement {
  const el = document.createElement('div');
  el.className = `msg ${m.role}`;
  el.dataset.id = m.id;
  if (m.role === 'user') {
    const p = document.createElement('div');
    p.className = 'question markdown';
    p.innerHTML = renderQuestion(m.text);
    el.append(p);
    return el;
  }
  const body = document.createElement('div');
  body.className = 'markdown';
  el.append(body);
  fillAnswer(el, m);
  return el;
}

/** A card (an error, or the welcome card): title, text, one button per action. */
function cardEl(card: ErrorCard, cardId: string, kind: 'error' | 'welcome'): HTMLElement {
  const el = document.createElement('div');
  el.className = `card ${kind}-card`;
  el.setAttribute('role', kind === 'error' ? 'alert' : 'region');
  const title = document.createElement('div');
  title.className = 'card-title';
  title.textContent = card.title;
  const text = document.createElement('div');
  text.className = 'card-text';
  text.textContent = card.text;
  const actions = document.createElement('div');
  actions.className = 'card-actions';
  card.actions.forEach((a, i) => {
    const b = document.createElement('button');
    b.className = `card-action${i === 0 ? '' : ' secondary'}`;
    b.dataset.card = cardId;
    b.dataset.index = String(i);
    b.dataset.kind = a.kind;
    if (a.setting) b.dataset.setting = a.setting;
    b.textContent = a.label;
    actions.append(b);
  });
  el.append(title, text, actions);
  return el;
}

/** The generic card of an answer saved before cards existed. */
function legacyCard(message: string): ErrorCard {
  return { title: 'RepoSnap could not answer', text: message, actions: [{ kind: 'retry', label: 'Retry' }] };
}

/** (Re)draws an answer: markdown, then the Context line (with the badge), error card or stopped note, then Copy answer and Retry. */
function fillAnswer(el: HTMLElement, m: ChatMessage): void {
  const body = el.querySelector<HTMLElement>('.markdown')!;
  const streaming = state?.busy?.messageId === m.id;
  body.innerHTML = m.text ? renderMarkdown(m.text) : streaming || m.error ? '' : '<p class="muted">(no answer)</p>';
  el.classList.toggle('streaming', streaming);
  el.querySelectorAll('.context, .card, .note, .answer-actions').forEach((x) => x.remove());
  if (m.stats) {
    const holder = document.createElement('div');
    holder.innerHTML = contextLineHtml(m.stats, m.context, expanded.has(m.id));
    const details = holder.firstElementChild as HTMLDetailsElement;
    const b = details.querySelector<HTMLElement>('.badge')!;
    b.title = `${m.stats.files} files packed · ${Math.round(m.stats.prefillTokS)} tok/s prefill · ${m.stats.decodeTokens} tokens at ${Math.round(m.stats.decodeTokS)} tok/s · first token after ${Math.round(m.stats.ttftMs)} ms`;
    details.addEventListener('toggle', () => (details.open ? expanded.add(m.id) : expanded.delete(m.id)));
    el.append(details);
  } else if (m.error) {
    el.append(cardEl(m.errorCard ?? legacyCard(m.error), m.id, 'error'));
  } else if (m.cancelled) {
    const n = document.createElement('div');
    n.className = 'note muted';
    n.textContent = 'Stopped.';
    el.append(n);
  }
  if (!streaming) {
    const row = document.createElement('div');
    row.className = 'answer-actions';
    const copy = document.createElement('button');
    copy.className = 'secondary copy-answer';
    copy.textContent = 'Copy answer';
    copy.title = 'Copy the answer (Markdown)';
    copy.disabled = !m.text;
    const retry = document.createElement('button');
    retry.className = 'secondary retry';
    retry.textContent = 'Retry';
    retry.title = 'Ask this question again';
    retry.disabled = !!state?.busy;
    row.append(copy, retry);
    el.append(row);
  }
}

function renderAll(): void {
  if (!state) return;
  threadsEl.replaceChildren(
    ...state.threads.map((t) => {
      const o = document.createElement('option');
      o.value = t.id;
      o.textContent = t.title;
      o.selected = t.id === state!.active.id;
      return o;
    }),
  );
  $('model').textContent = state.model;
  const stick = nearBottom();
  messagesEl.replaceChildren(...state.active.messages.map(messageEl));
  // at the end, above the input: seen at once even in a long thread
  if (state.welcome) messagesEl.append(cardEl(state.welcome, WELCOME_CARD_ID, 'welcome'));
  if (state.active.messages.length === 0 && !state.welcome) {
    const empty = document.createElement('div');
    empty.className = 'empty muted';
    empty.textContent = 'Ask anything about this repository. RepoSnap packs the whole workspace into the prompt, compresses its KV cache with SnapKV, and answers with a local model.';
    messagesEl.append(empty);
  }
  renderBusy();
  if (stick) scrollDown();
}

/** Send, Stop and the progress line of the active thread (each thread's controls are its own). */
function renderBusy(): void {
  const busy = !!state?.busy;
  stopBtn.hidden = !busy;
  stopBtn.textContent = state?.busy?.waiting ? 'Cancel' : 'Stop';
  sendBtn.disabled = busy;
  sendBtn.title = busy ? 'This thread is answering: wait for it or stop it' : 'Send (Enter)';
  messagesEl.querySelectorAll<HTMLButtonElement>('.answer-actions .retry').forEach((b) => (b.disabled = busy));
  progressEl.classList.toggle('waiting', !!state?.busy?.waiting);
  showProgress(state?.busy?.progress);
}

function showProgress(p: ChatProgress | undefined): void {
  progressEl.hidden = !p || !state?.busy;
  if (!p) return;
  progressEl.querySelector('.label')!.textContent = p.label;
  const fill = progressEl.querySelector<HTMLElement>('.fill')!;
  fill.classList.toggle('indeterminate', p.percent === undefined);
  fill.style.width = p.percent === undefined ? '30%' : `${Math.max(2, Math.min(100, p.percent))}%`;
}

function nearBottom(): boolean {
  return messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
}

function scrollDown(): void {
  messagesEl.scrollTop = messagesEl.scrollHeight;
}

function findMessage(id: string): ChatMessage | undefined {
  return state?.active.messages.find((m) => m.id === id);
}

/** Redraws the answers that received tokens, once per animation frame. */
function flush(): void {
  frame = 0;
  const stick = nearBottom();
  for (const id of pending) {
    const m = findMessage(id);
    const el = messagesEl.querySelector<HTMLElement>(`.msg[data-id="${CSS.escape(id)}"]`);
    if (m && el) fillAnswer(el, m);
  }
  pending.clear();
  if (stick) scrollDown();
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const msg = event.data;
  switch (msg.type) {
    case 'state':
      state = msg.state;
      renderAll();
      break;
    case 'progress':
      if (state?.busy?.messageId === msg.messageId) {
        state.busy.progress = msg.progress;
        showProgress(msg.progress);
      }
      break;
    case 'token': {
      const m = findMessage(msg.messageId);
      if (!m) break;
      m.text += msg.text;
      if (state?.busy) state.busy.progress = undefined;
      progressEl.hidden = true;
      pending.add(m.id);
      frame ||= requestAnimationFrame(flush);
      break;
    }
    case 'done':
    case 'failed': {
      const m = findMessage(msg.messageId);
      if (state?.busy?.messageId === msg.messageId) state.busy = undefined;
      if (m) {
        if (msg.type === 'done') {
          m.stats = msg.stats;
          if (msg.context) m.context = msg.context;
        }
        else {
          if (msg.error) m.error = msg.error;
          if (msg.errorCard) m.errorCard = msg.errorCard;
          if (msg.cancelled) m.cancelled = true;
        }
        pending.add(m.id);
        flush();
      }
      renderBusy();
      break;
    }
    case 'focusInput':
      input.focus();
      break;
  }
});

post({ type: 'ready' });
