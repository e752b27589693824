// Runs: the list (status, agent, duration, tokens) and a run's page, live over SSE:
// messages, the routing decision, tool calls with arguments and results, approvals
// (approve / edit / reject) and questions (answer).

import { can } from '../access.js';
import { ApiError, followEvents, get, post } from '../api.js';
import { badge, clear, errorBox, field, h, labelCells, ms, num, pre, say, statusBadge, when } from '../dom.js';

const duration = (r) => (r.finished_at_ms ? r.finished_at_ms - r.created_at_ms : Date.now() - r.created_at_ms);

export async function runList(main) {
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  const agents = await get('/agents');
  const agent = h('select', { id: 'runs-agent' }, h('option', { value: '' }, 'any'), agents.map((a) => h('option', { value: a.name }, a.name)));
  const status = h('select', { id: 'runs-status' }, h('option', { value: '' }, 'any'),
    ['running', 'waiting', 'succeeded', 'failed', 'cancelled', 'interrupted'].map((s) => h('option', { value: s }, s)));
  agent.value = params.get('agent') || '';
  status.value = params.get('status') || '';
  const tbody = h('tbody');
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Older runs');
  const count = h('p', { class: 'muted', 'aria-live': 'polite' });
  let cursor = null;
  let shown = 0;

  async function load(reset) {
    if (reset) {
      tbody.replaceChildren();
      cursor = null;
      shown = 0;
    }
    const q = new URLSearchParams({ limit: '100' });
    if (agent.value) q.set('agent', agent.value);
    if (status.value) q.set('status', status.value);
    if (cursor) q.set('cursor', cursor);
    const page = await get(`/runs?${q}`);
    cursor = page.next_cursor;
    shown += page.items.length;
    tbody.append(...page.items.map((r) => h('tr', {},
      h('th', { scope: 'row' }, h('a', { href: `#/runs/${encodeURIComponent(r.id)}` }, r.id)),
      h('td', {}, statusBadge(r.status), r.pending_approvals?.length ? badge(`${r.pending_approvals.length} to approve`, 'warn') : null),
      h('td', {}, h('a', { href: `#/agents/${encodeURIComponent(r.agent)}` }, r.agent)),
      h('td', { class: 'desc' }, r.input),
      h('td', {}, when(r.created_at_ms)),
      h('td', { class: 'num' }, ms(duration(r))),
      h('td', { class: 'num' }, num(r.usage.input_tokens + r.usage.output_tokens)))));
    labelCells(tbody.closest('table'));
    more.hidden = !cursor;
    count.textContent = `${shown} runs shown${cursor ? ' (more below)' : ''}`;
  }
  for (const c of [agent, status]) c.addEventListener('change', () => load(true).catch((e) => say(e.message, 'error')));
  more.addEventListener('click', () => load(false).catch((e) => say(e.message, 'error')));
  clear(main, h('h1', {}, 'Runs'),
    h('form', { class: 'filters', onsubmit: (e) => e.preventDefault() }, field('Agent', agent), field('Status', status)),
    count,
    h('div', { class: 'table-wrap' }, h('table', { class: 'list', id: 'runs-table' },
      h('thead', {}, h('tr', {}, ['Run', 'Status', 'Agent', 'Input', 'Started', 'Duration', 'Tokens'].map((c) => h('th', { scope: 'col' }, c)))),
      tbody)),
    more);
  await load(true);
}

function approvalCard(a, refresh) {
  const args = h('textarea', { id: `args-${a.id}`, rows: 4, class: 'mono' }, JSON.stringify(a.arguments, null, 2));
  const reason = h('input', { type: 'text', id: `reason-${a.id}` });
  const out = h('div');
  async function decide(decision) {
    const body = { decision };
    if (decision === 'edit') {
      try {
        body.arguments = JSON.parse(args.value);
      } catch (e) {
        out.replaceChildren(h('p', { class: 'error', role: 'alert' }, `The arguments are not valid JSON: ${e.message}`));
        return;
      }
    }
    if (decision === 'reject' && reason.value.trim()) body.reason = reason.value.trim();
    try {
      await post(`/approvals/${encodeURIComponent(a.id)}`, body);
      say(`${decision === 'approve' ? 'Approved' : decision === 'edit' ? 'Approved with edits' : 'Rejected'}: ${a.tool}.`);
      refresh();
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  }
  return h('section', { class: 'card approval', 'aria-label': `Approval for ${a.tool}`, dataset: { approval: a.id } },
    h('h3', {}, `${a.tool} wants to run`), h('p', { class: 'muted' }, a.description),
    field('Arguments (edit, then "Approve with edits")', args),
    field('Reason (for a rejection)', reason),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'approve', onclick: () => decide('approve') }, 'Approve'),
      h('button', { type: 'button', class: 'secondary', onclick: () => decide('edit') }, 'Approve with edits'),
      h('button', { type: 'button', class: 'danger', onclick: () => decide('reject') }, 'Reject')),
    out);
}

function questionCard(q, refresh) {
  const answer = q.choices.length
    ? h('select', { id: `answer-${q.id}` }, q.choices.map((c) => h('option', { value: c }, c)))
    : h('input', { type: 'text', id: `answer-${q.id}` });
  const out = h('div');
  const form = h('form', { class: 'card question' }, h('h3', {}, 'The agent asks'), h('p', {}, q.question), field('Answer', answer),
    h('button', { type: 'submit' }, 'Answer'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      await post(`/questions/${encodeURIComponent(q.id)}/answer`, { answer: answer.value });
      say('Answered.');
      refresh();
    } catch (e) {
      out.replaceChildren(errorBox(e));
    }
  });
  return form;
}

function renderEvent(ev) {
  const d = ev.data || {};
  switch (ev.type) {
    case 'started':
      return h('li', { class: 'ev' }, badge('started'), ` input: ${d.input ?? ''}`);
    case 'routed':
      return h('li', { class: 'ev routed' }, badge('routed', 'info'), ' ',
        (d.tools || []).map((t) => h('span', { class: 'tag' }, `${t.name} ${Number(t.score).toFixed(2)}`)),
        d.groups?.length ? ` groups: ${d.groups.join(', ')}` : '', d.fallback ? badge('fallback', 'warn') : null);
    case 'text_delta':
      return null;
    case 'model_turn':
      return h('li', { class: 'ev' }, badge(`model turn ${d.iteration}`), d.tool_calls?.length ? ` asks for ${d.tool_calls.map((c) => c.name).join(', ')}` : ' answers');
    case 'tool_call_started':
      return h('li', { class: 'ev' }, badge('call', 'info'), ' ', h('code', {}, d.name), h('details', {}, h('summary', {}, 'arguments'), pre(d.arguments)));
    case 'tool_progress':
      return h('li', { class: 'ev' }, badge('progress'), ' ', h('code', {}, d.tool),
        ` ${num(d.progress)}${d.total != null ? ` of ${num(d.total)}` : ''}${d.message ? `: ${d.message}` : ''}`);
    case 'call_merged':
      return h('li', { class: 'ev' }, badge('merged', 'info'), ' ', h('code', {}, d.call?.name),
        ` repeated in the same turn: not run again, it shares the result of ${d.same_as}`);
    case 'tool_call_finished':
      return h('li', { class: 'ev' }, badge(d.ok ? 'result' : 'error', d.ok ? 'ok' : 'bad'), ' ', h('code', {}, d.call?.name), ` in ${ms(d.duration_ms)}`,
        pre(d.ok ? (d.output?.json ?? d.output?.text ?? '') : d.error?.message));
    case 'approval_requested':
      return h('li', { class: 'ev' }, badge('approval requested', 'warn'), ' ', h('code', {}, d.tool), pre(d.arguments));
    case 'approval_resolved':
      return h('li', { class: 'ev' }, badge(`approval: ${d.decision}`, d.decision === 'reject' ? 'bad' : 'ok'));
    case 'question_asked':
      return h('li', { class: 'ev' }, badge('question', 'warn'), ` ${d.question ?? ''}`);
    case 'question_answered':
      return h('li', { class: 'ev' }, badge('answered', 'ok'));
    case 'finished':
    case 'failed':
    case 'cancelled':
      return h('li', { class: 'ev' }, badge(ev.type, ev.type === 'finished' ? 'ok' : 'bad'), d.error ? ` ${d.error}` : '',
        d.usage ? ` — ${num(d.usage.input_tokens)} in, ${num(d.usage.output_tokens)} out` : '');
    default:
      return h('li', { class: 'ev' }, badge(ev.type), d ? pre(d) : null);
  }
}

function renderMessage(m) {
  if (m.role === 'tool') {
    return h('li', { class: `msg tool${m.is_error ? ' bad' : ''}` }, h('span', { class: 'role' }, `tool ${m.name}`), pre(m.content));
  }
  return h('li', { class: `msg ${m.role}` }, h('span', { class: 'role' }, m.role),
    m.content ? h('div', { class: 'content' }, m.content) : null,
    (m.tool_calls || []).map((c) => h('div', { class: 'call' }, 'calls ', h('code', {}, c.name), pre(c.arguments))));
}

export async function runPage(main, id) {
  const enc = encodeURIComponent(id);
  const controller = new AbortController();
  const head = h('div', { class: 'page-head' }, h('h1', {}, `Run ${id}`));
  const facts = h('dl', { class: 'facts', id: 'run-facts' });
  const pending = h('div', { id: 'pending' });
  const live = h('p', { class: 'answer', id: 'live-text', 'aria-live': 'polite' });
  const events = h('ol', { class: 'events', id: 'events' });
  const transcript = h('ol', { class: 'messages', id: 'transcript' });
  const cont = h('textarea', { id: 'continue-input', rows: 2 });
  const contForm = h('form', { class: 'card', id: 'continue-form', hidden: true }, field('Continue the conversation', cont), h('button', { type: 'submit' }, 'Continue'));
  contForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await post(`/runs/${enc}/continue`, { input: cont.value });
      location.hash = `#/runs/${encodeURIComponent(r.id)}`;
    } catch (e) {
      say(e.message, 'error');
    }
  });
  const cancel = h('button', { type: 'button', class: 'danger', hidden: true, onclick: async () => {
    try { await post(`/runs/${enc}/cancel`); say('Cancel requested.'); } catch (e) { say(e.message, 'error'); }
  } }, 'Cancel run');
  head.append(cancel);

  // A card stays the same element while its approval or question waits: a refresh (any event
  // triggers one) must not reset a choice or an edit the person is making.
  const cards = new Map();
  // Answering needs the run scope: a read-only token sees what waits, without the buttons.
  const answers = can('run');
  const waiting = (text) => h('p', { class: 'card muted' }, `${text} (a token with the run scope answers it).`);
  function showPending(r) {
    const wanted = [
      ...r.pending_approvals.map((a) => [`a:${a.id}`, () => (answers ? approvalCard(a, refresh) : waiting(`${a.tool} waits for approval`))]),
      ...r.pending_questions.map((q) => [`q:${q.id}`, () => (answers ? questionCard(q, refresh) : waiting(`The agent asks: ${q.question}`))]),
    ];
    const keys = new Set(wanted.map(([k]) => k));
    for (const k of [...cards.keys()]) if (!keys.has(k)) cards.delete(k);
    const same = wanted.length === pending.children.length
      && wanted.every(([k], i) => cards.get(k) === pending.children[i]);
    if (same) return;
    clear(pending, wanted.map(([k, make]) => {
      if (!cards.has(k)) cards.set(k, make());
      return cards.get(k);
    }));
  }

  let refreshing = null;
  let again = false;
  /** Re-reads the run; a call made while one is in flight runs once more after it. */
  async function refresh() {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      const r = await get(`/runs/${enc}`);
      clear(facts,
        h('dt', {}, 'Status'), h('dd', { id: 'run-status' }, statusBadge(r.status)),
        h('dt', {}, 'Agent'), h('dd', {}, h('a', { href: `#/agents/${encodeURIComponent(r.agent)}` }, r.agent)),
        h('dt', {}, 'Input'), h('dd', {}, r.input),
        h('dt', {}, 'Started'), h('dd', {}, when(r.created_at_ms)),
        h('dt', {}, 'Duration'), h('dd', {}, ms(duration(r))),
        h('dt', {}, 'Tokens'), h('dd', {}, `${num(r.usage.input_tokens)} in, ${num(r.usage.output_tokens)} out`),
        r.parent_run ? [h('dt', {}, 'Continues'), h('dd', {}, h('a', { href: `#/runs/${encodeURIComponent(r.parent_run)}` }, r.parent_run))] : null,
        r.answer ? [h('dt', {}, 'Answer'), h('dd', { id: 'run-answer' }, r.answer)] : null,
        r.error ? [h('dt', {}, 'Error'), h('dd', { class: 'error' }, r.error)] : null);
      showPending(r);
      clear(transcript, r.messages.length ? r.messages.map(renderMessage) : h('li', { class: 'muted' }, 'No messages recorded yet; the events on the left are live.'));
      const terminal = !['running', 'waiting'].includes(r.status);
      cancel.hidden = terminal || !answers;
      contForm.hidden = !terminal || !answers;
      if (terminal) live.textContent = '';
      main.dataset.runStatus = r.status;
      return r;
    })().finally(() => {
      refreshing = null;
      if (again) {
        again = false;
        refresh().catch(() => {});
      }
    });
    return refreshing;
  }

  clear(main, head, facts, pending, live,
    h('div', { class: 'grid2' },
      h('section', { 'aria-labelledby': 'ev-h' }, h('h2', { id: 'ev-h' }, 'Events'), events),
      h('section', { 'aria-labelledby': 'tr-h' }, h('h2', { id: 'tr-h' }, 'Transcript'), transcript)),
    contForm);

  const first = await refresh();
  const streaming = ['running', 'waiting'].includes(first.status);
  if (!streaming) {
    clear(events, first.events.map((e) => renderEvent({ type: e.type, data: e.data })));
    return () => controller.abort();
  }
  main.dataset.live = 'true';
  followEvents(id, (ev) => {
    if (ev.type === 'text_delta') {
      live.textContent += ev.data?.text || '';
      return;
    }
    const li = renderEvent(ev);
    if (li) events.append(li);
    if (['approval_requested', 'approval_resolved', 'question_asked', 'question_answered', 'tool_call_finished', 'finished', 'failed', 'cancelled'].includes(ev.type)) {
      refresh().catch(() => {});
    }
  }, controller.signal).then(() => refresh()).catch((e) => {
    if (!controller.signal.aborted) {
      if (e instanceof ApiError && e.status === 404) clear(events, first.events.map((x) => renderEvent({ type: x.type, data: x.data })));
      else say(`The event stream stopped: ${e.message}`, 'error');
    }
  }).finally(() => { main.dataset.live = 'false'; });
  return () => controller.abort();
}

