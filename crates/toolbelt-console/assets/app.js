// The console's shell: login, hash routes (#/tools/NAME, #/runs/ID, ...), navigation.

import { ApiError, get, setToken, token } from './api.js';
import { clear, errorBox, field, h } from './dom.js';

const main = document.getElementById('main');
const logout = document.getElementById('logout');
let leave = null; // the current page's clean-up (closes SSE streams)

const routes = [
  [/^#?\/?$/, () => import('./pages/overview.js').then((m) => m.overview)],
  [/^#\/tools$/, () => import('./pages/tools.js').then((m) => m.toolList)],
  [/^#\/tools\/new$/, () => import('./pages/tools.js').then((m) => m.toolEditor)],
  [/^#\/tools\/import$/, () => import('./pages/import.js').then((m) => m.importPage)],
  [/^#\/tools\/([^/]+)\/edit$/, () => import('./pages/tools.js').then((m) => m.toolEditor)],
  [/^#\/tools\/([^/]+)$/, () => import('./pages/tools.js').then((m) => m.toolPage)],
  [/^#\/agents$/, () => import('./pages/agents.js').then((m) => m.agentList)],
  [/^#\/agents\/([^/]+)$/, () => import('./pages/agents.js').then((m) => m.agentPage)],
  [/^#\/route$/, () => import('./pages/agents.js').then((m) => m.routePreview)],
  [/^#\/runs$/, () => import('./pages/runs.js').then((m) => m.runList)],
  [/^#\/runs\/([^/]+)$/, () => import('./pages/runs.js').then((m) => m.runPage)],
];

async function signedIn() {
  try {
    await get('/whoami');
    return true;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return false;
    throw e;
  }
}

function loginPage(message) {
  logout.hidden = true;
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
  const route = routes.map(([re, load]) => [path.match(re), load]).find(([m]) => m);
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
  if (route) {
    const [m] = route;
    clear(main, h('p', { class: 'muted' }, 'Loading…'));
    const started = performance.now();
    try {
      const page = await loading;
      const params = m.slice(1).map(decodeURIComponent);
      const cleanup = await page(main, ...params);
      if (typeof cleanup === 'function') leave = cleanup;
    } catch (e) {
      clear(main, h('h1', {}, 'Something went wrong'), e instanceof ApiError ? errorBox(e) : h('pre', {}, String(e.stack || e)));
    }
    main.dataset.renderedMs = String(Math.round(performance.now() - started));
    document.body.dataset.page = hash.split('/')[1] || 'overview';
    main.dataset.ready = hash;
    const heading = main.querySelector('h1');
    if (heading) document.title = `${heading.textContent} · toolbelt`;
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
