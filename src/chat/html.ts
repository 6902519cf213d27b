/**
 * The HTML shell of RepoSnap's webviews (chat view, stats panel): a strict content security
 * policy (nothing remote; scripts only with this page's nonce; styles only from the extension),
 * the bundled script from `dist/webview/`, and styles from `media/`.
 */
import { randomBytes } from 'node:crypto';

/** A fresh nonce for one page load. */
export function makeNonce(): string {
  return randomBytes(18).toString('base64');
}

/** The content security policy of a page with `nonce`; `cspSource` is `webview.cspSource`. */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `style-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join('; ');
}

/** Inputs of {@link webviewHtml}; URIs are already webview URIs (`asWebviewUri`). */
export interface PageParts {
  cspSource: string;
  title: string;
  scriptUri: string;
  styleUris: string[];
  body: string;
  nonce?: string;
}

const escapeAttr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** A complete page. */
export function webviewHtml(p: PageParts): string {
  const nonce = p.nonce ?? makeNonce();
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escapeAttr(contentSecurityPolicy(p.cspSource, nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
${p.styleUris.map((u) => `<link rel="stylesheet" href="${escapeAttr(u)}">`).join('\n')}
<title>${escapeAttr(p.title)}</title>
</head>
<body>
${p.body}
<script nonce="${nonce}" src="${escapeAttr(p.scriptUri)}"></script>
</body>
</html>`;
}
