// #/tools/import: an OpenAPI document's operations as stored HTTP tools
// (POST /api/v1/tools/import/openapi), with a dry run first.

import { post } from '../api.js';
import { clear, errorBox, field, h, say } from '../dom.js';

const list = (text) => text.split(',').map((s) => s.trim()).filter(Boolean);

export function importPage(main) {
  const file = h('input', { type: 'file', accept: '.json,.yaml,.yml,application/json' });
  const doc = h('textarea', { rows: 12, spellcheck: false, required: true, placeholder: '{"openapi": "3.1.0", ...}' });
  const prefix = h('input', { type: 'text', placeholder: 'petstore_' });
  const tags = h('input', { type: 'text', placeholder: 'pet, store' });
  const ops = h('input', { type: 'text', placeholder: 'getPetById, DELETE /pet/{petId}' });
  const base = h('input', { type: 'text', inputmode: 'url', placeholder: 'https://api.example.com/v1' });
  const out = h('div', { 'aria-live': 'polite' });
  file.addEventListener('change', async () => {
    if (file.files[0]) doc.value = await file.files[0].text();
  });

  async function send(dryRun) {
    const body = { document: doc.value, prefix: prefix.value.trim(), tags: list(tags.value), operations: list(ops.value), dry_run: dryRun };
    if (base.value.trim()) body.base_url = base.value.trim();
    clear(out, h('p', {}, dryRun ? 'Checking…' : 'Importing…'));
    try {
      const report = await post('/tools/import/openapi', body);
      clear(out, reportView(report));
      if (!dryRun) say(`Imported: ${report.created.length} created, ${report.updated.length} updated`);
    } catch (e) {
      clear(out, errorBox(e));
    }
  }

  const form = h('form', { class: 'card', onsubmit: (e) => { e.preventDefault(); send(false); } },
    field('Document file', file),
    field('OpenAPI document (JSON or YAML)', doc, 'OpenAPI 3.0 or 3.1. The server fetches no URL: paste the document or pick its file.'),
    field('Name prefix', prefix, 'Before every tool name; upper-cased before every secret name.'),
    field('Only tags', tags, 'Comma-separated; empty for all.'),
    field('Only operations', ops, 'operationId, METHOD /path or tool name; comma-separated.'),
    field('Base URL', base, "Where requests go, instead of the document's servers."),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => send(true) }, 'Dry run'),
      h('button', { type: 'submit' }, 'Import')));
  clear(main, h('div', { class: 'page-head' }, h('h1', {}, 'Import an OpenAPI document'), h('a', { href: '#/tools' }, 'Back to tools')),
    form, out);
}

function reportView(r) {
  const rows = [
    ...r.created.map((n) => ['created', h('a', { href: `#/tools/${encodeURIComponent(n)}` }, n), '']),
    ...r.updated.map((u) => ['updated', h('a', { href: `#/tools/${encodeURIComponent(u.name)}` }, u.name), `version ${u.version}: ${u.changed.join(', ')}`]),
    ...r.skipped.map((s) => ['skipped', s.operation, h('span', {}, h('code', {}, s.pointer || '/'), ' ', s.reason)]),
  ];
  return h('section', { class: 'card', id: 'import-report' },
    h('h2', {}, `${r.dry_run ? 'Dry run (nothing written): ' : ''}${r.created.length} created, ${r.updated.length} updated, ${r.unchanged.length} unchanged, ${r.skipped.length} skipped`),
    r.secrets.length ? h('p', {}, 'The tools send secrets: declare ', r.secrets.map((s) => `TOOLBELT_SECRET_${s}`).join(', ')) : null,
    rows.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list' },
      h('thead', {}, h('tr', {}, ['What', 'Tool or operation', 'Details'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((cells) => h('tr', {}, cells.map((c) => h('td', {}, c))))))) : null);
}
