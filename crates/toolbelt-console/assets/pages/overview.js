// Overview: calls, errors and latency per tool over time, routing fallbacks and tokens per
// agent, from GET /api/v1/stats; charts drawn by the vendored uPlot, each with a table
// twin for screen readers and keyboard users. A token limited to agents is refused the
// statistics (they cover the whole server): it gets its agents and their latest runs instead.

import { serverNotice, wholeServer } from '../access.js';
import { get } from '../api.js';
import { clear, field, h, num, statusBadge, when } from '../dom.js';

const COLORS = ['#2f5d8a', '#c0392b', '#27ae60', '#8e44ad', '#d35400', '#16a085', '#7f8c8d', '#b7950b'];
let uPlotModule = null;

async function uPlot() {
  if (!uPlotModule) {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = '/console/vendor/uPlot.min.css';
    document.head.append(css);
    uPlotModule = (await import('../vendor/uPlot.esm.js')).default;
  }
  return uPlotModule;
}

function chart(U, el, width, title, xs, series, yLabel) {
  const opts = {
    title,
    width,
    height: 220,
    scales: { x: { time: true } },
    axes: [{}, { label: yLabel, size: 60 }],
    series: [{}, ...series.map((s, i) => ({ label: s.label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true, size: 5 } }))],
  };
  const plot = new U(opts, [xs.map((x) => x / 1000), ...series.map((s) => s.values)], el);
  return plot;
}

/** The overview of a token limited to agents, from the lists it reaches (filtered by the server). */
async function limitedOverview(main) {
  const [agents, runs] = await Promise.all([get('/agents'), get('/runs?limit=10')]);
  clear(main, h('h1', {}, 'Overview'),
    serverNotice('the statistics cover the whole server, so this page lists its agents and their latest runs'),
    h('section', { 'aria-labelledby': 'my-agents-h' }, h('h2', { id: 'my-agents-h' }, 'Agents'),
      agents.length ? h('ul', { id: 'overview-agents' }, agents.map((a) => h('li', {},
        h('a', { href: `#/agents/${encodeURIComponent(a.name)}` }, a.name), a.description ? ` — ${a.description}` : '')))
        : h('p', { class: 'muted' }, 'None of its agents exists on this server yet.')),
    h('section', { 'aria-labelledby': 'my-runs-h' }, h('h2', { id: 'my-runs-h' }, 'Latest runs'),
      runs.items.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'overview-runs' },
        h('thead', {}, h('tr', {}, ['Run', 'Status', 'Agent', 'Started'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, runs.items.map((r) => h('tr', {},
          h('th', { scope: 'row' }, h('a', { href: `#/runs/${encodeURIComponent(r.id)}` }, r.id)),
          h('td', {}, statusBadge(r.status)), h('td', {}, r.agent), h('td', {}, when(r.created_at_ms)))))))
        : h('p', { class: 'muted' }, 'No runs yet.')));
}

export async function overview(main) {
  if (!wholeServer()) return limitedOverview(main);
  const windowSel = h('select', { id: 'stats-window' },
    h('option', { value: '60' }, 'last hour'), h('option', { value: '1440' }, 'last day'), h('option', { value: '10080' }, 'last week'));
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  windowSel.value = params.get('minutes') || '1440';
  const body = h('div');
  windowSel.addEventListener('change', () => { location.hash = `#/?minutes=${windowSel.value}`; });
  clear(main, h('div', { class: 'page-head' }, h('h1', {}, 'Overview'),
    h('form', { class: 'filters inline', onsubmit: (e) => e.preventDefault() }, field('Window', windowSel))), body);

  const [stats, U] = await Promise.all([get(`/stats?minutes=${windowSel.value}&top=6`), uPlot()]);
  const buckets = [];
  for (let t = stats.since_ms; t <= Date.now(); t += stats.bucket_ms) buckets.push(t);
  const idx = new Map(buckets.map((b, i) => [b, i]));
  const top = [...new Set(stats.tools.map((b) => b.tool))].slice(0, 6);
  const mk = () => buckets.map(() => null);
  const zeros = () => buckets.map(() => 0); // no call in a bucket is a count of 0
  const calls = new Map(top.map((t) => [t, zeros()]));
  const errors = new Map(top.map((t) => [t, zeros()]));
  const latency = new Map(top.map((t) => [t, mk()])); // no call: no latency (a gap)
  const perTool = new Map();
  for (const b of stats.totals) perTool.set(b.tool, { calls: b.calls, errors: b.errors, total: b.mean_ms * b.calls, max: b.max_ms });
  for (const b of stats.tools) {
    const i = idx.get(b.at_ms);
    if (i === undefined || !calls.has(b.tool)) continue;
    calls.get(b.tool)[i] = b.calls;
    errors.get(b.tool)[i] = b.errors;
    latency.get(b.tool)[i] = b.mean_ms;
  }
  const decisions = zeros();
  const fallbacks = zeros();
  for (const r of stats.routes) {
    const i = idx.get(r.at_ms);
    if (i !== undefined) { decisions[i] = r.decisions; fallbacks[i] = r.fallbacks; }
  }

  const charts = h('div', { class: 'charts' });
  const boxes = ['calls', 'errors', 'latency', 'routes'].map((k) => h('figure', { class: 'chart', id: `chart-${k}` }));
  charts.append(...boxes);
  const totalCalls = [...perTool.values()].reduce((a, r) => a + r.calls, 0);
  const totalErrors = [...perTool.values()].reduce((a, r) => a + r.errors, 0);
  const totalFallbacks = stats.routes.reduce((a, r) => a + r.fallbacks, 0);
  const totalDecisions = stats.routes.reduce((a, r) => a + r.decisions, 0);
  const maxTokens = Math.max(1, ...stats.agents.map((a) => a.input_tokens + a.output_tokens));

  clear(body,
    h('ul', { class: 'kpis' },
      h('li', {}, h('strong', {}, `${num(totalCalls)}${stats.totals.length >= 300 ? '+' : ''}`), ' tool calls'),
      h('li', {}, h('strong', {}, num(totalErrors)), ' errors'),
      h('li', {}, h('strong', {}, num(totalFallbacks)), ` routing fallbacks of ${num(totalDecisions)}`),
      h('li', {}, h('strong', {}, num(stats.agents.reduce((a, x) => a + x.runs, 0))), ' runs')),
    totalCalls || totalDecisions ? charts : h('p', { class: 'muted' }, 'No tool calls or routing decisions in this window yet. Call a tool or run an agent and they appear here.'),
    h('section', { 'aria-labelledby': 'tok-h' }, h('h2', { id: 'tok-h' }, 'Tokens per agent'),
      stats.agents.length ? h('table', { class: 'list', id: 'tokens-table' },
        h('thead', {}, h('tr', {}, ['Agent', 'Runs', 'Input', 'Output', ''].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, stats.agents.map((a) => h('tr', {},
          h('th', { scope: 'row' }, h('a', { href: `#/agents/${encodeURIComponent(a.agent)}` }, a.agent)),
          h('td', { class: 'num' }, num(a.runs)), h('td', { class: 'num' }, num(a.input_tokens)), h('td', { class: 'num' }, num(a.output_tokens)),
          h('td', { class: 'bar-cell' }, h('span', { class: 'bar', style: `width:${(100 * (a.input_tokens + a.output_tokens)) / maxTokens}%` })))))) : h('p', { class: 'muted' }, 'No runs in this window.')),
    h('section', { 'aria-labelledby': 'pt-h' }, h('h2', { id: 'pt-h' }, 'Calls per tool'),
      stats.totals.length >= 300 ? h('p', { class: 'muted' }, 'The 300 most called tools.') : null,
      perTool.size ? h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'tool-stats' },
        h('thead', {}, h('tr', {}, ['Tool', 'Calls', 'Errors', 'Mean latency', 'Max latency'].map((c) => h('th', { scope: 'col' }, c)))),
        h('tbody', {}, [...perTool].sort((a, b) => b[1].calls - a[1].calls).map(([t, r]) => h('tr', {},
          h('th', { scope: 'row' }, h('a', { href: `#/tools/${encodeURIComponent(t)}` }, t)),
          h('td', { class: 'num' }, num(r.calls)), h('td', { class: 'num' }, num(r.errors)),
          h('td', { class: 'num' }, `${(r.total / r.calls).toFixed(1)} ms`), h('td', { class: 'num' }, `${num(r.max)} ms`)))))) : h('p', { class: 'muted' }, 'No tool calls in this window.')),
    h('p', { class: 'muted small' }, 'Tool calls and tokens come from the stored run log; routing decisions are counted by this server process since it started.'));

  if (totalCalls || totalDecisions) {
    const series = (m) => top.map((t) => ({ label: t, values: m.get(t) }));
    // Read the layout once: reading `clientWidth` after each chart forced a reflow per chart.
    const width = Math.max(280, Math.min(boxes[0].clientWidth || 600, 900));
    chart(U, boxes[0], width, 'Calls per tool', buckets, series(calls), 'calls');
    chart(U, boxes[1], width, 'Errors per tool', buckets, series(errors), 'errors');
    chart(U, boxes[2], width, 'Mean latency per tool', buckets, series(latency), 'ms');
    chart(U, boxes[3], width, 'Routing decisions and fallbacks', buckets, [{ label: 'decisions', values: decisions }, { label: 'fallbacks', values: fallbacks }], 'count');
    boxes.forEach((b, i) => b.setAttribute('aria-label', ['Calls per tool over time', 'Errors per tool over time', 'Mean latency per tool over time', 'Routing decisions and fallbacks over time'][i] + ' (the tables below hold the same figures)'));
  }
}
