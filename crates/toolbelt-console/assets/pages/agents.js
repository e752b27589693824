// Agents: the list, an agent's page (selection, bound tools, why the others are not
// available, bind/unbind in one click, version pins, start a run) and the route preview.

import { can, wholeServer } from '../access.js';
import { call, get, post, startRun } from '../api.js';
import { badge, clear, errorBox, field, h, labelCells, num, pre, say } from '../dom.js';

export async function agentList(main) {
  const agents = await get('/agents');
  const name = h('input', { type: 'text', id: 'new-agent-name', required: true, autocomplete: 'off' });
  const selection = h('input', { type: 'text', id: 'new-agent-selection', value: '' });
  const out = h('div');
  const form = h('form', { id: 'new-agent', class: 'card' },
    h('h2', {}, 'New agent'),
    h('div', { class: 'row' }, field('Name', name), field('Selection', selection, 'Groups and tools, e.g. web,file_ops,-shell_exec (empty: only bound tools)')),
    h('button', { type: 'submit' }, 'Create agent'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await post('/agents', { name: name.value.trim(), selection: selection.value.trim() });
      location.hash = `#/agents/${encodeURIComponent(name.value.trim())}`;
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  });
  clear(main, h('h1', {}, 'Agents'),
    h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'agents-table' },
      h('thead', {}, h('tr', {}, ['Agent', 'Description', 'Selection', 'Model'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, agents.map((a) => h('tr', {},
        h('th', { scope: 'row' }, h('a', { href: `#/agents/${encodeURIComponent(a.name)}` }, a.name)),
        h('td', {}, a.description || ''),
        h('td', {}, h('code', {}, toolsOf(a) || '–')),
        h('td', {}, modelOf(a))))))),
    can('admin') ? form : null);
}

// The selection and the bound tools (`name@vN` when pinned), as one line.
function toolsOf(a) {
  const bound = (a.tools || []).map((b) => (b.version ? `${b.tool}@v${b.version}` : b.tool));
  return [a.selection, ...bound].filter(Boolean).join(', ');
}

function modelOf(a) {
  return [a.provider, a.model].filter(Boolean).join(' / ') || 'from the environment';
}

export async function agentPage(main, id) {
  const enc = encodeURIComponent(id);
  const [agent, tools, stored] = await Promise.all([
    get(`/agents/${enc}`),
    get(`/agents/${enc}/tools`),
    call(`/agents/${enc}/stored`).catch((e) => (e.status === 404 || e.status === 503 ? null : Promise.reject(e))),
  ]);
  const record = stored?.data;
  const admin = record && can('admin'); // binding and pinning change the stored agent
  const bound = new Map((record?.tools || []).map((b) => [b.tool, b.version ?? null]));

  async function change(method, tool, body, message) {
    try {
      await call(`/agents/${enc}/tools/${encodeURIComponent(tool)}`, { method, body, ifMatch: stored?.etag });
      say(message);
      agentPage(main, id);
    } catch (e) {
      say(e.message, 'error');
    }
  }

  const filter = h('input', { type: 'search', id: 'agent-tool-filter', placeholder: 'tool name' });
  const onlyAvail = h('select', { id: 'agent-tool-avail' }, h('option', { value: '' }, 'all'), h('option', { value: 'yes' }, 'available'), h('option', { value: 'no' }, 'unavailable'), h('option', { value: 'bound' }, 'bound'));
  const tbody = h('tbody');
  function draw() {
    const needle = filter.value.trim().toLowerCase();
    const rows = tools.filter((t) => (!needle || t.name.toLowerCase().includes(needle))
      && (onlyAvail.value === '' || (onlyAvail.value === 'yes') === t.available || (onlyAvail.value === 'bound' && bound.has(t.name))));
    tbody.replaceChildren(...rows.slice(0, 300).map((t) => {
      const isBound = bound.has(t.name);
      const pin = h('input', { type: 'number', min: 1, step: 1, class: 'pin', 'aria-label': `Pin ${t.name} to version`, value: bound.get(t.name) ?? '' });
      return h('tr', {},
        h('th', { scope: 'row' }, h('a', { href: `#/tools/${encodeURIComponent(t.name)}` }, t.name)),
        h('td', {}, t.available ? badge('available', 'ok') : badge('unavailable', 'warn')),
        h('td', { class: 'why' }, t.why),
        h('td', {}, admin ? (isBound
          ? h('button', { type: 'button', class: 'secondary small', 'data-unbind': t.name, onclick: () => change('DELETE', t.name, undefined, `Unbound ${t.name}.`) }, `Unbind ${t.name}`)
          : h('button', { type: 'button', class: 'small', 'data-bind': t.name, onclick: () => change('POST', t.name, undefined, `Bound ${t.name}.`) }, `Bind ${t.name}`)) : '–'),
        h('td', {}, admin ? h('span', { class: 'pin-box' }, pin, h('button', { type: 'button', class: 'secondary small',
          onclick: () => change('POST', t.name, pin.value ? { version: Number(pin.value) } : {}, pin.value ? `Pinned ${t.name} to v${pin.value}.` : `${t.name} follows the current version.`) }, 'Pin')) : '–'));
    }));
  }
  const drawLabelled = () => { draw(); if (tbody.closest('table')) labelCells(tbody.closest('table')); };
  filter.addEventListener('input', drawLabelled);
  onlyAvail.addEventListener('change', drawLabelled);

  const input = h('textarea', { id: 'run-input', rows: 2, required: true });
  const runOut = h('div');
  const runForm = h('form', { id: 'run-form', class: 'card' },
    h('h2', {}, 'Run this agent'), field('Request', input),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, 'Start run'),
      h('a', { class: 'button secondary', href: `#/route?agent=${enc}` }, 'Preview the route')), runOut);
  runForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const runId = await startRun(id, input.value);
      location.hash = `#/runs/${encodeURIComponent(runId)}`;
    } catch (e) {
      runOut.replaceChildren(errorBox(e));
    }
  });

  const available = tools.filter((t) => t.available).length;
  clear(main,
    h('div', { class: 'page-head' }, h('h1', {}, `Agent ${id}`)),
    agent.description ? h('p', { class: 'lead' }, agent.description) : null,
    h('dl', { class: 'facts' },
      h('dt', {}, 'Selection'), h('dd', {}, h('code', { id: 'agent-selection' }, agent.selection || '(none: bound tools only)')),
      h('dt', {}, 'Bound tools'), h('dd', { id: 'bound-tools' }, bound.size ? [...bound].map(([t, v]) => h('span', { class: 'tag' }, v ? `${t}@v${v}` : t)) : (record ? 'none' : 'not a stored agent: defined in the configuration')),
      h('dt', {}, 'Model'), h('dd', {}, modelOf(agent)),
      h('dt', {}, 'Tools available'), h('dd', {}, `${num(available)} of ${num(tools.length)}`)),
    can('run') ? runForm : null,
    h('section', { 'aria-labelledby': 'at-h' },
      h('h2', { id: 'at-h' }, 'Tools and why'),
      h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() }, field('Filter', filter), field('Show', onlyAvail)),
      h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'agent-tools' },
        h('thead', {}, h('tr', {}, ['Tool', 'Available', 'Why', 'Binding', 'Version pin'].map((c) => h('th', { scope: 'col' }, c)))),
        tbody))));
  drawLabelled();
}

export async function routePreview(main) {
  const agents = await get('/agents');
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  // A token limited to agents previews for one of them (the server answers `agent_required`).
  const every = wholeServer() ? h('option', { value: '' }, 'every tool') : null;
  const agent = h('select', { id: 'route-agent' }, every, agents.map((a) => h('option', { value: a.name }, a.name)));
  if (params.get('agent')) agent.value = params.get('agent');
  const input = h('textarea', { id: 'route-input', rows: 3, required: true, placeholder: 'e.g. read the README and list its sections' });
  const out = h('div', { id: 'route-result', 'aria-live': 'polite' });
  const form = h('form', { id: 'route-form', class: 'card' },
    h('div', { class: 'row' }, field('Request', input), field('Agent', agent)),
    h('button', { type: 'submit' }, 'Preview'));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const body = { input: input.value };
      if (agent.value) body.agent = agent.value;
      const r = await post('/route', body);
      const d = r.decision;
      const max = Math.max(...d.tools.map((t) => t.score), 1e-9);
      out.replaceChildren(
        h('dl', { class: 'facts' },
          h('dt', {}, 'Outcome'), h('dd', {}, d.outcome?.type || JSON.stringify(d.outcome)),
          h('dt', {}, 'Fallback'), h('dd', { id: 'route-fallback' }, d.fallback ? badge('yes: the router was not sure', 'warn') : badge('no', 'ok'),
            d.bounded_fallback ? ` (sent ${d.bounded_fallback.sent} of ${d.bounded_fallback.toolset_size})` : ''),
          h('dt', {}, 'Groups'), h('dd', {}, d.groups.length ? d.groups.map((g) => h('span', { class: 'tag' }, g)) : '–'),
          h('dt', {}, 'Tokens'), h('dd', { id: 'route-tokens' }, `${num(r.tokens.sent)} sent of ${num(r.tokens.all)}: ${num(r.tokens.saved)} saved (${r.tokens.all ? Math.round((100 * r.tokens.saved) / r.tokens.all) : 0} %)`),
          h('dt', {}, 'Router'), h('dd', {}, d.router, d.reason ? ` — ${d.reason}` : '')),
        h('table', { class: 'list', id: 'route-tools' },
          h('caption', {}, `${d.tools.length} of ${num(r.toolset_size)} tools chosen`),
          h('thead', {}, h('tr', {}, ['Tool', 'Score', ''].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, d.tools.map((t) => h('tr', {},
            h('th', { scope: 'row' }, h('a', { href: `#/tools/${encodeURIComponent(t.name)}` }, t.name)),
            h('td', {}, t.score.toFixed(3)),
            h('td', { class: 'bar-cell' }, h('span', { class: 'bar', style: `width:${Math.max(2, (100 * t.score) / max)}%` })))))),
        h('details', {}, h('summary', {}, 'Raw decision'), pre(d)));
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  });
  clear(main, h('h1', {}, 'Route preview'), h('p', { class: 'muted' }, 'What the router would send to the model for a request: nothing runs.'), form, out);
}
