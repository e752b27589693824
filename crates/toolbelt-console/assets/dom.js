// Small DOM helpers: build elements without innerHTML (no injection from data).

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k in el && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let toastTimer;
/** Announces `text` in the live region (screen readers read it). */
export function say(text, kind = 'info') {
  const box = document.getElementById('status');
  box.textContent = text;
  box.dataset.kind = kind;
  box.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (box.hidden = true), kind === 'error' ? 8000 : 3500);
}

export function errorBox(err) {
  const fields = err.fields ? err.fields() : [];
  return h('div', { class: 'error', role: 'alert' },
    h('strong', {}, err.problem?.title || 'Error'), ': ', err.message,
    err.problem?.code ? h('code', { class: 'code' }, ` ${err.problem.code}`) : null,
    fields.length ? h('ul', {}, fields.map((f) => h('li', {}, h('code', {}, f.pointer || '/'), ' ', f.message))) : null,
    err.problem?.nearest?.length ? h('p', {}, 'Did you mean: ', err.problem.nearest.join(', ')) : null);
}

export function ms(n) {
  if (n === null || n === undefined) return '–';
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(1)} s`;
  return `${Math.floor(n / 60000)} min ${Math.round((n % 60000) / 1000)} s`;
}

// One formatter each: `toLocaleString` builds a new one per call, which cost ~0.1 ms each
// and over a hundred ms on a page of a few hundred rows.
const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
const numberFormat = new Intl.NumberFormat();

export function when(msEpoch) {
  if (!msEpoch) return '–';
  return dateFormat.format(new Date(msEpoch));
}

export function num(n) {
  return numberFormat.format(n ?? 0);
}

export function pre(value) {
  return h('pre', { class: 'json' }, typeof value === 'string' ? value : JSON.stringify(value, null, 2));
}

export function badge(text, kind = '') {
  return h('span', { class: `badge ${kind}` }, text);
}

const STATUS_KIND = { succeeded: 'ok', running: 'info', waiting: 'warn', failed: 'bad', cancelled: 'bad', interrupted: 'warn' };
/** A run's status as a badge coloured by what it means. */
export const statusBadge = (s) => badge(s, STATUS_KIND[s] || '');

/** A labelled form control. */
export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const err = h('p', { class: 'field-error', id: `${id}-err`, hidden: true });
  control.setAttribute('aria-describedby', `${id}-err${hint ? ` ${id}-hint` : ''}`);
  return h('div', { class: 'field' },
    h('label', { for: id }, label), control,
    hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : null, err);
}

/** Shows (or clears, with '') an error under a control made by `field`. */
export function setFieldError(control, message) {
  const err = document.getElementById(`${control.id}-err`);
  if (!err) return;
  err.textContent = message || '';
  err.hidden = !message;
  control.setAttribute('aria-invalid', message ? 'true' : 'false');
}

export function debounce(fn, wait = 250) {
  let t;
  return (...a) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...a), wait);
  };
}

/** Copies each column's header into its cells' data-label (phone layout shows it). */
export function labelCells(table) {
  const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
  for (const tr of table.querySelectorAll('tbody tr')) {
    [...tr.children].forEach((cell, i) => {
      if (heads[i]) cell.dataset.label = heads[i];
    });
  }
}
