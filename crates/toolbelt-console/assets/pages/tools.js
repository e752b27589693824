// Tools: the filterable table, a tool's page (schema, policy, versions and diff, rollback,
// enable/disable, try it) and the editor of declarative tools with live validation.

import { can, wholeServer } from '../access.js';
import { ApiError, all, call, get, post } from '../api.js';
import { badge, clear, debounce, errorBox, field, h, labelCells, ms, pre, say, setFieldError, when } from '../dom.js';
import { renderSchema, schemaForm } from '../schema-form.js';

const PAGE = 200;

/** Whether the token may change tools: that changes what every agent gets (ADR 0061). */
const toolAdmin = () => can('admin') && wholeServer();

function options(values, all = 'any') {
  return [h('option', { value: '' }, all), ...values.map((v) => h('option', { value: v }, v))];
}

export async function toolList(main) {
  const [live, stored, groups] = await Promise.all([
    all('/tools', 5000), // one request for a catalog of up to 5,000 tools
    // The stored tools' list covers the whole server: a token limited to agents is refused it.
    wholeServer() ? get('/stored-tools') : [],
    get('/groups'),
  ]);
  const byName = new Map();
  for (const t of live) byName.set(t.name, { ...t, available: true, source: t.source || 'compiled', enabled: true });
  for (const s of stored) {
    const row = byName.get(s.name) || { name: s.name, description: '', tags: [], kind: '', version: String(s.current_version), available: false };
    Object.assign(row, { source: s.source, enabled: s.enabled, missing: s.missing, restricted: s.restricted });
    byName.set(s.name, row);
  }
  const rows = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)); // byte order, as the API
  const kinds = [...new Set(rows.map((r) => r.kind).filter(Boolean))].sort();
  const sources = [...new Set(rows.map((r) => r.source))].sort();

  const q = h('input', { type: 'search', id: 'tool-q', placeholder: 'name or description' });
  const group = h('select', { id: 'tool-group' }, options(groups.map((g) => g.name)));
  const kind = h('select', { id: 'tool-kind' }, options(kinds));
  const source = h('select', { id: 'tool-source' }, options(sources));
  const enabled = h('select', { id: 'tool-enabled' }, options(['enabled', 'disabled']));
  const avail = h('select', { id: 'tool-avail' }, options(['available', 'unavailable', 'restricted']));
  const count = h('p', { class: 'muted', 'aria-live': 'polite' });
  const tbody = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Show more');
  let shown = PAGE;

  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  if (params.get('group')) group.value = params.get('group');

  function matches(r) {
    const needle = q.value.trim().toLowerCase();
    if (needle && !r.name.toLowerCase().includes(needle) && !(r.description || '').toLowerCase().includes(needle)) return false;
    if (group.value && !(r.tags || []).includes(group.value)) return false;
    if (kind.value && r.kind !== kind.value) return false;
    if (source.value && r.source !== source.value) return false;
    if (enabled.value && (enabled.value === 'enabled') !== r.enabled) return false;
    if (avail.value === 'available' && !r.available) return false;
    if (avail.value === 'unavailable' && r.available) return false;
    if (avail.value === 'restricted' && !r.restricted) return false;
    return true;
  }

  function draw() {
    const hits = rows.filter(matches);
    count.textContent = `${hits.length} of ${rows.length} tools`;
    tbody.replaceChildren(...hits.slice(0, shown).map((r) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: `#/tools/${encodeURIComponent(r.name)}` }, r.name)),
      h('td', { class: 'desc' }, r.description),
      h('td', {}, (r.tags || []).join(', ')),
      h('td', {}, r.kind || '–'),
      h('td', {}, r.source),
      h('td', {}, r.enabled ? badge('enabled', 'ok') : badge('disabled', 'warn')),
      h('td', {}, r.available ? badge('available', 'ok') : badge(r.missing ? 'missing' : 'unavailable', 'warn'),
        r.restricted ? badge('restricted') : null))));
    if (tbody.isConnected) labelCells(tbody.closest('table'));
    more.hidden = hits.length <= shown;
    more.textContent = `Show ${Math.min(PAGE, hits.length - shown)} more`;
  }
  const redraw = debounce(() => { shown = PAGE; draw(); }, 120);
  for (const c of [q, group, kind, source, enabled, avail]) c.addEventListener(c === q ? 'input' : 'change', redraw);
  more.addEventListener('click', () => { shown += PAGE; draw(); });

  clear(main,
    h('div', { class: 'page-head' }, h('h1', {}, 'Tools'), toolAdmin() ? h('div', {}, h('a', { class: 'button', href: '#/tools/new' }, 'New tool'), ' ', h('a', { class: 'button', href: '#/tools/import' }, 'Import OpenAPI')) : null),
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
      field('Search', q), field('Group', group), field('Kind', kind), field('Source', source),
      field('Enabled', enabled), field('Availability', avail)),
    count,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'tools-table' },
      h('thead', {}, h('tr', {}, ['Name', 'Description', 'Groups', 'Kind', 'Source', 'Enabled', 'Availability'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    more);
  draw();
}

/** Line diff of two texts (longest common subsequence); returns [[' '|'-'|'+', line]]. */
export function diffLines(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  const n = x.length;
  const m = y.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
    lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push([' ', x[i]]); i++; j++; }
    else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(['-', x[i++]]);
    else out.push(['+', y[j++]]);
  }
  while (i < n) out.push(['-', x[i++]]);
  while (j < m) out.push(['+', y[j++]]);
  return out;
}

function versionText(v) {
  return JSON.stringify({ spec: v.spec, definition: v.definition ?? null }, null, 2);
}

export async function toolPage(main, name) {
  const enc = encodeURIComponent(name);
  const [spec, stored, versions] = await Promise.all([
    get(`/tools/${enc}`).catch((e) => (e.status === 404 ? null : Promise.reject(e))),
    call(`/tools/${enc}/stored`).catch((e) => (e.status === 404 || e.status === 503 ? null : Promise.reject(e))),
    get(`/tools/${enc}/versions`).catch((e) => (e.status === 404 || e.status === 503 ? [] : Promise.reject(e))),
  ]);
  const record = stored?.data;
  const s = spec || record?.spec;
  if (!s) throw new ApiError(404, { title: 'Not found', detail: `no tool \`${name}\``, code: 'tool_not_found' });
  const policy = s.policy || {};

  async function act(path, body, ok) {
    try {
      await call(path, { method: 'POST', body, ifMatch: stored?.etag });
      say(ok);
      toolPage(main, name);
    } catch (e) {
      say(e.message, 'error');
    }
  }

  const head = h('div', { class: 'page-head' },
    h('h1', {}, name),
    h('div', { class: 'actions' },
      record && toolAdmin() ? h('button', { type: 'button', id: 'toggle-enabled', class: 'secondary',
        onclick: () => act(`/tools/${enc}/${record.enabled ? 'disable' : 'enable'}`, undefined, record.enabled ? 'Disabled.' : 'Enabled.') },
      record.enabled ? 'Disable' : 'Enable') : null,
      record?.definition && toolAdmin() ? h('a', { class: 'button secondary', href: `#/tools/${enc}/edit` }, 'Edit') : null));

  const facts = h('dl', { class: 'facts' },
    h('dt', {}, 'Kind'), h('dd', {}, s.kind || '–'),
    h('dt', {}, 'Groups'), h('dd', {}, (s.tags || []).map((t) => h('a', { href: `#/tools?group=${encodeURIComponent(t)}`, class: 'tag' }, t))),
    h('dt', {}, 'Version'), h('dd', {}, s.version, record ? ` (stored version ${record.current_version} of ${record.latest_version})` : ''),
    h('dt', {}, 'Source'), h('dd', {}, record ? record.source : 'compiled, not stored'),
    h('dt', {}, 'State'), h('dd', {}, spec ? badge('available', 'ok') : badge('not in the live registry', 'warn'),
      record && !record.enabled ? badge('disabled', 'warn') : null));

  const policyList = h('dl', { class: 'facts' },
    Object.entries(policy).flatMap(([k, v]) => [h('dt', {}, k.replaceAll('_', ' ')), h('dd', {}, typeof v === 'object' ? JSON.stringify(v) : String(v))]),
    s.timeout_ms ? [h('dt', {}, 'timeout'), h('dd', {}, ms(s.timeout_ms))] : null);

  // Versions, with a diff between any two and rollback.
  let versionBox = null;
  if (versions.length) {
    const opts = () => versions.map((v) => h('option', { value: String(v.version) }, `v${v.version}`));
    const from = h('select', { id: 'diff-from' }, opts());
    const to = h('select', { id: 'diff-to' }, opts());
    from.value = String(versions[Math.max(0, versions.length - 2)].version);
    to.value = String(versions[versions.length - 1].version);
    const out = h('div', { class: 'diff', id: 'diff', 'aria-live': 'polite' });
    const showDiff = () => {
      const a = versions.find((v) => String(v.version) === from.value);
      const b = versions.find((v) => String(v.version) === to.value);
      const lines = diffLines(versionText(a), versionText(b));
      const changed = lines.filter((l) => l[0] !== ' ').length;
      if (!changed) {
        out.replaceChildren(h('p', { class: 'muted' }, versions.length > 1 ? 'The two versions are identical.' : 'Only one version so far: edit the tool to make another.'));
        return;
      }
      out.replaceChildren(h('p', { class: 'muted' }, `${changed} changed lines`),
        h('pre', {}, lines.map(([op, text]) => h('span', { class: op === '+' ? 'add' : op === '-' ? 'del' : '' }, `${op} ${text}\n`))));
    };
    from.addEventListener('change', showDiff);
    to.addEventListener('change', showDiff);
    versionBox = h('section', { 'aria-labelledby': 'versions-h' },
      h('h2', { id: 'versions-h' }, 'Versions'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
        h('thead', {}, h('tr', {}, ['Version', 'Changed', 'By', 'Note', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, [...versions].reverse().map((v) => h('tr', {},
          h('th', { scope: 'row' }, `v${v.version} `, record?.current_version === v.version ? badge('current', 'ok') : null),
          h('td', {}, when(v.changed_at)), h('td', {}, v.changed_by), h('td', {}, v.note || ''),
          h('td', {}, record?.current_version === v.version || !toolAdmin() ? '' : h('button', { type: 'button', class: 'secondary small',
            onclick: () => { if (confirm(`Roll ${name} back to v${v.version}?`)) act(`/tools/${enc}/rollback`, { version: v.version }, `Rolled back to v${v.version}.`); } },
          `Roll back to v${v.version}`))))))),
      h('div', { class: 'row' }, field('Diff from', from), field('to', to)),
      out);
    showDiff();
  }

  // Try it.
  let tryBox = null;
  if (spec && can('run')) {
    const form = schemaForm(s.parameters, { idPrefix: 'try' });
    const result = h('div', { id: 'try-result', 'aria-live': 'polite' });
    const run = h('button', { type: 'submit' }, 'Call');
    const f = h('form', { id: 'try-form', novalidate: true }, form.form, run, result);
    f.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const { value, errors } = form.read();
      const rest = form.showErrors(errors);
      if (errors.length) {
        result.replaceChildren(h('p', { class: 'error', role: 'alert' }, `Fix ${errors.length} field(s) first.`), rest.length ? pre(rest) : null);
        return;
      }
      run.disabled = true;
      result.replaceChildren(h('p', { class: 'muted' }, 'Calling…'));
      try {
        const r = await post(`/tools/${enc}/call`, { arguments: value });
        result.replaceChildren(
          h('p', {}, r.ok ? badge('ok', 'ok') : badge(r.error?.kind || 'error', 'bad'), ` in ${ms(r.duration_ms)}`),
          r.ok ? (r.json !== null && r.json !== undefined ? pre(r.json) : pre(r.text ?? '')) : h('p', { class: 'error' }, r.error?.message));
      } catch (e) {
        const rest2 = e instanceof ApiError ? form.showErrors(e.fields()) : [];
        result.replaceChildren(errorBox(e), rest2.length ? pre(rest2) : null);
      } finally {
        run.disabled = false;
      }
    });
    tryBox = h('section', { 'aria-labelledby': 'try-h' }, h('h2', { id: 'try-h' }, 'Try it'), f);
  }

  clear(main, head,
    h('p', { class: 'lead' }, s.description),
    h('div', { class: 'grid2' },
      h('section', { 'aria-labelledby': 'facts-h' }, h('h2', { id: 'facts-h' }, 'About'), facts),
      h('section', { 'aria-labelledby': 'policy-h' }, h('h2', { id: 'policy-h' }, 'Policy'), policyList)),
    h('section', { 'aria-labelledby': 'schema-h' }, h('h2', { id: 'schema-h' }, 'Parameters'), renderSchema(s.parameters),
      h('details', {}, h('summary', {}, 'JSON schema'), pre(s.parameters))),
    record?.definition ? h('section', { 'aria-labelledby': 'def-h' }, h('h2', { id: 'def-h' }, 'Definition'), pre(record.definition)) : null,
    tryBox, versionBox);
}

const NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export async function toolEditor(main, name) {
  let existing = null;
  let etag = null;
  if (name) {
    const r = await call(`/tools/${encodeURIComponent(name)}/stored`);
    existing = r.data;
    etag = r.etag;
  }
  const spec = existing?.spec || {};
  const def = existing?.definition || { command: { argv: ['echo', '{{text}}'] } };
  const nameIn = h('input', { type: 'text', id: 'ed-name', value: existing?.name || '', required: true, readOnly: !!existing, autocomplete: 'off' });
  const desc = h('textarea', { id: 'ed-desc', rows: 2, required: true }, spec.description || '');
  const tags = h('input', { type: 'text', id: 'ed-tags', value: (spec.tags || []).join(', ') });
  const params = h('textarea', { id: 'ed-params', rows: 8, class: 'mono' },
    JSON.stringify(spec.parameters || { type: 'object', properties: { text: { type: 'string', description: 'What to echo' } }, required: ['text'] }, null, 2));
  const kind = h('select', { id: 'ed-kind' }, h('option', { value: 'command' }, 'command (argv, no shell)'), h('option', { value: 'http' }, 'http (request template)'));
  kind.value = def.http ? 'http' : 'command';
  const definition = h('textarea', { id: 'ed-def', rows: 6, class: 'mono' }, JSON.stringify(def.http || def.command, null, 2));
  const approval = h('input', { type: 'checkbox', id: 'ed-approval', checked: !!spec.policy?.needs_approval });
  const effect = h('select', { id: 'ed-effect' }, h('option', { value: 'read_only' }, 'read only'), h('option', { value: 'mutating' }, 'mutating'));
  effect.value = spec.policy?.effect || 'read_only';
  const note = h('input', { type: 'text', id: 'ed-note' });
  const preview = h('div', { id: 'ed-preview', 'aria-live': 'polite' });
  const out = h('div', { id: 'ed-result' });
  const save = h('button', { type: 'submit' }, existing ? 'Save new version' : 'Create tool');
  const byPointer = { '/spec/name': nameIn, '/spec/description': desc, '/spec/tags': tags, '/spec/parameters': params, '/definition': definition };

  kind.addEventListener('change', () => {
    definition.value = JSON.stringify(kind.value === 'http' ? { method: 'GET', url: 'https://example.org/{{text}}' } : { argv: ['echo', '{{text}}'] }, null, 2);
    validate();
  });

  /** Checks in the browser as one types; returns the body or null. */
  function validate() {
    let ok = true;
    const bad = (c, m) => { setFieldError(c, m); if (m) ok = false; };
    bad(nameIn, NAME.test(nameIn.value) ? '' : 'letters, digits, _ and -, 1-64 characters');
    bad(desc, desc.value.trim() ? '' : 'say what the tool does (the router and the model read it)');
    let parameters = null;
    try {
      parameters = JSON.parse(params.value);
      if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) bad(params, 'must be a JSON object');
      else if (parameters.type !== 'object') bad(params, '`type` must be "object"');
      else bad(params, '');
    } catch (e) {
      bad(params, `not valid JSON: ${e.message}`);
    }
    let d = null;
    try {
      d = JSON.parse(definition.value);
      if (kind.value === 'command' && !(Array.isArray(d?.argv) && d.argv.length)) bad(definition, '`argv` must be a non-empty array of strings');
      else if (kind.value === 'http' && !(typeof d?.url === 'string' && d.url)) bad(definition, '`url` is required');
      else bad(definition, '');
    } catch (e) {
      bad(definition, `not valid JSON: ${e.message}`);
    }
    if (parameters && d && ok) {
      const used = [...JSON.stringify(d).matchAll(/\{\{\s*([a-zA-Z0-9_]+)\s*\}\}/g)].map((m) => m[1]);
      const props = Object.keys(parameters.properties || {});
      const unknown = used.filter((u) => !props.includes(u));
      if (unknown.length) bad(definition, `uses {{${unknown.join('}}, {{')}}} which the parameters do not define`);
    }
    if (!ok) {
      preview.replaceChildren();
      return null;
    }
    const body = {
      spec: {
        name: nameIn.value,
        description: desc.value.trim(),
        tags: tags.value.split(',').map((t) => t.trim()).filter(Boolean),
        parameters,
        policy: { ...(spec.policy || {}), needs_approval: approval.checked, effect: effect.value },
      },
      // A command tool, or an HTTP tool whose method is not GET/HEAD, is mutating unless its
      // definition says `read_only: true`: the effect chosen here is written there too.
      definition: { [kind.value]: effect.value === 'read_only' ? { ...d, read_only: true } : d },
    };
    if (note.value.trim()) body.note = note.value.trim();
    preview.replaceChildren(h('h2', {}, 'Form the model will see'), schemaForm(parameters, { idPrefix: 'pv' }).form);
    return body;
  }
  const live = debounce(validate, 200);
  for (const c of [nameIn, desc, tags, params, definition, note]) c.addEventListener('input', live);
  for (const c of [approval, effect]) c.addEventListener('change', live);

  const form = h('form', { id: 'tool-editor', novalidate: true },
    field('Name', nameIn, existing ? 'The name cannot change.' : 'Letters, digits, _ and -.'),
    field('Description', desc),
    field('Groups (comma-separated)', tags),
    field('Parameters (JSON schema)', params),
    field('Kind', kind),
    field('Definition', definition, 'Templates like {{text}} take arguments; secrets are named as {{secret.NAME}} and never stored.'),
    h('div', { class: 'field check' }, approval, h('label', { for: 'ed-approval' }, 'Each call needs a person\'s approval')),
    field('Effect', effect),
    field('Note for this version', note),
    save, out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const body = validate();
    if (!body) {
      out.replaceChildren(h('p', { class: 'error', role: 'alert' }, 'Fix the fields marked above.'));
      form.querySelector('[aria-invalid="true"]')?.focus();
      return;
    }
    save.disabled = true;
    try {
      if (existing) await call(`/tools/${encodeURIComponent(existing.name)}`, { method: 'PUT', body, ifMatch: etag });
      else await post('/tools', body);
      say(existing ? 'Saved a new version.' : 'Tool created.');
      location.hash = `#/tools/${encodeURIComponent(body.spec.name)}`;
    } catch (e) {
      for (const f of e.fields ? e.fields() : []) {
        const key = Object.keys(byPointer).find((p) => (f.pointer || '').startsWith(p));
        if (key) setFieldError(byPointer[key], f.message);
      }
      out.replaceChildren(errorBox(e));
    } finally {
      save.disabled = false;
    }
  });
  clear(main, h('h1', {}, existing ? `Edit ${existing.name}` : 'New tool'), h('div', { class: 'grid2' }, form, preview));
  validate();
}
