// What the logged-in token may do, from GET /api/v1/whoami: its scopes and the agents it is
// limited to (ADR 0061). Pages hide what the server would refuse rather than ask and show
// the 403; the server still checks every request, this only spares the asking.

import { h } from './dom.js';

const RANK = { read: 1, run: 2, admin: 3 };
let who = { name: '', scopes: [], agents: null };

/** Keeps the answer of GET /whoami (called by the shell on each page). */
export function setWho(value) {
  who = { name: value?.name || '', scopes: value?.scopes || [], agents: value?.agents ?? null };
}

/** Whether the token holds `scope` ('read', 'run' or 'admin'; a higher one includes it). */
export function can(scope) {
  return who.scopes.some((s) => (RANK[s] || 0) >= RANK[scope]);
}

/** The agents the token is limited to, or null when it reaches every agent. */
export function limitedTo() {
  return who.agents;
}

/** Whether the token reaches what belongs to the whole server (statistics, tool admin, ...). */
export function wholeServer() {
  return who.agents === null;
}

/** The token's limits in a few words for the header ('' for an unlimited admin token). */
export function limitsText() {
  const parts = [];
  if (!can('admin')) parts.push(can('run') ? 'run scope' : 'read only');
  if (who.agents) parts.push(`limited to: ${who.agents.join(', ') || 'no agent'}`);
  return parts.join('; ');
}

/** The one line shown where a page, or part of it, covers the whole server. */
export function serverNotice(what = 'this page covers the whole server') {
  const agents = who.agents?.length ? `agent${who.agents.length > 1 ? 's' : ''} ${who.agents.join(', ')}` : 'no agent';
  return h('p', { class: 'notice', id: 'limited-notice' }, `This token is limited to ${agents}; ${what}.`);
}

/** The one line shown where a page needs a scope the token lacks. */
export function scopeNotice(scope) {
  return h('p', { class: 'notice', id: 'scope-notice' }, `This page needs a token with the ${scope} scope; this one has: ${who.scopes.join(', ') || 'none'}.`);
}
