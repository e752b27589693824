// Page-load figures of the console (used by bench/console-load.sh): for each page, N fresh
// navigations in Chromium; reports the median of the navigation timing's
// domContentLoaded and of "ready" (the page's data fetched and rendered: the console sets
// main[data-ready] then), both from navigation start.
// usage: node measure.mjs URL TOKEN [N]

import { launchChromium } from './support.mjs';

const [url, token, n = '7'] = process.argv.slice(2);
const context = await launchChromium();
if (!context) process.exit(0);
const page = context.pages()[0] || (await context.newPage());
await page.goto(`${url}/`);
await page.evaluate((t) => sessionStorage.setItem('toolbelt.token', t), token);
const firstRun = await page.evaluate(async (t) => (await (await fetch('/api/v1/runs?limit=1', { headers: { authorization: `Bearer ${t}` } })).json()).items[0]?.id, token);
const pages = ['#/', '#/tools', '#/tools/bench_tool_0042', '#/agents/default', '#/route', '#/runs', `#/runs/${firstRun}`];
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
console.log('| page | DOMContentLoaded (median ms) | ready: data rendered (median ms) | max ready |');
console.log('|---|---|---|---|');
for (const hash of pages) {
  const dcl = [];
  const ready = [];
  for (let i = 0; i < Number(n); i++) {
    await page.goto('about:blank');
    await page.goto(`${url}/${hash}`);
    await page.waitForFunction((h) => document.getElementById('main').dataset.ready === h, hash, { timeout: 30_000 });
    const t = await page.evaluate(() => {
      const nav = performance.getEntriesByType('navigation')[0];
      return { dcl: nav.domContentLoadedEventEnd, ready: performance.now() };
    });
    dcl.push(t.dcl);
    ready.push(t.ready);
  }
  console.log(`| \`${hash.replace(firstRun, 'RUN')}\` | ${median(dcl).toFixed(0)} | ${median(ready).toFixed(0)} | ${Math.max(...ready).toFixed(0)} |`);
}
await context.close();
