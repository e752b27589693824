// The console's shell: login, hash routes (#/tools/NAME, #/runs/ID, ...), navigation.

import { can, limitsText, scopeNotice, serverNotice, setWho, wholeServer } from './access.js';
import { ApiError, get, setToken, token } from './api.js';
import { clear, errorBox, field, h } from './dom.js';

const main = document.getElementById('main');
const logout = document.getElementById('logout');
const limits = document.getElementById('limits');
let leave = null; // the current page's clean-up (closes SSE streams)

// A route's third entry says what the page needs; the shell shows one line instead of a page
// the token would be refused (`server`: the page covers the whole server, so no token limited
// to agents reaches it).
const toolAdmin = { scope: 'admin', server: true };
const routes = [
  [/^#?\/?$/, () => import('./pages/overview.js').then((m) => m.overview)],
  [/^#\/tools$/, () => import('./pages/tools.js').then((m) => m.toolList)],
  [/^#\/tools\/new$/, () => import('./pages/tools.js').then((m) => m.toolEditor), { ...toolAdmin, title: 'New tool' }],
  [/^#\/tools\/import$/, () => import('./pages/import.js').then((m) => m.importPage), { ...toolAdmin, title: 'Import an OpenAPI document' }],
  [/^#\/tools\/([^/]+)\/edit$/, () => import('./pages/tools.js').then((m) => m.toolEditor), { ...toolAdmin, title: 'Edit a tool' }],
  [/^#\/tools\/([^/]+)$/, () => import('./pages/tools.js').then((m) => m.toolPage)],
  [/^#\/agents$/, () => import('./pages/agents.js').then((m) => m.agentList)],
  [/^#\/agents\/([^/]+)$/, () => import('./pages/agents.js').then((m) => m.agentPage)],
  [/^#\/route$/, () => import('./pages/agents.js').then((m) => m.routePreview), { scope: 'run', title: 'Route preview' }],
  [/^#\/runs$/, () => import('./pages/runs.js').then((m) => m.runList)],
  [/^#\/runs\/([^/]+)$/, () => import('./pages/runs.js').then((m) => m.runPage)],
];

async function signedIn() {
  try {
    setWho(await get('/whoami'));
    return true;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return false;
    throw e;
  }
}

/** Shows the token's limits in the header and hides the navigation it cannot use. */
function showAccess() {
  limits.textContent = limitsText();
  limits.hidden = !limits.textContent;
  for (const a of document.querySelectorAll('header nav a[data-needs]')) a.parentElement.hidden = !can(a.dataset.needs);
}

/** The line replacing a page the token cannot use, or null when it can. */
function refusal(needs) {
  // The agents first: no scope opens a whole-server page to a token limited to agents.
  if (needs?.server && !wholeServer()) return serverNotice();
  if (needs?.scope && !can(needs.scope)) return scopeNotice(needs.scope);
  return null;
}

/** A 403 the server gave anyway (the token changed, or a page asked too much), as one line. */
function refused(e) {
  if (!(e instanceof ApiError) || e.status !== 403) return null;
  if (e.problem.code === 'server_not_allowed') return serverNotice();
  if (e.problem.code === 'missing_scope') return h('p', { class: 'notice', id: 'scope-notice' }, e.message);
  if (['agent_not_allowed', 'tool_not_allowed'].includes(e.problem.code)) return h('p', { class: 'notice', id: 'limited-notice' }, e.message);
  return null;
}

function loginPage(message) {
  logout.hidden = true;
  limits.hidden = true;
  const input = h('input', { type: 'password', name: 'token', autocomplete: 'current-password', required: true });
  const form = h('form', { class: 'card login', 'aria-labelledby': 'login-title' },
    h('h1', { id: 'login-title' }, 'Log in'),
    h('p', {}, 'Paste an API token (', h('code', {}, 'scripts/run.sh'), ' prints the admin token and keeps it in ',
      h('code', {}, 'admin.token'), ' of the data directory, ', h('code', {}, '~/.local/share/toolbelt'), ' by default; ',
      h('code', {}, 'toolbelt tokens create'), ' makes more).'),
    message ? h('p', { class: 'error', role: 'alert' }, message) : null,
    field('Token', input),
    h('button', { type: 'submit' }, 'Log in'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    setToken(input.value.trim());
    if (await signedIn().catch(() => false)) {
      if (location.hash === '#/login' || !location.hash) location.hash = '#/';
      render();
    } else {
      setToken('');
      loginPage('That token was refused (unknown, revoked, or lacking the read scope).');
    }
  });
  clear(main, form);
  input.focus();
}

/** Marks the page drawn (the browser test waits for `data-ready`) and titles the tab. */
function ready(hash) {
  document.body.dataset.page = hash.split('/')[1] || 'overview';
  main.dataset.ready = hash;
  const heading = main.querySelector('h1');
  if (heading) document.title = `${heading.textContent} · toolbelt`;
}

async function render() {
  if (leave) {
    leave();
    leave = null;
  }
  const hash = location.hash || '#/';
  for (const a of document.querySelectorAll('header nav a')) {
    const target = a.getAttribute('href');
    const current = target === '#/' ? hash === '#/' : hash.startsWith(target);
    if (current) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const path = hash.split('?')[0];
  const route = routes.map(([re, load, needs]) => [path.match(re), load, needs]).find(([m]) => m);
  // The page's module loads while the token is checked.
  const loading = route ? route[1]() : null;
  loading?.catch(() => {}); // reported below, once signed in
  let ok;
  try {
    ok = await signedIn();
  } catch (e) {
    clear(main, errorBox(e));
    return;
  }
  if (!ok) {
    loginPage(token() ? 'Your token was refused; log in again.' : '');
    return;
  }
  logout.hidden = !token();
  showAccess();
  if (route) {
    const [m, , needs] = route;
    const notice = refusal(needs);
    if (notice) {
      clear(main, h('h1', {}, needs.title), notice, h('p', {}, h('a', { href: '#/' }, 'Go to the overview.')));
      ready(hash);
      return;
    }
    clear(main, h('p', { class: 'muted' }, 'Loading…'));
    const started = performance.now();
    try {
      const page = await loading;
      const params = m.slice(1).map(decodeURIComponent);
      const cleanup = await page(main, ...params);
      if (typeof cleanup === 'function') leave = cleanup;
    } catch (e) {
      const line = refused(e);
      if (line) clear(main, h('h1', {}, 'Not for this token'), line);
      else clear(main, h('h1', {}, 'Something went wrong'), e instanceof ApiError ? errorBox(e) : h('pre', {}, String(e.stack || e)));
    }
    main.dataset.renderedMs = String(Math.round(performance.now() - started));
    ready(hash);
    return;
  }
  clear(main, h('h1', {}, 'Not found'), h('p', {}, 'No page here. ', h('a', { href: '#/' }, 'Go to the overview.')));
  main.dataset.ready = hash;
}

document.querySelector('.skip').addEventListener('click', (ev) => {
  ev.preventDefault(); // '#main' would be taken for a route
  main.focus();
});
logout.addEventListener('click', () => {
  setToken('');
  location.hash = '#/';
  render();
});
window.addEventListener('toolbelt:unauthorized', () => {
  if (token()) loginPage('Your token was refused; log in again.');
});
window.addEventListener('hashchange', () => {
  render();
  main.focus({ preventScroll: true });
});
render();
