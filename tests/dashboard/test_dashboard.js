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
//  whose stream reopens while its actd, or actd-http, restarts (those
//  scenarios are in streams.js, the helpers in harness.js). Any console
//  error or page
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
const fs = require ('node:fs');
const path = require ('node:path');
const puppeteer = require ('puppeteer-core');
const { ROOT, ACTD, ACTD_HTTP, ACTCTL, CHROMIUM, BUILD, PYTHON, TIMEOUT_MS, TOKEN, children,
        scratch, log, freePort, start, logOf, until } = require ('./harness');
const { refusedStreams, restartedActd } = require ('./streams');

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
