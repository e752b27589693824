// What the browser tests run against: the real `toolbelt` binary on a fresh SQLite file,
// a scripted OpenAI-compatible model on 127.0.0.1, and Debian's Chromium.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CHROMIUM_FLAGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function chunk(delta, finish = null, usage = null) {
  return `data: ${JSON.stringify({ id: 's', model: 'scripted', choices: [{ index: 0, delta, finish_reason: finish }], usage })}\n\n`;
}

/**
 * A scripted OpenAI-compatible model: when the last message is a tool result it answers
 * with text quoting it; otherwise it calls `ask_human` when the user wrote "ask me", and
 * `tool` with `args` else. Streams like the real API.
 */
export async function scriptedModel(tool, args) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      let json = {};
      try { json = JSON.parse(body); } catch { /* keep {} */ }
      requests.push(json);
      const last = (json.messages || []).at(-1) || {};
      let out;
      if (last.role === 'tool') {
        out = chunk({ role: 'assistant', content: 'The tool said: ' }) + chunk({ content: String(last.content).trim() })
          + chunk({}, 'stop') + `data: ${JSON.stringify({ id: 's', model: 'scripted', choices: [], usage: { prompt_tokens: 42, completion_tokens: 7 } })}\n\n`;
      } else {
        const asks = (json.messages || []).some((m) => m.role === 'user' && String(m.content).includes('ask me'));
        const call = asks
          ? { index: 0, id: 'call_q', type: 'function', function: { name: 'ask_human', arguments: JSON.stringify({ question: 'Which colour?', choices: ['red', 'blue'] }) } }
          : { index: 0, id: 'call_1', type: 'function', function: { name: tool, arguments: JSON.stringify(args) } };
        out = chunk({ role: 'assistant', tool_calls: [call] }) + chunk({}, 'tool_calls')
          + `data: ${JSON.stringify({ id: 's', model: 'scripted', choices: [], usage: { prompt_tokens: 30, completion_tokens: 5 } })}\n\n`;
      }
      out += 'data: [DONE]\n\n';
      res.writeHead(200, { 'content-type': 'text/event-stream', 'content-length': Buffer.byteLength(out) });
      res.end(out);
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, requests, close: () => server.close() };
}

export function toolbeltBinary() {
  const bin = process.env.TOOLBELT_BIN || join(process.cwd(), 'target', 'debug', 'toolbelt');
  if (!existsSync(bin)) throw new Error(`no toolbelt binary at ${bin}; build it (cargo build -p toolbelt) or set TOOLBELT_BIN`);
  return bin;
}

/**
 * Creates a token with `toolbelt tokens create NAME ...args` (e.g. `--scope run --agent A`)
 * in the database at `db`; returns its secret. The server reads tokens from the database, so
 * this works while it runs.
 */
export function createToken(db, name, ...args) {
  const out = execFileSync(toolbeltBinary(), ['tokens', 'create', name, ...args, '--database-url', db], { encoding: 'utf8' });
  return out.trim().split(/\s+/).pop();
}

/** Starts `toolbelt serve` on a fresh database; returns {url, token, dir, stop()}. */
export async function startServer({ modelUrl, databaseUrl, extraEnv = {} } = {}) {
  const bin = toolbeltBinary();
  const dir = mkdtempSync(join(tmpdir(), 'toolbelt-console-'));
  const db = databaseUrl || `sqlite://${join(dir, 'toolbelt.db')}`;
  // The tools' workspace is a folder of its own: the server refuses a database inside it.
  const workspace = join(dir, 'work');
  mkdirSync(workspace, { recursive: true });
  const token = createToken(db, 'admin', '--scope', 'admin');
  const port = await freePort();
  const env = {
    ...process.env, TOOLBELT_PROVIDER: 'openai', TOOLBELT_MODEL: 'scripted', OPENAI_API_KEY: 'test-key',
    // Routing by words only: the encoder would join the router at a moment the tests cannot see.
    TOOLBELT_NO_EMBEDDER: '1',
    RUST_LOG: process.env.RUST_LOG || 'warn', ...extraEnv,
  };
  if (modelUrl) env.OPENAI_BASE_URL = modelUrl;
  const child = spawn(bin, ['serve', '--database-url', db, '--addr', `127.0.0.1:${port}`, '--workspace', workspace], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`toolbelt serve exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.ok) break;
    } catch { /* not up yet */ }
    if (Date.now() > deadline) throw new Error('toolbelt serve did not become ready in 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url, token, dir, db,
    stop: () => new Promise((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.on('exit', resolve);
      child.kill('SIGINT');
      setTimeout(() => child.kill('SIGKILL'), 8000).unref();
    }),
  };
}

/** Launches Debian's Chromium through playwright-core, or returns null after printing why not. */
export async function launchChromium() {
  const exe = process.env.CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(exe)) {
    console.log(`skipped: no Chromium at ${exe} (scripts/setup-browser.sh installs it)`);
    return null;
  }
  let chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    console.log('skipped: playwright-core is not installed (scripts/setup-browser.sh installs it)');
    return null;
  }
  const userDataDir = mkdtempSync(join(tmpdir(), 'toolbelt-chromium-'));
  // A fresh --user-data-dir: playwright passes it for a persistent context.
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: exe, args: CHROMIUM_FLAGS, headless: true, viewport: { width: 1280, height: 800 },
  });
}
