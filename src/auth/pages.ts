/** Minimal self-contained pages of the sign-in: no scripts, no external assets. */

const escapeHtml = (s: string): string =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );

/** The sign-in pages' one stylesheet; the CSP allows it by its hash (src/http/security-headers.ts). */
export const SIGN_IN_STYLE = `
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.4rem}code{background:#f2f2f4;padding:0 .25rem;border-radius:3px}
form{display:inline}button{font:inherit;padding:.5rem 1.2rem;margin:.5rem .5rem 0 0;border-radius:6px;border:1px solid #888;cursor:pointer}
button.primary{background:#1d4ed8;color:#fff;border-color:#1d4ed8}dl{display:grid;grid-template-columns:auto 1fr;gap:.3rem 1rem}dt{color:#666}
`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${escapeHtml(title)} · hookline</title>
<style>${SIGN_IN_STYLE}</style>
</head>
<body>
${body}
</body>
</html>`;
}

export interface ConsentView {
  readonly human: string;
  readonly via: 'loopback' | 'proxy';
  readonly clientName: string;
  readonly clientId: string;
  readonly resource: string;
  readonly redirectUri: string;
  readonly confirmAction: string;
  readonly abortAction: string;
}

export function renderConsent(v: ConsentView): string {
  const who =
    v.via === 'loopback'
      ? 'the local operator of this hookline (you are connected over loopback)'
      : 'the user your sign-in proxy named';
  return page(
    'Sign in',
    `<h1>Sign in to hookline as <code>${escapeHtml(v.human)}</code>?</h1>
<p>You will act as ${escapeHtml(who)}.</p>
<dl>
<dt>Application</dt><dd>${escapeHtml(v.clientName)} (<code>${escapeHtml(v.clientId)}</code>)</dd>
<dt>Access</dt><dd>the operator API <code>${escapeHtml(v.resource)}</code>: agents, endpoints and todos</dd>
<dt>Returns to</dt><dd><code>${escapeHtml(v.redirectUri)}</code></dd>
</dl>
<p>Only approve if you just ran <code>hookline login</code> yourself.</p>
<form method="post" action="${escapeHtml(v.confirmAction)}"><input type="hidden" name="decision" value="allow"><button class="primary" type="submit" autofocus>Allow</button></form>
<form method="post" action="${escapeHtml(v.abortAction)}"><input type="hidden" name="decision" value="deny"><button type="submit">Deny</button></form>`,
  );
}

export function renderMessage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}

/** oidc-provider's error page (an error it cannot send back to the client's redirect URI). */
export function renderOAuthError(out: {
  readonly error: string;
  readonly error_description?: string;
}): string {
  return page(
    'Sign-in error',
    `<h1>Sign-in failed</h1>
<p><code>${escapeHtml(out.error)}</code>${out.error_description ? `: ${escapeHtml(out.error_description)}` : ''}</p>
<p>Start again with <code>hookline login</code>.</p>`,
  );
}
