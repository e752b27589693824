// Forms generated from a tool's JSON schema, validated in the browser (errors shown at
// the field) before the server checks them again; and a readable rendering of a schema.

import { h, field, setFieldError } from './dom.js';

function typeOf(schema) {
  let t = schema?.type;
  if (Array.isArray(t)) t = t.find((x) => x !== 'null') || t[0];
  if (!t && schema?.enum) t = typeof schema.enum[0];
  if (!t && schema?.properties) t = 'object';
  return t || 'any';
}

/** A table of the schema's properties: name, type, required, description, constraints. */
export function renderSchema(schema) {
  const props = schema?.properties || {};
  const required = new Set(schema?.required || []);
  const names = Object.keys(props);
  if (!names.length) return h('p', { class: 'muted' }, 'No parameters.');
  return h('table', { class: 'schema' },
    h('caption', { class: 'sr-only' }, 'Parameters'),
    h('thead', {}, h('tr', {}, ['Name', 'Type', 'Required', 'Description'].map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, names.map((n) => {
      const p = props[n];
      const notes = [];
      if (p.enum) notes.push(`one of ${p.enum.map((e) => JSON.stringify(e)).join(', ')}`);
      if (p.default !== undefined) notes.push(`default ${JSON.stringify(p.default)}`);
      for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format']) {
        if (p[k] !== undefined) notes.push(`${k} ${p[k]}`);
      }
      let type = typeOf(p);
      if (type === 'array' && p.items) type = `array of ${typeOf(p.items)}`;
      return h('tr', {},
        h('th', { scope: 'row' }, h('code', {}, n)),
        h('td', {}, type),
        h('td', {}, required.has(n) ? 'yes' : 'no'),
        h('td', {}, p.description || '', notes.length ? h('div', { class: 'muted' }, notes.join('; ')) : null));
    })));
}

/**
 * Builds a form for `schema`'s properties. Returns {form, controls, read()} where read()
 * returns {value, errors}: errors is [{pointer, message}] found in the browser.
 */
export function schemaForm(schema, { idPrefix = 'arg' } = {}) {
  const props = schema?.properties || {};
  const required = new Set(schema?.required || []);
  const controls = {};
  const fields = [];
  for (const [name, p] of Object.entries(props)) {
    const type = typeOf(p);
    const id = `${idPrefix}-${name}`;
    let control;
    if (p.enum) {
      control = h('select', { id, name },
        required.has(name) ? null : h('option', { value: '' }, '(none)'),
        p.enum.map((e) => h('option', { value: JSON.stringify(e) }, String(e))));
    } else if (type === 'boolean') {
      control = h('select', { id, name },
        required.has(name) ? null : h('option', { value: '' }, '(none)'),
        h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
    } else if (type === 'integer' || type === 'number') {
      control = h('input', { id, name, type: 'number', step: type === 'integer' ? '1' : 'any', inputmode: 'decimal' });
    } else if (type === 'string') {
      control = (p.maxLength ?? 0) > 200 || /^(body|content|code|script|query_text)$/i.test(name)
        ? h('textarea', { id, name, rows: 3 })
        : h('input', { id, name, type: 'text' });
    } else {
      control = h('textarea', { id, name, rows: 3, class: 'mono', placeholder: type === 'array' ? '["…"]' : '{…}' });
    }
    if (p.default !== undefined) control.value = p.enum || type === 'boolean' ? JSON.stringify(p.default) : (typeof p.default === 'string' ? p.default : JSON.stringify(p.default));
    if (required.has(name)) control.setAttribute('aria-required', 'true');
    controls[name] = control;
    const label = `${name}${required.has(name) ? ' *' : ''} (${type})`;
    fields.push(field(label, control, p.description));
  }
  const form = h('div', { class: 'schema-form' }, fields.length ? fields : h('p', { class: 'muted' }, 'This tool takes no arguments.'));

  function read() {
    const value = {};
    const errors = [];
    for (const [name, control] of Object.entries(controls)) {
      const p = props[name];
      const type = typeOf(p);
      const raw = control.value.trim();
      const pointer = `/${name}`;
      if (raw === '') {
        if (required.has(name)) errors.push({ pointer, message: 'required' });
        continue;
      }
      let v;
      if (p.enum || type === 'boolean') v = JSON.parse(raw);
      else if (type === 'integer' || type === 'number') {
        v = Number(raw);
        if (!Number.isFinite(v)) { errors.push({ pointer, message: 'must be a number' }); continue; }
        if (type === 'integer' && !Number.isInteger(v)) { errors.push({ pointer, message: 'must be a whole number' }); continue; }
        if (p.minimum !== undefined && v < p.minimum) errors.push({ pointer, message: `must be ≥ ${p.minimum}` });
        if (p.maximum !== undefined && v > p.maximum) errors.push({ pointer, message: `must be ≤ ${p.maximum}` });
      } else if (type === 'string') {
        v = control.value;
        if (p.minLength !== undefined && v.length < p.minLength) errors.push({ pointer, message: `at least ${p.minLength} characters` });
        if (p.maxLength !== undefined && v.length > p.maxLength) errors.push({ pointer, message: `at most ${p.maxLength} characters` });
        // `pattern` is not compiled here: it comes from a tool's schema (a remote MCP server's
        // included), and a backtracking pattern could hang the page (ReDoS). The server checks
        // it (fancy-regex, whose backtracking is bounded) and answers with the pointer.
      } else {
        try {
          v = JSON.parse(raw);
        } catch (e) {
          errors.push({ pointer, message: `not valid JSON: ${e.message}` });
          continue;
        }
        if (type === 'array' && !Array.isArray(v)) errors.push({ pointer, message: 'must be a JSON array' });
        if (type === 'object' && (typeof v !== 'object' || v === null || Array.isArray(v))) errors.push({ pointer, message: 'must be a JSON object' });
      }
      value[name] = v;
    }
    return { value, errors };
  }

  /** Shows `errors` ([{pointer, message}]) at their fields; returns those without a field. */
  function showErrors(errors) {
    for (const c of Object.values(controls)) setFieldError(c, '');
    const rest = [];
    for (const e of errors) {
      const name = (e.pointer || '').replace(/^\/(arguments\/)?/, '').split('/')[0];
      if (controls[name]) setFieldError(controls[name], e.message);
      else rest.push(e);
    }
    return rest;
  }

  return { form, controls, read, showErrors };
}
