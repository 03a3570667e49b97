// Loads a campaign's report.html in headless Chromium and checks what a reviewer sees:
//   node .ci/report-browser.cjs REPORT.html SCREENSHOT.png
// - the rendered DOM has a timeline SVG (`svg.timeline`) for each counterexample, each with
//   one lane per host (`g.lane`, distinct `data-host`, replicas and the services) and the
//   failing run's marks (appends/fences and lease calls with their class) and its violation's
//   evidence;
// - each counterexample section (`section.counterexample`) carries its explanation: the check
//   that failed (`.explanation .check`) and at least one violation's message;
// - the page logged no console error and threw nothing;
// - the page made no network request (it is self-contained: the only request is the file
//   itself);
// and keeps a screenshot. Speaks the DevTools protocol over --remote-debugging-pipe (file
// descriptors 3 and 4, NUL-separated JSON), so it needs nothing but node and chromium.
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const [report, screenshot] = process.argv.slice(2);
if (!report || !screenshot) {
  console.error('usage: node .ci/report-browser.cjs REPORT.html SCREENSHOT.png');
  process.exit(2);
}
const url = pathToFileURL(path.resolve(report)).href;
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'leasesim-chromium-'));
const browser = spawn(
  process.env.CHROMIUM || 'chromium',
  ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--remote-debugging-pipe',
    `--user-data-dir=${profile}`, '--window-size=1300,1600', 'about:blank'],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
);
let stderr = '';
browser.stderr.on('data', (chunk) => { stderr += chunk; });
const timer = setTimeout(() => fail('timed out after 60 s'), 60_000);

function fail(message) {
  console.error(`report-browser: FAIL: ${message}`);
  if (stderr) console.error(stderr.split('\n').slice(-20).join('\n'));
  browser.kill('SIGKILL');
  process.exit(1);
}

// The protocol: requests by id, events to listeners.
let nextId = 1;
const pending = new Map();
const listeners = [];
let buffered = '';
browser.stdio[4].on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  let end;
  while ((end = buffered.indexOf('\0')) >= 0) {
    const message = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (message.id && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(JSON.stringify(message.error)));
      else resolve(message.result);
    } else if (message.method) {
      for (const listener of listeners) listener(message);
    }
  }
});
function send(method, params = {}, sessionId) {
  const id = nextId++;
  browser.stdio[3].write(JSON.stringify({ id, method, params, sessionId }) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

// What the page is seen to do.
const consoleErrors = [];
const requests = [];
listeners.push(({ method, params }) => {
  if (method === 'Runtime.consoleAPICalled' && (params.type === 'error' || params.type === 'assert')) {
    consoleErrors.push(params.args.map((a) => a.value ?? a.description).join(' '));
  } else if (method === 'Runtime.exceptionThrown') {
    consoleErrors.push(params.exceptionDetails.text);
  } else if (method === 'Log.entryAdded' && params.entry.level === 'error') {
    consoleErrors.push(params.entry.text);
  } else if (method === 'Network.requestWillBeSent') {
    requests.push(params.request.url);
  }
});

// The facts asserted on, read from the rendered DOM.
const probe = `JSON.stringify([...document.querySelectorAll('svg.timeline')].map((svg) => ({
  figure: svg.closest('figure') ? svg.closest('figure').className : '',
  lanes: [...svg.querySelectorAll('g.lane')].map((g) => g.getAttribute('data-host')),
  marks: [...svg.querySelectorAll('g.mark')].map((g) => g.getAttribute('class')),
  calls: [...svg.querySelectorAll('g.call')].map((g) => g.getAttribute('class')),
  evidence: svg.querySelectorAll('.evidence').length,
  width: svg.getBoundingClientRect().width,
})))`;
const sectionsProbe = `JSON.stringify([...document.querySelectorAll('section.counterexample')].map((s) => ({
  file: s.getAttribute('data-run-file'),
  check: s.querySelector('.explanation .check') ? s.querySelector('.explanation .check').textContent : '',
  messages: s.querySelectorAll('.explanation .violation .message').length,
})))`;

(async () => {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  for (const domain of ['Page', 'Runtime', 'Log', 'Network']) await send(`${domain}.enable`, {}, sessionId);
  const loaded = new Promise((resolve) => listeners.push(({ method }) => {
    if (method === 'Page.loadEventFired') resolve();
  }));
  await send('Page.navigate', { url }, sessionId);
  await loaded;
  const { result } = await send('Runtime.evaluate', { expression: probe, returnByValue: true }, sessionId);
  const timelines = JSON.parse(result.value);
  const explained = await send('Runtime.evaluate', { expression: sectionsProbe, returnByValue: true }, sessionId);
  const sections = JSON.parse(explained.result.value);
  const { data } = await send('Page.captureScreenshot', { format: 'png', captureBeyondViewport: true }, sessionId);
  fs.mkdirSync(path.dirname(path.resolve(screenshot)), { recursive: true });
  fs.writeFileSync(screenshot, Buffer.from(data, 'base64'));
  const exited = new Promise((resolve) => browser.once('exit', resolve));
  await send('Browser.close').catch(() => {});
  await exited;

  const problems = [];
  if (timelines.length === 0) problems.push('no svg.timeline in the page');
  timelines.forEach((t, i) => {
    const name = `timeline ${i + 1} (${t.figure || 'no figure'})`;
    if (t.lanes.length === 0) problems.push(`${name}: no lane`);
    if (new Set(t.lanes).size !== t.lanes.length) problems.push(`${name}: a host has two lanes: ${t.lanes}`);
    if (!t.lanes.some((h) => h.startsWith('replica-'))) problems.push(`${name}: no replica lane: ${t.lanes}`);
    if (!(t.width > 0)) problems.push(`${name}: not rendered (width ${t.width})`);
    for (const c of t.marks) {
      if (!/^mark (append|fence) (landed|fenced|refused|unknown)$/.test(c)) problems.push(`${name}: odd mark class "${c}"`);
    }
    for (const c of t.calls) {
      if (!/^call (acquire|renew|release) (landed|fenced|refused|unknown)$/.test(c)) problems.push(`${name}: odd lease call class "${c}"`);
    }
  });
  const failing = timelines.filter((t) => t.figure.includes('run'));
  if (failing.length === 0) problems.push('no failing run\'s timeline (figure.run)');
  if (!failing.some((t) => t.evidence > 0)) problems.push('no failing run shows its violation\'s evidence');
  if (!failing.some((t) => t.marks.length > 0)) problems.push('no failing run shows an append or a fence');
  if (!failing.some((t) => t.calls.length > 0)) problems.push('no failing run shows a lease call');
  if (sections.length === 0) problems.push('no section.counterexample in the page');
  for (const s of sections) {
    if (!s.check.startsWith('Check failed: ')) problems.push(`${s.file}: no check named in its explanation`);
    if (s.messages === 0) problems.push(`${s.file}: no violation message in its explanation`);
  }
  if (consoleErrors.length) problems.push(`console errors: ${consoleErrors.join(' | ')}`);
  const foreign = requests.filter((r) => r !== url);
  if (foreign.length) problems.push(`network requests besides the page: ${foreign.join(', ')}`);
  if (problems.length) fail(problems.join('\n  '));
  clearTimeout(timer);
  const marks = timelines.reduce((n, t) => n + t.marks.length, 0);
  console.log(`report-browser: ok: ${timelines.length} timelines (lanes: ${timelines.map((t) => t.lanes.length).join(', ')}), ${marks} marks, ${sections.length} counterexamples explained, no console error, no request but the page; screenshot ${screenshot}`);
  try { fs.rmSync(profile, { recursive: true, force: true }); } catch { /* a temporary folder */ }
  process.exit(0);
})().catch((error) => fail(error.stack || String(error)));
