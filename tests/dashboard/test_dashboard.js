//  The dashboard in Debian's headless Chromium, driven with puppeteer-core,
//  against a real actd, actd-http and worker (tests/dashboard/worker.py)
//  with calls running: the overview shows the worker and the activity
//  counts STATS gives; the contexts view finds a context by prefix; the
//  context's page shows its timeline (each output with its _call and
//  method), the view as /view?format=text gives it, and the plan's graph;
//  and it follows a new message and a new call without a reload; a
//  context's page whose event stream ends busy (actd's max_watches, or a
//  page reading slower than its events come) says reconnecting and comes
//  back by itself, every message shown once; so does a context's page
//  whose stream reopens while its actd restarts. Any console error or page
//  error fails the test. Screenshots go to the build
//  tree (ACTD_BUILD_DIR, else build/): dashboard.png (a context) and
//  dashboard-overview.png; with ACTD_DASHBOARD_DOCS=1 the first is also
//  copied to docs/dashboard.png for the README.
//
//  Environment: ACTD_BIN (actd; actctl beside it), ACTD_HTTP_BIN
//  (actd-http; default: beside ACTD_BIN), CHROMIUM (default
//  /usr/bin/chromium).

'use strict';

const assert = require ('node:assert/strict');
const { spawn } = require ('node:child_process');
const fs = require ('node:fs');
const net = require ('node:net');
const os = require ('node:os');
const path = require ('node:path');
const puppeteer = require ('puppeteer-core');

const ROOT = path.resolve (__dirname, '..', '..');
const ACTD = process.env.ACTD_BIN || path.join (ROOT, 'build', 'bin', 'actd');
const ACTD_HTTP = process.env.ACTD_HTTP_BIN || path.join (path.dirname (ACTD), 'actd-http');
const ACTCTL = path.join (path.dirname (ACTD), 'actctl');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const BUILD = process.env.ACTD_BUILD_DIR || path.join (ROOT, 'build');
const PYTHON = '/usr/bin/python3';
const TIMEOUT_MS = 30000;       //  Generous: a shared machine, sanitizers
const TOKEN = 'dashboard-test-token-0123456789';    //  actd-http's one bearer token

const children = [];
const scratch = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-dashboard-'));

function log (...args) {
    console.log ('dashboard:', ...args);
}

function freePort () {
    return new Promise ((resolve, reject) => {
        const server = net.createServer ();
        server.unref ();
        server.on ('error', reject);
        server.listen (0, '127.0.0.1', () => {
            const { port } = server.address ();
            server.close (() => resolve (port));
        });
    });
}

//  Start a child with its output in scratch/name.log
function start (name, command, args, env = {}) {
    const file = path.join (scratch, name + '.log');
    const out = fs.openSync (file, 'a');
    const child = spawn (command, args, { stdio: ['ignore', out, out],
                                          env: { ...process.env, ...env } });
    fs.closeSync (out);
    child.logFile = file;
    child.label = name;
    child.exited = new Promise ((resolve) => child.on ('exit', (code, signal) => resolve ({ code, signal })));
    children.push (child);
    return child;
}

function logOf (child) {
    try {
        return fs.readFileSync (child.logFile, 'utf8');
    }
    catch {
        return '';
    }
}

//  Poll fn every 50 ms until it returns something true; that value
async function until (fn, what, timeout = TIMEOUT_MS) {
    const deadline = Date.now () + timeout;
    let last;
    for (;;) {
        try {
            const value = await fn ();
            if (value)
                return value;
        }
        catch (error) {
            last = error;
        }
        if (Date.now () > deadline)
            throw new Error (`timed out waiting for ${what}${last ? ': ' + last.message : ''}`);
        await new Promise ((resolve) => setTimeout (resolve, 50));
    }
}

//  A function appending a text message to a context through actd-http at
//  base; it returns the message's _seq
function appender (base) {
    return async (ctx, text) => {
        const response = await fetch (`${base}/v1/contexts/${ctx}/messages`, {
            method: 'POST', body: JSON.stringify ({ type: 'text', text }),
            headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' } });
        if (!response.ok)
            throw new Error (`append to ${ctx}: ${response.status} ${await response.text ()}`);
        return (await response.json ()).seq;
    };
}

//  A new page that records what its EventSource got, in window.__stream:
//  each message's id, each error event's data (null: the connection's),
//  and each text of the stream's pill. Returns the page, its problems
//  (console and page errors), waitFor (fn, what, ...args) and shown (seq):
//  message seq shown, the stream live
async function streamPage (browser) {
    const page = await browser.newPage ();
    const problems = [];
    page.on ('console', (message) => {
        if (message.type () === 'error')
            problems.push (`console error: ${message.text ()}`);
    });
    page.on ('pageerror', (error) => problems.push ('page error: ' + error.message));
    await page.evaluateOnNewDocument (() => {
        const seen = window.__stream = { ids: [], errors: [], pills: [] };
        window.EventSource = class extends window.EventSource {
            constructor (...args) {
                super (...args);
                this.addEventListener ('message', (event) => seen.ids.push (Number (event.lastEventId)));
                this.addEventListener ('error', (event) => seen.errors.push (event.data ?? null));
            }
        };
        new MutationObserver (() => {
            const pill = document.getElementById ('stream')?.textContent;
            if (pill && pill !== seen.pills.at (-1))
                seen.pills.push (pill);
        }).observe (document, { subtree: true, childList: true, characterData: true });
    });
    const waitFor = (fn, what, ...args) =>
        page.waitForFunction (fn, { timeout: TIMEOUT_MS, polling: 50 }, ...args)
            .catch ((error) => { throw new Error (`timed out waiting for ${what}: ${error.message}`); });
    const shown = (seq) => waitFor ((seq) =>
        document.querySelector (`#timeline .entry.msg[data-seq="${seq}"]`)
        && document.getElementById ('stream').textContent === 'live',
        `message ${seq} shown, the stream live`, seq);
    return { page, problems, waitFor, shown };
}

//  The context page's event stream ended `busy`, both ways (docs/http.md,
//  Server-Sent Events), against an actd of its own with server/max_watches
//  = 1 and an actd-http whose max_stream_bytes is 2 MiB: the page says
//  "reconnecting…" (not "refused", no banner), EventSource comes back by
//  itself once it may, and every message comes once, those appended while
//  it was refused too (Last-Event-ID). The other watch is actctl tail's.
//  Returns actd and actd-http, to be stopped with the others.
async function refusedStreams (browser) {
    const [clientPort, workerPort, httpPort] = [await freePort (), await freePort (), await freePort ()];
    const endpoint = `tcp://127.0.0.1:${clientPort}`;
    const base = `http://127.0.0.1:${httpPort}`;
    const actdConfig = path.join (scratch, 'watches-actd.cfg');
    fs.writeFileSync (actdConfig, 'server\n    max_watches = 1\n');
    const actd = start ('watches-actd', ACTD, ['--config', actdConfig,
        '--db', path.join (scratch, 'watches.db'), '--client-endpoint', endpoint,
        '--worker-endpoint', `tcp://127.0.0.1:${workerPort}`]);
    const httpConfig = path.join (scratch, 'watches-http.cfg');
    //  Above what a resumed stream's backlog brings at once here (at most
    //  one batch of 4 messages of 256 KiB, below), so that it is not ended
    //  busy again
    fs.writeFileSync (httpConfig, `http\n    max_stream_bytes = 2097152\n`
                                  + `tokens\n    dashboard\n        token = "${TOKEN}"\n`);
    const http = start ('watches-http', ACTD_HTTP, ['--config', httpConfig,
        '--listen', `127.0.0.1:${httpPort}`, '--endpoint', endpoint,
        '--dashboard-dir', path.join (ROOT, 'share', 'dashboard')]);
    const append = appender (base);
    await until (async () => await append ('held', 'the other watch') === 1, 'actd-http to append');
    //  The other client's watch: actctl tail of "held", which prints its
    //  message once the watch is open. Returns the process, or null when
    //  actd refused it (busy: the slot is taken)
    let tails = 0;
    const hold = async () => {
        const tail = start (`watches-tail-${++tails}`, ACTCTL, ['--endpoint', endpoint, 'tail', 'held']);
        const held = await until (async () => logOf (tail).includes ('the other watch') ? 'held'
                                              : tail.exitCode !== null ? 'refused' : null,
                                  'actctl tail to watch or to be refused');
        return held === 'held' ? tail : null;
    };
    const release = async (tail) => {
        tail.kill ('SIGTERM');
        const { code, signal } = await tail.exited;
        assert.equal (code, 0, `actctl tail exited ${code ?? signal}:\n${logOf (tail)}`);
    };

    const { page, problems, waitFor, shown } = await streamPage (browser);

    //  -- max_watches: the page opened while another client holds the
    //  only watch
    const ctx = 'refused';
    await append (ctx, 'before the page');
    let tail = await hold ();
    assert.ok (tail, 'actctl tail was refused');
    await page.goto (`${base}/?token=${TOKEN}#/c/${ctx}`, { waitUntil: 'load' });
    await page.waitForSelector ('#timeline .entry.msg[data-seq="1"]', { timeout: TIMEOUT_MS });
    await waitFor (() => document.getElementById ('stream').textContent === 'reconnecting…'
                         && window.__stream.errors.some ((data) => /"busy".*max_watches/.test (data)),
                   'the page to be refused busy (max_watches) and say reconnecting');
    await append (ctx, 'while refused');
    await release (tail);
    await shown (2);
    await append (ctx, 'after the release');
    await shown (3);
    log ('refused streams: max_watches, then live again by itself');

    //  -- a slow reader: the page stops reading (paused in the debugger:
    //  Chromium stops taking the stream's bytes) while messages come,
    //  until actd-http ends its stream busy, which frees the watch (tail
    //  gets it, then leaves); resumed, the page reads what was sent, then
    //  the error, and comes back after its last event (Last-Event-ID)
    const cdp = await page.createCDPSession ();
    await cdp.send ('Debugger.enable');
    const paused = new Promise ((resolve) => cdp.once ('Debugger.paused', resolve));
    await cdp.send ('Debugger.pause');
    await append (ctx, 'wakes the page up, to pause it');
    await paused;
    const big = 'x'.repeat (256 * 1024);
    let bytes = 0;
    for (tail = null; !tail; tail = await hold ()) {
        for (let i = 0; i < 4; i++)
            await append (ctx, big);
        bytes += 4 * big.length;
        assert.ok (bytes < 128 * 1024 * 1024,
                   'actd-http never ended the stream of a page that does not read');
    }
    await release (tail);
    const endedSeq = await append (ctx, 'while the stream was ended');
    await cdp.send ('Debugger.resume');
    await cdp.detach ();
    await waitFor (() => document.getElementById ('stream').textContent === 'reconnecting…'
                         && window.__stream.errors.some (
                             (data) => /"busy".*slower than its events come/.test (data)),
                   'the page to read its stream ended busy (a slow reader) and say reconnecting');
    await shown (endedSeq);
    const lastSeq = await append (ctx, 'after the reconnection');
    await shown (lastSeq);

    //  Every message once, in the timeline and on the stream
    const { seqs, ids, slow, pills, banner } = await page.evaluate (() => ({
        seqs: [...document.querySelectorAll ('#timeline .entry.msg')].map (
            (node) => Number (node.dataset.seq)),
        ids: window.__stream.ids,
        slow: window.__stream.errors.filter ((data) => /slower than its events come/.test (data)).length,
        pills: window.__stream.pills,
        banner: document.querySelector ('.error-banner').hidden
              ? null : document.querySelector ('.error-banner').textContent }));
    const all = Array.from ({ length: lastSeq }, (_, i) => i + 1);
    assert.deepEqual ([...seqs].sort ((a, b) => a - b), all, 'the timeline shows each message once');
    assert.deepEqual (ids, all.slice (1), 'the stream brought each message after the first once, in order');
    assert.equal (slow, 1, 'the stream was ended busy again');
    assert.equal (banner, null, 'a banner was shown');
    assert.ok (!pills.includes ('refused') && !pills.includes ('stream closed'),
               'the pill said ' + pills.join (', '));
    assert.deepEqual (problems, [], 'the page had errors:\n' + problems.join ('\n'));
    log (`refused streams: a slow reader (${bytes} bytes appended while paused), live again `
         + `by itself; ${lastSeq} messages, none lost or twice`);
    await page.close ();
    return [http, actd];
}

//  A TCP proxy to 127.0.0.1:port on a free port: { port, cut, close }; cut
//  () drops the connections open through it (as a network, or a proxy in
//  front of actd-http, would), new ones are still taken
async function proxy (port) {
    const open = new Set ();
    const server = net.createServer ((client) => {
        const upstream = net.connect (port, '127.0.0.1');
        const pair = [client, upstream];
        const end = () => {
            client.destroy ();
            upstream.destroy ();
            open.delete (pair);
        };
        open.add (pair);
        for (const socket of pair)
            socket.on ('error', end).on ('close', end);
        client.pipe (upstream);
        upstream.pipe (client);
    });
    server.unref ();        //  A test that failed still exits
    await new Promise ((resolve) => server.listen (0, '127.0.0.1', resolve));
    return {
        port: server.address ().port,
        cut: () => [...open].flat ().forEach ((socket) => socket.destroy ()),
        close: () => server.close ()
    };
}

//  The page of restartedActd while actd-http itself restarts (SIGTERM,
//  then started again with args on its port): its stream ends
//  `unavailable` (it was 500 `internal`, which the page took for a
//  refusal: "refused", a banner, the stream closed for good), the page
//  says "reconnecting…", EventSource comes back once actd-http is there
//  again, and after () shows what is appended then. Returns the new
//  actd-http.
async function restartedHttp (http, args, waitFor, after) {
    http.kill ('SIGTERM');
    const { code, signal } = await http.exited;
    assert.equal (code, 0, `actd-http exited ${code ?? signal}:\n${logOf (http)}`);
    await waitFor (() => document.getElementById ('stream').textContent === 'reconnecting…'
                         && window.__stream.errors.some ((data) => /"unavailable"/.test (data)),
                   'the stream of a stopping actd-http to end unavailable, the page reconnecting');
    const again = start ('restart-http-again', ACTD_HTTP, args);
    await after ();
    return again;
}

//  A context page open while its actd restarts (docs/http.md, Server-Sent
//  Events), against an actd and actd-http of their own (request_timeout_ms
//  1 s). The stream left open would outlive the restart (actd-http's watch
//  resumes once actd is back), so the page's connection is cut too while
//  actd is down (by a proxy between the page and actd-http): each
//  stream it opens then finds actd away, is answered 200 with event: error
//  timeout (504 before: EventSource gave up, "stream closed" for good), the
//  page says "reconnecting…", and once actd is back on the same endpoint
//  and store it shows the messages appended since, each once, without a
//  reload; then actd-http restarts (restartedHttp). Returns actd and
//  actd-http, to be stopped with the others.
async function restartedActd (browser) {
    const [clientPort, workerPort, httpPort] = [await freePort (), await freePort (), await freePort ()];
    const endpoint = `tcp://127.0.0.1:${clientPort}`;
    const base = `http://127.0.0.1:${httpPort}`;
    const startActd = () => start ('restart-actd', ACTD, ['--db', path.join (scratch, 'restart.db'),
        '--client-endpoint', endpoint, '--worker-endpoint', `tcp://127.0.0.1:${workerPort}`]);
    let actd = startActd ();
    const httpConfig = path.join (scratch, 'restart-http.cfg');
    fs.writeFileSync (httpConfig, `http\n    request_timeout_ms = 1000\n`
                                  + `tokens\n    dashboard\n        token = "${TOKEN}"\n`);
    const httpArgs = ['--config', httpConfig, '--listen', `127.0.0.1:${httpPort}`,
        '--endpoint', endpoint, '--dashboard-dir', path.join (ROOT, 'share', 'dashboard')];
    let http = start ('restart-http', ACTD_HTTP, httpArgs);
    const append = appender (base);
    const healthy = () => until (async () => (await fetch (base + '/healthz',
        { headers: { Authorization: 'Bearer ' + TOKEN } })).ok, 'actd-http to reach actd');
    const ctx = 'restarted';
    await healthy ();
    assert.equal (await append (ctx, 'before the restart'), 1);

    const { page, problems, waitFor, shown } = await streamPage (browser);
    const between = await proxy (httpPort);
    await page.goto (`http://127.0.0.1:${between.port}/?token=${TOKEN}#/c/${ctx}`,
                     { waitUntil: 'load' });
    //  Its view read too: a request in flight when actd stops is 504
    await waitFor (() => document.querySelector ('#timeline .entry.msg[data-seq="1"]')
                         && document.getElementById ('view').dataset.seq === '1'
                         && document.getElementById ('stream').textContent === 'live',
                   'the page to show message 1 and the view, live');
    actd.kill ('SIGTERM');
    const { code, signal } = await actd.exited;
    assert.equal (code, 0, `actd exited ${code ?? signal}:\n${logOf (actd)}`);
    between.cut ();
    await waitFor (() => document.getElementById ('stream').textContent === 'reconnecting…'
                         && window.__stream.errors.some ((data) => /"timeout"/.test (data)),
                   'the streams opened while actd is down to end timeout, the page reconnecting');
    actd = startActd ();
    await healthy ();
    const afterSeq = await append (ctx, 'after the restart');
    await shown (afterSeq);
    const lastSeq = await append (ctx, 'live again');
    await shown (lastSeq);
    http = await restartedHttp (http, httpArgs, waitFor, async () => {
        await healthy ();
        await shown (await append (ctx, 'after actd-http restarted'));
    });

    const { seqs, ids, pills, banner } = await page.evaluate (() => ({
        seqs: [...document.querySelectorAll ('#timeline .entry.msg')].map (
            (node) => Number (node.dataset.seq)),
        ids: window.__stream.ids,
        pills: window.__stream.pills,
        banner: document.querySelector ('.error-banner').hidden
              ? null : document.querySelector ('.error-banner').textContent }));
    assert.deepEqual ([...seqs].sort (), [1, 2, 3, 4], 'the timeline shows each message once');
    assert.deepEqual (ids, [2, 3, 4], 'the stream brought each message after the first once');
    assert.equal (banner, null, 'a banner was shown');
    assert.ok (!pills.includes ('refused') && !pills.includes ('stream closed'),
               'the pill said ' + pills.join (', '));
    //  The stream cut is Chromium's console error, not the page's; so is
    //  a request a stopping actd-http answered 503 (the header's polling)
    const real = problems.filter ((problem) =>
        !/ERR_INCOMPLETE_CHUNKED_ENCODING|status of 503 \(Service Unavailable\)/.test (problem));
    assert.deepEqual (real, [], 'the page had errors:\n' + real.join ('\n'));
    log (`restarted actd, then actd-http: the page said ${pills.join (', ')}; messages ${[...seqs].sort ().join (', ')} once`);
    await page.close ();
    between.close ();
    return [http, actd];
}

async function main () {
    for (const [name, file] of [['actd', ACTD], ['actd-http', ACTD_HTTP], ['actctl', ACTCTL],
                                ['chromium', CHROMIUM]])
        assert.ok (fs.existsSync (file), `${name} not found at ${file}`);
    const [clientPort, workerPort, httpPort] = [await freePort (), await freePort (), await freePort ()];
    const clientEndpoint = `tcp://127.0.0.1:${clientPort}`;
    const workerEndpoint = `tcp://127.0.0.1:${workerPort}`;
    const base = `http://127.0.0.1:${httpPort}`;

    const actd = start ('actd', ACTD, ['--db', path.join (scratch, 'actd.db'),
        '--client-endpoint', clientEndpoint, '--worker-endpoint', workerEndpoint,
        '--heartbeat-ms', '1000', '--liveness', '3']);
    //  One bearer token (no CURVE: actd takes the connection as it is)
    const config = path.join (scratch, 'actd-http.cfg');
    fs.writeFileSync (config, `tokens\n    dashboard\n        token = "${TOKEN}"\n`);
    const http = start ('actd-http', ACTD_HTTP, ['--config', config,
        '--listen', `127.0.0.1:${httpPort}`,
        '--endpoint', clientEndpoint, '--dashboard-dir', path.join (ROOT, 'share', 'dashboard')]);
    const worker = start ('worker', PYTHON, [path.join (__dirname, 'worker.py'), workerEndpoint],
                          { PYTHONPATH: path.join (ROOT, 'workers', 'python'),
                            PYTHONDONTWRITEBYTECODE: '1' });

    //  ---- the HTTP API, as the test's own client ------------------------
    async function call (method, route, body) {
        const headers = { Authorization: 'Bearer ' + TOKEN };
        if (body !== undefined)
            headers ['Content-Type'] = 'application/json';
        const response = await fetch (base + route, {
            method, headers,
            body: body !== undefined ? JSON.stringify (body) : undefined });
        const text = await response.text ();
        if (!response.ok)
            throw new Error (`${method} ${route}: ${response.status} ${text}`);
        return (response.headers.get ('content-type') || '').includes ('json') ? JSON.parse (text) : text;
    }
    const get = (route) => call ('GET', route);
    const post = (route, body) => call ('POST', route, body);

    await until (async () => (await fetch (base + '/healthz',
                                           { headers: { Authorization: 'Bearer ' + TOKEN } })).ok,
                 'actd-http /healthz');
    await until (async () => (await get ('/v1/stats')).workers.some ((w) => w.name === 'dash-worker'),
                 'the worker to register');
    log ('actd, actd-http and the worker are up');

    //  A trip planner's context: what the user said, then a plan of four
    //  calls (two searches feed a summary, which feeds a review that runs
    //  until cancelled); and two other contexts, one of another prefix
    const ctx = 'trip-paris';
    await post (`/v1/contexts/${ctx}/messages`,
                { type: 'data', kind: 'user', data: { city: 'Paris', days: 3 } });
    await post (`/v1/contexts/${ctx}/messages`, { type: 'text', text: 'Plan three days in Paris.' });
    const { call_ids: plan } = await post (`/v1/contexts/${ctx}/plans`, [
        { _tool: 'search', _outputPath: '†research.hotels', city: '†user.city' },
        { _tool: 'search', _outputPath: '†research.sights', city: '†user.city', what: 'sights' },
        { _tool: 'summarize', _outputPath: '†plan.summary', _outputMethod: 'set',
          hotels: '†research.hotels', sights: '†research.sights' },
        { _tool: 'slow', _outputPath: '†plan.review', summary: '†plan.summary' }]);
    assert.equal (plan.length, 4);
    await post ('/v1/contexts/trip-rome/messages', { type: 'data', kind: 'user', data: { city: 'Rome' } });
    await post ('/v1/contexts/other-ctx/messages', { type: 'data', kind: 'user', data: { x: 1 } });
    await until (async () => (await get (`/v1/calls/${plan [3]}`)).state === 'running',
                 'the review call to run');
    log ('plan', plan.join (','), 'submitted; the review runs');

    //  ---- the browser ---------------------------------------------------
    fs.mkdirSync (BUILD, { recursive: true });
    const problems = [];
    let others = [];        //  refusedStreams' and restartedActd's actd and actd-http
    const browser = await puppeteer.launch ({
        executablePath: CHROMIUM, headless: true,
        args: (process.getuid?.() === 0 ? ['--no-sandbox'] : []).concat (['--disable-gpu']),
        defaultViewport: { width: 1600, height: 1000 } });
    try {
        const page = await browser.newPage ();
        page.on ('console', (message) => {
            if (message.type () === 'error')
                problems.push (`console error: ${message.text ()} ${JSON.stringify (message.location ())}`);
        });
        page.on ('pageerror', (error) => problems.push ('page error: ' + error.message));
        //  What the page's Content-Security-Policy refused (a script, a
        //  style, an image of its own would be a page that no longer works)
        await page.evaluateOnNewDocument (() => {
            window.__violations = [];
            document.addEventListener ('securitypolicyviolation', (event) =>
                window.__violations.push (`${event.violatedDirective} ${event.blockedURI}`));
        });
        page.on ('requestfailed', (request) => {
            //  The event stream is cut when the page leaves, and a view
            //  leaving aborts its poll in flight: not problems
            if (!request.url ().includes ('/events') && request.failure ()?.errorText !== 'net::ERR_ABORTED')
                problems.push (`request failed: ${request.url ()} ${request.failure ()?.errorText}`);
        });
        let navigations = 0;
        page.on ('framenavigated', (frame) => {
            if (frame === page.mainFrame ())
                navigations++;
        });
        const text = (selector) => page.$eval (selector, (node) => node.textContent).catch (() => null);

        //  -- the token: taken from ?token= once, kept in sessionStorage,
        //  sent as Authorization (and as access_token to the event stream)
        assert.equal ((await fetch (base + '/v1/stats')).status, 401);
        await page.goto (`${base}/?token=${TOKEN}`, { waitUntil: 'load' });
        await until (async () => !page.url ().includes ('token='), 'the token out of the address');
        assert.equal (await page.evaluate (() => sessionStorage.getItem ('actd-dashboard-token')), TOKEN);

        //  -- the page's own parsing, in the page: references, which call
        //  feeds which, and percentiles of a cumulative histogram
        const units = await page.evaluate (async () => {
            const refs = await import ('/ui/refs.js');
            const { quantile } = await import ('/ui/overview.js');
            const { number } = await import ('/ui/util.js');
            const texts = (text) => refs.referencesIn (text).map (refs.refText);
            const feeds = (target, read) => refs.feeds (refs.referencesIn (target) [0],
                                                        refs.referencesIn (read) [0]);
            const histogram = { le: [1, 2, 5, 10, '+Inf'], counts: [0, 10, 10, 20, 20], count: 20 };
            return {
                plain: texts ('†a.b.c'),
                alternatives: texts ('†state.reply || †state.problem'),
                brackets: texts ('†s["x.y"][2].z'),
                escaped: texts ('††not.a.ref'),
                notAtStart: texts ('see †user.name'),
                gate: texts ('†user.city & †user.days'),
                ancestor: feeds ('†state', '†state.a.b'),
                descendant: feeds ('†state.a.b', '†state.a'),
                sibling: feeds ('†state.a', '†state.b'),
                otherKind: feeds ('†a.x', '†b.x'),
                dash: feeds ('†list.-', '†list.3'),
                p50: quantile (histogram, 0.5), p75: quantile (histogram, 0.75),
                p100: quantile (histogram, 1), empty: quantile ({ le: [], counts: [], count: 0 }, 0.5),
                numbers: [9999, 12345, 999499, 999500, 999999, 1234567, 999999999, 999999999999,
                          1e15, -999500, 0.5, 123.4].map ((value) => number (value))
            };
        });
        assert.deepEqual (units, {
            plain: ['†a.b.c'], alternatives: ['†state.reply', '†state.problem'],
            brackets: ['†s.x.y.2.z'], escaped: [], notAtStart: [],
            gate: ['†user.city', '†user.days'],
            ancestor: true, descendant: true, sibling: false, otherKind: false, dash: true,
            p50: 2, p75: 7.5, p100: 10, empty: null,
            //  Rounded into the next unit, not "1.00e+3k"
            numbers: ['9999', '12.3k', '999k', '1.00M', '1.00M', '1.23M', '1.00G', '1.00T',
                      '1.00e+15', '-1.00M', '0.50', '123'] });

        //  -- overview: the worker and the activity counts of STATS
        await page.waitForSelector ('#workers tr[data-worker="dash-worker"]', { timeout: TIMEOUT_MS });
        const workerRow = await page.$eval ('#workers tr[data-worker="dash-worker"]',
                                            (row) => [...row.cells].map ((cell) => cell.textContent));
        assert.equal (workerRow [1], 'python');
        assert.deepEqual (workerRow [2].split (', ').sort (), ['search', 'slow', 'summarize']);
        assert.equal (workerRow [4], '8');
        const cell = (activity, field) =>
            text (`#activities tr[data-activity="${activity}"] td[data-field="${field}"]`);
        await until (async () => await cell ('search', 'done') === '2'
                                 && await cell ('summarize', 'done') === '1'
                                 && await cell ('slow', 'running') === '1',
                     'the overview to show search done 2, summarize done 1, slow running 1');
        const stats = await get ('/v1/stats');
        for (const name of ['search', 'summarize', 'slow'])
            for (const field of ['queued', 'running', 'done'])
                assert.equal (await cell (name, field), String (stats.activities [name] [field]),
                              `${name} ${field} as STATS says`);
        assert.match (await text ('#totals'), /calls/);
        //  Latencies from the STATS histograms: every search ended
        for (const field of ['queue-p50', 'run-p50', 'total-p50', 'total-p99'])
            assert.match (await cell ('search', field), /^[0-9.]+ (ms|s)$/, 'search ' + field);
        assert.equal (await cell ('slow', 'total-p50'), '–');        //  none ended
        log ('overview: the worker and the activity counts are shown');
        await page.screenshot ({ path: path.join (BUILD, 'dashboard-overview.png') });

        //  -- contexts: searched by prefix
        await page.click ('nav a[data-view="contexts"]');
        await page.waitForSelector ('#prefix', { timeout: TIMEOUT_MS });
        await page.type ('#prefix', 'trip-');
        await until (async () => {
            const listed = await page.$$eval ('#contexts tbody tr[data-context]',
                                              (rows) => rows.map ((row) => row.dataset.context));
            return listed.join (',') === 'trip-paris,trip-rome';
        }, 'the contexts view to list trip-paris and trip-rome only');
        assert.match (await text (`#contexts tr[data-context="${ctx}"]`), /trip-paris\s*[0-9]/);
        await page.click (`#contexts tr[data-context="${ctx}"] a`);
        log ('contexts: the prefix search lists the two trips');

        //  -- one context: timeline, view and plan
        await page.waitForSelector ('#timeline', { timeout: TIMEOUT_MS });
        const history = await get (`/v1/contexts/${ctx}/history?from=1&limit=100`);
        await until (async () => (await page.$$ ('#timeline .entry.msg')).length === history.length,
                     `the timeline to show the ${history.length} messages`);
        const output = history.find ((message) => message._callId === plan [2]);
        assert.ok (output, 'the summary was written');
        const entry = `#timeline .entry.msg[data-seq="${output._seq}"]`;
        assert.match (await text (entry + ' .origin'), /#\d+ summarize/);
        assert.match (await text (entry + ' .origin .params'), /"hotels":"†research.hotels"/);
        assert.equal (await text (entry + ' .origin .method'), 'set');
        assert.equal (await text (entry + ' .origin .target'), '→ †plan.summary');
        assert.match (await text (entry + ' pre.data'), /3 hotels, 3 sights/);
        const viewOf = () => get (`/v1/contexts/${ctx}/view?format=text`);
        await until (async () => await text ('#view') === await viewOf (),
                     'the view to be /view?format=text');
        await until (async () => {
            const nodes = await page.$$eval ('#plan g.node', (list) => list.map ((node) =>
                [node.dataset.call, [...node.classList].find ((c) => c.startsWith ('st-'))]));
            const states = Object.fromEntries (nodes);
            return plan.every ((id) => id in states) && states [plan [0]] === 'st-ok'
                && states [plan [2]] === 'st-ok' && states [plan [3]] === 'st-running';
        }, 'the plan graph to show the four calls, the review running');
        const edges = await page.$$eval ('#plan path.edge', (list) =>
            list.map ((edge) => edge.dataset.from + '>' + edge.dataset.to).sort ());
        assert.deepEqual (edges, [`${plan [0]}>${plan [2]}`, `${plan [1]}>${plan [2]}`,
                                  `${plan [2]}>${plan [3]}`].sort ());
        log ('context: timeline, view and plan graph are shown');

        //  -- live: a message and a call appended while the page is open
        await page.evaluate (() => { window.__notReloaded = true; });
        const before = navigations;
        const { seq } = await post (`/v1/contexts/${ctx}/messages`,
                                    { type: 'text', text: 'Add a food tour, please.' });
        await page.waitForSelector (`#timeline .entry.msg[data-seq="${seq}"]`, { timeout: TIMEOUT_MS });
        assert.match (await text (`#timeline .entry.msg[data-seq="${seq}"]`), /Add a food tour/);
        const { call_id: food } = await post (`/v1/contexts/${ctx}/calls?wait=1`,
            { _tool: 'search', _outputPath: '†research.food', city: '†user.city', what: 'food' });
        await until (async () => (await text ('#view'))?.includes ('Paris food 1')
                                 && await text ('#view') === await viewOf (),
                     'the view to show the new output');
        await until (() => page.$eval (`#plan g.node[data-call="${food}"]`,
                                       (node) => node.classList.contains ('st-ok')),
                     'the new call in the graph, ok');
        await until (() => page.$ (`#timeline .entry.call[data-call="${food}"].st-running`),
                     'the new call running in the timeline');
        assert.equal (await page.evaluate (() => window.__notReloaded), true, 'the page was reloaded');
        assert.equal (navigations, before, 'the page navigated');
        log ('context: the new message and call came without a reload');

        await page.click (`#plan g.node[data-call="${plan [3]}"]`);
        await until (async () => (await text ('#call-detail'))?.includes ('reviewing'),
                     'the detail of the review (its progress)');
        //  The dark theme (the system's, followed by default) for the picture
        await page.emulateMediaFeatures ([{ name: 'prefers-color-scheme', value: 'dark' }]);
        assert.equal (await page.evaluate (() =>
            getComputedStyle (document.body).getPropertyValue ('color-scheme')), 'dark');
        const shot = path.join (BUILD, 'dashboard.png');
        await page.screenshot ({ path: shot });
        log ('screenshots:', shot, path.join (BUILD, 'dashboard-overview.png'));
        if (process.env.ACTD_DASHBOARD_DOCS === '1') {
            fs.copyFileSync (shot, path.join (ROOT, 'docs', 'dashboard.png'));
            log ('copied to docs/dashboard.png');
        }
        assert.deepEqual (problems, [], 'the page had errors:\n' + problems.join ('\n'));
        assert.deepEqual (await page.evaluate (() => window.__violations), [],
                          'the page broke its own Content-Security-Policy');

        //  -- headers: the page may not be framed (clickjacking), nothing
        //  is sniffed, no Referer leaves; and another site's frame of the
        //  dashboard stays empty
        for (const route of ['/', '/ui/app.js', '/ui/style.css']) {
            const headers = (await fetch (base + route)).headers;
            assert.equal (headers.get ('x-frame-options'), 'DENY', route);
            assert.match (headers.get ('content-security-policy') || '', /frame-ancestors 'none'/, route);
            assert.match (headers.get ('content-security-policy') || '', /default-src 'self'/, route);
        }
        for (const [route, auth] of [['/', false], ['/ui/nothing.js', false], ['/v1/stats', true],
                                     ['/v1/stats', false], ['/healthz', true]]) {
            const response = await fetch (base + route,
                { headers: auth ? { Authorization: 'Bearer ' + TOKEN } : {} });
            assert.equal (response.headers.get ('x-content-type-options'), 'nosniff', route);
            assert.equal (response.headers.get ('referrer-policy'), 'no-referrer', route);
        }
        const framer = require ('node:http').createServer ((request, answer) => {
            answer.setHeader ('Content-Type', 'text/html');
            answer.end (`<iframe src="${base}/#/c/${ctx}" onload="document.title = 'loaded'"></iframe>`);
        });
        await new Promise ((resolve) => framer.listen (0, '127.0.0.1', resolve));
        try {
            const evil = await browser.newPage ();
            await evil.goto (`http://127.0.0.1:${framer.address ().port}/`, { waitUntil: 'load' });
            await until (async () => await evil.title () === 'loaded', 'the frame to load');
            const framed = evil.frames ().filter ((frame) => frame !== evil.mainFrame ());
            assert.equal (framed.length, 1);
            assert.equal (await framed [0].$ ('header.top'), null, 'another site framed the dashboard');
            await evil.close ();
        }
        finally {
            framer.close ();
        }
        log ('headers: the dashboard cannot be framed, its CSP holds');

        //  -- integers beyond 2^53 are shown with actd's digits (SEMANTICS.md
        //  section 1), from the history, from the event stream, in a
        //  call's parameters and in its detail
        const big = '9007199254740993';
        const negative = '-9007199254740995';
        const raw = async (route, text) => {
            const response = await fetch (base + route, { method: 'POST', body: text,
                headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' } });
            assert.ok (response.ok, `${route}: ${response.status} ${await response.text ()}`);
        };
        await raw ('/v1/contexts/big-numbers/messages', `{"type":"data","kind":"state","data":{"id":${big}}}`);
        await raw ('/v1/contexts/big-numbers/calls?wait=1',
                   `{"_tool":"search","city":"Oslo","order":${big},"_outputPath":"†found"}`);
        await page.evaluate (() => { location.hash = '#/c/big-numbers'; });
        await until (async () => (await page.$$ ('#timeline .entry.msg')).length === 2,
                     'the two messages of big-numbers');
        await raw ('/v1/contexts/big-numbers/messages', `{"type":"data","kind":"state","data":{"live":${negative}}}`);
        await page.waitForSelector ('#timeline .entry.msg[data-seq="3"]', { timeout: TIMEOUT_MS });
        assert.match (await text ('#timeline .entry.msg[data-seq="1"] pre.data'), new RegExp (big));
        assert.match (await text ('#timeline .entry.msg[data-seq="2"] code.params'), new RegExp (big));
        assert.match (await text ('#timeline .entry.msg[data-seq="3"] pre.data'), new RegExp (negative));
        await page.click ('#timeline .entry.msg[data-seq="2"] a.call-link');
        await until (async () => (await text ('#call-detail'))?.includes ('Oslo'), 'the call detail');
        assert.match (await text ('#call-detail'), new RegExp (big));
        assert.deepEqual (problems, [], 'the page had errors:\n' + problems.join ('\n'));
        log ('numbers: integers beyond 2^53 are shown exactly');

        //  -- the contexts "." and "..": their page reads them (through
        //  /v1/context/...?context=, which a browser does not rewrite)
        for (const id of ['.', '..']) {
            await post (`/v1/context/messages?context=${encodeURIComponent (id)}`,
                        { type: 'text', text: `in context ${id}` });
            await page.evaluate ((hash) => { location.hash = hash; }, '#/c/' + encodeURIComponent (id));
            await until (async () => await text ('h1.ctx-id') === id, `the page of "${id}"`);
            await page.waitForSelector ('#timeline .entry.msg[data-seq="1"]', { timeout: TIMEOUT_MS });
            assert.equal (await text ('#timeline .entry.msg[data-seq="1"] pre.data'), `in context ${id}`);
            //  Live too: the event stream names it likewise
            await post (`/v1/context/messages?context=${encodeURIComponent (id)}`,
                        { type: 'text', text: `more in ${id}` });
            await page.waitForSelector ('#timeline .entry.msg[data-seq="2"]', { timeout: TIMEOUT_MS });
        }
        assert.deepEqual (problems, [], 'the page had errors:\n' + problems.join ('\n'));
        log ('contexts "." and "..": their pages show their messages');

        //  -- a tab without the token is refused (401: its console shows
        //  that, as it should), asks for one, and works once given it
        const other = await browser.newPage ();
        await other.goto (base + '/', { waitUntil: 'load' });
        await other.waitForSelector ('#token-form:not([hidden])', { timeout: TIMEOUT_MS });
        await other.waitForSelector ('#status.auth', { timeout: TIMEOUT_MS });
        await other.type ('#token-form input[name="token"]', TOKEN);
        await other.click ('#token-form button[type="submit"]');
        await other.waitForSelector ('#workers tr[data-worker="dash-worker"]', { timeout: TIMEOUT_MS });
        assert.equal (await other.$eval ('#status', (node) => node.className), 'status live');
        await other.close ();
        log ('token: from ?token=, and asked for when missing');

        others = await refusedStreams (browser);
        others.push (...await restartedActd (browser));
    }
    finally {
        await browser.close ();
    }

    //  The review is cancelled so that everything stops cleanly
    await post (`/v1/calls/${plan [3]}/cancel`, {});
    for (const child of others)         //  Their actd-http's grace meanwhile
        child.kill ('SIGTERM');
    for (const child of [worker, http, actd, ...others]) {
        if (!others.includes (child))
            child.kill ('SIGTERM');
        const { code, signal } = await child.exited;
        assert.ok (code === 0, `${child.label} exited ${code ?? signal} on SIGTERM:\n${logOf (child)}`);
    }
}

main ().then (() => {
    log ('PASS');
    fs.rmSync (scratch, { recursive: true, force: true });
}, (error) => {
    console.error ('dashboard: FAIL:', error.stack || error);
    for (const child of children)
        console.error (`---- ${child.label} log ----\n${logOf (child).slice (-4000)}`);
    process.exitCode = 1;
}).finally (() => {
    for (const child of children)
        if (child.exitCode === null && child.signalCode === null)
            child.kill ('SIGKILL');
});
