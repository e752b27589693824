// The console's browser test: a person's path through the console in Chromium, against the
// real server and a scripted model. Log in, create a tool (live validation, try it, a second
// version and its diff), bind it to an agent, preview a route, run the agent, approve the
// call from the page, read the transcript, see runs and the overview. Then a token limited to
// the agent and a read-only token: the console asks for nothing the server would refuse them.
// Screenshots of the main pages go to $ARTIFACTS (default target/console-screenshots), at
// 1280×800 and phone width.
//
// Run: scripts/console-test.sh (builds the binary, installs Chromium and playwright-core).

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createToken, launchChromium, scriptedModel, startServer } from './support.mjs';

const ARTIFACTS = process.env.ARTIFACTS || join(process.cwd(), 'target', 'console-screenshots');
mkdirSync(ARTIFACTS, { recursive: true });
const TOOL = 'console_echo';
const AGENT = 'console_agent';

const context = await launchChromium();
if (!context) process.exit(0);
const model = await scriptedModel(TOOL, { text: 'hello from the model' });
const server = await startServer({ modelUrl: model.url });
const page = context.pages()[0] || (await context.newPage());
const consoleErrors = [];
page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
page.on('pageerror', (e) => consoleErrors.push(String(e)));
let refusals = null; // the 403 answers the page got, collected from step 12 on
page.on('response', (r) => { if (refusals && r.status() === 403) refusals.push(`${r.request().method()} ${r.url()}`); });
page.setDefaultTimeout(15_000);

const shot = async (name) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
const ready = (hashPrefix) => page.waitForFunction((p) => (document.getElementById('main').dataset.ready || '').startsWith(p), hashPrefix);
async function go(hash) {
  if ((await page.evaluate(() => location.hash)) === hash) {
    await page.reload();
    await ready(hash.split('?')[0]);
    return;
  }
  await page.evaluate((h) => { document.getElementById('main').dataset.ready = ''; location.hash = h; }, hash);
  await ready(hash.split('?')[0]);
}
/** Waits until the table shows exactly `n` rows (filters redraw after a short debounce). */
const rows = (table, n) => page.waitForFunction(([t, k]) => document.querySelectorAll(`${t} tbody tr`).length === k, [table, n]);
/** Every visible form control has an accessible name (a <label for>, aria-label or labelledby). */
/** Logs out and in again with `secret`; resolves once the overview is drawn. */
async function logIn(secret) {
  await go('#/'); // logging out goes there: from elsewhere a second render would redraw the form
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  await page.getByLabel('Token').fill(secret);
  await page.evaluate(() => { document.getElementById('main').dataset.ready = ''; });
  await page.getByRole('button', { name: 'Log in' }).click();
  await ready('#/');
}
async function checkLabels(where) {
  const unlabelled = await page.evaluate(() => [...document.querySelectorAll('main input, main select, main textarea')]
    .filter((c) => c.offsetParent !== null)
    .filter((c) => !(c.labels && c.labels.length) && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby'))
    .map((c) => c.id || c.name || c.outerHTML.slice(0, 60)));
  assert.deepEqual(unlabelled, [], `controls without a label on ${where}`);
}

let failed = false;
try {
  // 1. Nothing readable without a token: the login form.
  await page.goto(`${server.url}/`);
  await page.getByRole('heading', { name: 'Log in' }).waitFor();
  const anonymous = await page.evaluate(async () => (await fetch('/api/v1/tools')).status);
  assert.equal(anonymous, 401, 'the API must refuse a request without a token');
  await shot('01-login');
  await page.getByLabel('Token').fill('not-a-token');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByText('That token was refused').waitFor();
  await page.getByLabel('Token').fill(server.token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await ready('#/');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();

  // 2. Create a tool, with live validation.
  await go('#/tools/new');
  await page.locator('#ed-name').fill('bad name!');
  await page.locator('#ed-name-err').getByText('letters, digits').waitFor();
  assert.equal(await page.locator('#ed-name').getAttribute('aria-invalid'), 'true');
  await page.locator('#ed-params').fill('{"type": "object", ');
  await page.locator('#ed-params-err').getByText('not valid JSON').waitFor();
  await page.locator('#ed-name').fill(TOOL);
  await page.locator('#ed-desc').fill('Echo a text back (console test)');
  await page.locator('#ed-tags').fill('console, text');
  await page.locator('#ed-params').fill(JSON.stringify({ type: 'object', properties: { text: { type: 'string', description: 'What to echo' }, times: { type: 'integer', minimum: 1, maximum: 3 }, code: { type: 'string', pattern: '^(a|a)*$' } }, required: ['text'] }, null, 2));
  await page.locator('#ed-def').fill(JSON.stringify({ argv: ['echo', '{{missing}}'] }));
  await page.locator('#ed-def-err').getByText('{{missing}}').waitFor();
  // The effect selector (read only by default) makes the command tool read-only: its
  // definition gets `read_only: true`, without which a command tool needs approval.
  await page.locator('#ed-def').fill(JSON.stringify({ argv: ['echo', '{{text}}'] }, null, 2));
  await page.locator('#ed-preview').getByLabel(/text \*/).waitFor();
  await checkLabels('the tool editor');
  await shot('02-tool-editor');
  await page.getByRole('button', { name: 'Create tool' }).click();
  await ready(`#/tools/${TOOL}`);
  await page.getByRole('heading', { name: TOOL }).waitFor();
  await page.getByText('Echo a text back (console test)').first().waitFor();

  // 3. Try it: a field error from the browser's check, then from the server's, then a result.
  await page.locator('#try-form').getByRole('button', { name: 'Call' }).click();
  await page.locator('#try-text-err').getByText('required').waitFor();
  await page.locator('#try-text').fill('hi there');
  await page.locator('#try-times').fill('9');
  await page.locator('#try-form').getByRole('button', { name: 'Call' }).click();
  await page.locator('#try-times-err').getByText('≤ 3').waitFor();
  await page.locator('#try-times').fill('');
  // A pattern that backtracks exponentially: the page does not compile it (it would hang);
  // the server's answer names the field.
  await page.locator('#try-code').fill('a'.repeat(40) + 'b');
  await page.locator('#try-form').getByRole('button', { name: 'Call' }).click();
  await page.locator('#try-code-err').getByText(/match/).waitFor();
  await page.locator('#try-code').fill('');
  await page.locator('#try-form').getByRole('button', { name: 'Call' }).click();
  await page.locator('#try-result').getByText('hi there').waitFor();
  await checkLabels('the tool page');

  // 4. A second version, the diff between the two, enable/disable.
  await page.getByRole('link', { name: 'Edit' }).click();
  await ready(`#/tools/${TOOL}/edit`);
  await page.locator('#ed-desc').fill('Echo a text back, version two');
  await page.locator('#ed-approval').check();
  await page.locator('#ed-effect').selectOption('mutating');
  await page.locator('#ed-note').fill('each call is approved by a person');
  await page.getByRole('button', { name: 'Save new version' }).click();
  await ready(`#/tools/${TOOL}`);
  await page.locator('#diff').getByText('version two').waitFor();
  await page.locator('#diff .add').getByText('"needs_approval": true').waitFor();
  assert.ok((await page.locator('#diff .del').count()) >= 1, 'the diff shows the removed line');
  await page.getByRole('button', { name: 'Roll back to v1' }).waitFor();
  await shot('03-tool-page');
  await page.locator('#toggle-enabled').click();
  await page.locator('#toggle-enabled', { hasText: 'Enable' }).waitFor();
  await go('#/tools');
  await page.locator('#tool-enabled').selectOption('disabled');
  await page.locator('#tools-table').getByRole('link', { name: TOOL }).waitFor();
  await page.goto(`${server.url}/#/tools/${TOOL}`);
  await ready(`#/tools/${TOOL}`);
  await page.locator('#toggle-enabled').click();
  await page.locator('#toggle-enabled', { hasText: 'Disable' }).waitFor();

  // 5. The tools table: search and filters.
  await go('#/tools');
  await page.locator('#tool-q').fill('console');
  await page.locator('#tools-table').getByRole('link', { name: TOOL }).waitFor();
  await rows('#tools-table', 1);
  await page.locator('#tool-q').fill('');
  await page.locator('#tool-group').selectOption('console');
  await page.locator('#tool-source').selectOption('declarative');
  await page.locator('#tool-avail').selectOption('available');
  await rows('#tools-table', 1);
  await page.locator('#tool-group').selectOption('');
  await page.locator('#tool-source').selectOption('');
  await page.locator('#tool-avail').selectOption('');
  await checkLabels('the tools table');
  await shot('04-tools');

  // 6. An agent, bind the tool in one click, see why the others are unavailable.
  await go('#/agents');
  await page.locator('#new-agent-name').fill(AGENT);
  await page.getByRole('button', { name: 'Create agent' }).click();
  await ready(`#/agents/${AGENT}`);
  await page.locator('#agent-tool-filter').fill(TOOL);
  await page.getByRole('button', { name: `Bind ${TOOL}` }).click();
  await page.getByRole('button', { name: `Unbind ${TOOL}` }).waitFor();
  await page.locator('#bound-tools').getByText(TOOL).waitFor();
  const row = page.locator('#agent-tools tbody tr', { hasText: TOOL });
  await row.getByText('available', { exact: true }).waitFor();
  await page.locator('#agent-tool-filter').fill('');
  await page.locator('#agent-tool-avail').selectOption('no');
  assert.ok((await page.locator('#agent-tools td.why').count()) > 0, 'unavailable tools say why');
  await page.locator('#agent-tool-avail').selectOption('');
  await checkLabels('the agent page');
  await shot('05-agent');

  // 7. Route preview.
  await go(`#/route?agent=${AGENT}`);
  await page.locator('#route-input').fill('please echo hello');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.locator('#route-tools').getByRole('link', { name: TOOL }).waitFor();
  await page.locator('#route-tokens').getByText(/sent of/).waitFor();
  await checkLabels('the route preview');
  await shot('06-route');

  // 8. Run the agent; approve the call from the page; read the transcript.
  await go(`#/agents/${AGENT}`);
  await page.locator('#run-input').fill('echo something for me');
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForFunction(() => location.hash.startsWith('#/runs/'));
  const approval = page.locator('section.approval');
  await approval.waitFor({ timeout: 30_000 });
  await approval.getByText('hello from the model').waitFor();
  await page.locator('#events').getByText('approval requested').waitFor();
  await checkLabels('the run page');
  await shot('07-run-waiting');
  await approval.getByRole('button', { name: 'Approve', exact: true }).click();
  await page.locator('#run-status').getByText('succeeded').waitFor({ timeout: 30_000 });
  await page.locator('#transcript').getByText('The tool said: hello from the model').waitFor();
  await page.locator('#transcript li.tool').getByText('hello from the model').waitFor();
  await page.locator('#events').getByText('approval: approve').waitFor();
  await page.locator('#events').getByText('routed').first().waitFor();
  await shot('08-run-done');
  assert.ok(model.requests.length >= 2, 'the model was asked twice');

  // 8a. A question from the agent (ask_human), answered from the page.
  await go(`#/agents/${AGENT}`);
  await page.locator('#agent-tool-filter').fill('ask_human');
  await page.getByRole('button', { name: 'Bind ask_human' }).click();
  await page.getByRole('button', { name: 'Unbind ask_human' }).waitFor();
  await page.locator('#run-input').fill('ask me a colour');
  await page.getByRole('button', { name: 'Start run' }).click();
  await page.waitForFunction(() => location.hash.startsWith('#/runs/'));
  const question = page.locator('form.question');
  await question.getByText('Which colour?').waitFor({ timeout: 30_000 });
  await question.getByLabel('Answer').selectOption('blue');
  await question.getByRole('button', { name: 'Answer' }).click();
  await page.locator('#run-status').getByText('succeeded').waitFor({ timeout: 30_000 });
  await page.locator('#transcript').getByText('The tool said: blue').waitFor();

  // 8b. Roll the tool back to its first version (the page asks to confirm).
  await go(`#/tools/${TOOL}`);
  page.once('dialog', (d) => d.accept());
  await page.getByRole('button', { name: 'Roll back to v1' }).click();
  await page.locator('p.lead', { hasText: 'Echo a text back (console test)' }).waitFor();
  await page.getByRole('button', { name: 'Roll back to v2' }).waitFor();

  // 9. Runs list and overview.
  await go('#/runs');
  await rows('#runs-table', 2);
  assert.equal(await page.locator('#runs-table tbody tr', { hasText: AGENT }).getByText('succeeded').count(), 2);
  await checkLabels('the runs list');
  await shot('09-runs');
  await go('#/');
  await page.locator('#chart-calls canvas').waitFor();
  await page.locator('#tool-stats').getByRole('link', { name: TOOL }).waitFor();
  await page.locator('#tokens-table').getByRole('link', { name: AGENT }).waitFor();
  await shot('10-overview');

  // 10. Keyboard: the skip link and the navigation are reachable with Tab.
  await page.goto(`${server.url}/#/runs`);
  await ready('#/runs');
  await page.mouse.click(2, 2); // the focus navigation starts at the top of the page
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'toolbelt');
  await page.keyboard.press('Shift+Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'main', 'the skip link moves the focus to the content');
  assert.equal(await page.evaluate(() => location.hash), '#/runs', 'the skip link keeps the page');
  await page.mouse.click(2, 2);
  for (let i = 0; i < 3; i++) await page.keyboard.press('Tab'); // toolbelt, Overview, Tools
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => location.hash === '#/tools');
  await ready('#/tools');

  // 11. Phone width.
  await page.setViewportSize({ width: 390, height: 844 });
  for (const [hash, name] of [['#/tools', '11-phone-tools'], [`#/agents/${AGENT}`, '12-phone-agent'], ['#/runs', '13-phone-runs'], ['#/', '14-phone-overview']]) {
    await go(hash);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok(overflow <= 1, `${hash} scrolls sideways by ${overflow}px at phone width`);
    await shot(name);
  }
  // 12. A token limited to the agent (ADR 0061): the console asks for nothing of the whole
  // server, says the limit in the header, lists only the agent, and one line stands in for a
  // page that covers the whole server.
  await page.setViewportSize({ width: 1280, height: 800 });
  const other = await fetch(`${server.url}/api/v1/agents`, {
    method: 'POST', headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'other_agent', selection: '' }),
  });
  assert.equal(other.status, 201, 'a second agent, which the limited token must not see');
  refusals = [];
  await logIn(createToken(server.db, 'writer', '--scope', 'run', '--agent', AGENT));
  await page.locator('#overview-agents').getByRole('link', { name: AGENT }).waitFor();
  assert.equal(await page.locator('main div.error, main [role="alert"]').count(), 0, 'no error box on the overview');
  assert.ok(await page.locator('#limits').isVisible(), 'the header shows the limits');
  assert.equal(await page.locator('#limits').textContent(), `run scope; limited to: ${AGENT}`);
  assert.match(await page.locator('#limited-notice').textContent(), /limited to agent console_agent; the statistics cover the whole server/);
  await shot('15-limited-overview');
  await go('#/agents');
  await rows('#agents-table', 1);
  assert.deepEqual(await page.locator('#agents-table tbody th').allTextContents(), [AGENT]);
  assert.equal(await page.locator('#new-agent').count(), 0, 'creating agents needs admin');
  await go('#/tools');
  await page.locator('#tools-table').getByRole('link', { name: TOOL }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'New tool' }).count(), 0, 'tools are the whole server\'s');
  await go(`#/tools/${TOOL}`);
  await page.locator('#try-form').waitFor();
  assert.equal(await page.getByRole('button', { name: /Roll back|Disable|Enable/ }).count(), 0, 'no tool admin');
  await go('#/route');
  assert.deepEqual(await page.locator('#route-agent option').allTextContents(), [AGENT], 'a preview for its agent only');
  await go('#/runs');
  await rows('#runs-table', 2);
  for (const hash of ['#/tools/new', '#/tools/import', `#/tools/${TOOL}/edit`]) {
    await go(hash);
    assert.equal(await page.locator('#limited-notice').textContent(),
      `This token is limited to agent ${AGENT}; this page covers the whole server.`, `${hash} by URL`);
    assert.equal(await page.locator('main form').count(), 0, `${hash} shows no form`);
  }
  await shot('16-limited-whole-server-page');
  assert.deepEqual(refusals, [], 'the console asked for something the limited token is refused');

  // 13. A read-only token: no route preview, no run, no binding; one line on #/route.
  await logIn(createToken(server.db, 'reader', '--scope', 'read'));
  await page.locator('#chart-calls canvas').waitFor();
  assert.ok(await page.locator('#limits').isVisible(), 'the header shows the scope');
  assert.equal(await page.locator('#limits').textContent(), 'read only');
  assert.equal(await page.locator('header nav a[href="#/route"]').isVisible(), false, 'no route preview in the navigation');
  await go(`#/agents/${AGENT}`);
  await page.locator('#agent-tools').waitFor();
  assert.equal(await page.locator('#run-form').count(), 0, 'running needs the run scope');
  assert.equal(await page.getByRole('button', { name: /^(Bind|Unbind|Pin)/ }).count(), 0, 'binding needs admin');
  await go('#/route');
  await page.locator('#scope-notice').getByText('needs a token with the run scope').waitFor();
  assert.deepEqual(refusals, [], 'the console asked for something the read-only token is refused');

  // Network answers such as the 401 of the wrong token are logged too; only script errors count.
  assert.deepEqual(consoleErrors.filter((e) => !e.startsWith('Failed to load resource')), [], 'no script errors in the page');
  console.log(`ok: console browser test passed; screenshots in ${ARTIFACTS}`);
} catch (e) {
  failed = true;
  console.error('FAILED:', e);
  await shot('failure').catch(() => {});
  console.error('page errors:', consoleErrors);
} finally {
  await context.close();
  await server.stop();
  model.close();
}
process.exit(failed ? 1 : 0);
