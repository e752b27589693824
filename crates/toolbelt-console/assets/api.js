// The console's only way to the server: the public API under /api/v1, with the
// bearer token the user logged in with (kept in sessionStorage for this tab).

const KEY = 'toolbelt.token';

export function token() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(value) {
  if (value) sessionStorage.setItem(KEY, value);
  else sessionStorage.removeItem(KEY);
}

/** An answer other than 2xx: `problem` is the RFC 9457 document when there is one. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
  /** Field errors as [{pointer, message}], including the top-level pointer. */
  fields() {
    const out = [...(this.problem.errors || [])];
    if (this.problem.pointer && !out.some((e) => e.pointer === this.problem.pointer)) {
      out.push({ pointer: this.problem.pointer, message: this.problem.detail });
    }
    return out;
  }
}

function headers(extra = {}) {
  // `x-requested-with` marks the console's requests as scripted: the server refuses a
  // body-less POST without it (or a token), which is what a cross-site form would send.
  const h = { accept: 'application/json', 'x-requested-with': 'toolbelt-console', ...extra };
  const t = token();
  if (t) h.authorization = `Bearer ${t}`;
  return h;
}

/** Calls `path` (relative to /api/v1); returns the parsed JSON body (or null) and headers. */
export async function call(path, { method = 'GET', body, ifMatch, signal } = {}) {
  const extra = {};
  if (body !== undefined) extra['content-type'] = 'application/json';
  if (ifMatch) extra['if-match'] = ifMatch;
  const res = await fetch(`/api/v1${path}`, {
    method,
    headers: headers(extra),
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { detail: text };
    }
  }
  if (!res.ok) {
    if (res.status === 401) window.dispatchEvent(new CustomEvent('toolbelt:unauthorized'));
    throw new ApiError(res.status, data);
  }
  return { data, etag: res.headers.get('etag') };
}

export const get = async (path, opts) => (await call(path, opts)).data;
export const post = async (path, body, opts = {}) => (await call(path, { ...opts, method: 'POST', body })).data;

/** Every page of a cursor-paged list. */
export async function all(path, limit = 500) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = await get(`${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    items.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor);
  return items;
}

/**
 * Follows a run's events over SSE (fetch + a stream reader, since EventSource cannot send
 * the Authorization header). Calls `onEvent({id, type, data})` for each; resolves when the
 * stream ends. Reconnects after a dropped connection with Last-Event-ID.
 */
export async function followEvents(runId, onEvent, signal) {
  let last = 0;
  for (let attempt = 0; attempt < 5 && !signal.aborted; attempt++) {
    let ended = false;
    try {
      const h = headers({ accept: 'text/event-stream' });
      if (last) h['last-event-id'] = String(last);
      const res = await fetch(`/api/v1/runs/${encodeURIComponent(runId)}/events`, { headers: h, signal });
      if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let cut;
        while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, '');
          const ev = { id: null, type: 'message', data: '' };
          for (const line of block.split(/\r?\n/)) {
            if (line.startsWith(':')) continue;
            const i = line.indexOf(':');
            const field = i < 0 ? line : line.slice(0, i);
            const val = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
            if (field === 'event') ev.type = val;
            else if (field === 'id') ev.id = val;
            else if (field === 'data') ev.data += (ev.data ? '\n' : '') + val;
          }
          if (ev.id) last = Number(ev.id) || last;
          try {
            ev.data = ev.data ? JSON.parse(ev.data) : null;
          } catch {
            /* keep the text */
          }
          // Run events come as the whole RunEvent ({seq, type, data}); unwrap to its fields.
          if (ev.data && typeof ev.data === 'object' && 'seq' in ev.data && 'data' in ev.data) ev.data = ev.data.data;
          onEvent(ev);
          if (['finished', 'failed', 'cancelled', 'shutdown', 'end'].includes(ev.type)) ended = true;
        }
      }
      return;
    } catch (e) {
      if (signal.aborted || e instanceof ApiError) throw e;
      if (ended) return;
      await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
    }
  }
}

/**
 * Starts a run of `agent` and resolves with its id as soon as the server has made it: the
 * SSE answer's first event (`started`) names the run, then this stream is dropped (the run
 * belongs to the server; a disconnect cancels nothing) and the run page follows it.
 */
export async function startRun(agent, input) {
  const controller = new AbortController();
  const res = await fetch(`/api/v1/agents/${encodeURIComponent(agent)}/runs`, {
    method: 'POST',
    headers: headers({ accept: 'text/event-stream', 'content-type': 'application/json' }),
    body: JSON.stringify({ input }),
    signal: controller.signal,
  });
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const m = buffer.match(/"run_id"\s*:\s*"([^"]+)"/);
      if (m) return m[1];
    }
  } finally {
    controller.abort();
  }
  throw new Error('the server ended the run stream before naming the run');
}
