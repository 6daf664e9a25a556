//  The dashboard test's scenarios of a context page's event stream that
//  ends (docs/http.md, Server-Sent Events): refused busy, actd restarted,
//  actd-http restarted, a page opened while actd is down. Each runs an
//  actd and actd-http of its own and returns them, to be stopped with the
//  others.

'use strict';

const assert = require ('node:assert/strict');
const fs = require ('node:fs');
const net = require ('node:net');
const path = require ('node:path');
const { ROOT, ACTD, ACTD_HTTP, ACTCTL, TIMEOUT_MS, TOKEN, scratch, log, freePort, start, logOf,
        until, appender, streamPage } = require ('./harness');

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

//  A context page opened while actd is down (stop () stops it, bringBack ()
//  starts it again and waits for actd-http to reach it): the page cannot
//  read the history and says so in its banner, and its stream, retried,
//  brings the messages (1 to last) once actd is back; the banner goes
//  then (it stayed, over a timeline that was whole). Returns actd.
async function openedWhileDown (browser, url, last, stop, bringBack) {
    await stop ();
    const { page, waitFor, shown } = await streamPage (browser);
    await page.goto (url, { waitUntil: 'load' });
    await waitFor (() => /Cannot read the history/.test (
        document.querySelector ('.error-banner').textContent), 'the banner: no history');
    const actd = await bringBack ();
    await shown (last);
    await waitFor (() => document.querySelector ('.error-banner').hidden,
                   'the banner gone once the stream brought the history');
    const seqs = await page.evaluate (() => [...document.querySelectorAll (
        '#timeline .entry.msg')].map ((node) => Number (node.dataset.seq)));
    assert.deepEqual (seqs.sort (), Array.from ({ length: last }, (_, i) => i + 1),
                      'the timeline shows each message once');
    log (`opened while actd is down: banner, then messages 1 to ${last} and no banner`);
    await page.close ();
    return actd;
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
//  Events), against an actd and actd-http of their own, with the default
//  request_timeout_ms (30 s, as TIMEOUT_MS). The stream left open would
//  outlive the restart (actd-http's watch resumes once actd is back), so
//  the page's connection is cut too while actd is down (by a proxy
//  between the page and actd-http): each stream it opens then finds actd
//  away, is answered 200 with event: error unreachable within a second
//  (504 before: EventSource gave up, "stream closed" for good; then 200
//  with timeout, but only after the 30 s each), the page says
//  "reconnecting…", and once actd is back on the same endpoint and store
//  it shows the messages appended since, each once, without a reload;
//  then actd-http restarts (restartedHttp). Returns actd and actd-http,
//  to be stopped with the others.
async function restartedActd (browser) {
    const [clientPort, workerPort, httpPort] = [await freePort (), await freePort (), await freePort ()];
    const endpoint = `tcp://127.0.0.1:${clientPort}`;
    const base = `http://127.0.0.1:${httpPort}`;
    const startActd = () => start ('restart-actd', ACTD, ['--db', path.join (scratch, 'restart.db'),
        '--client-endpoint', endpoint, '--worker-endpoint', `tcp://127.0.0.1:${workerPort}`]);
    let actd = startActd ();
    const httpConfig = path.join (scratch, 'restart-http.cfg');
    fs.writeFileSync (httpConfig, `tokens\n    dashboard\n        token = "${TOKEN}"\n`);
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
    const down = Date.now ();
    await waitFor (() => document.getElementById ('stream').textContent === 'reconnecting…'
                         && window.__stream.errors.some ((data) => /"unreachable"/.test (data)),
                   'the streams opened while actd is down to end unreachable, the page reconnecting');
    log (`restarted actd: the page's stream ended unreachable ${Date.now () - down} ms after `
         + 'its connection was cut');
    actd = startActd ();
    const back = Date.now ();
    await healthy ();
    const afterSeq = await append (ctx, 'after the restart');
    await shown (afterSeq);
    log (`restarted actd: the page live again ${Date.now () - back} ms after actd started`);
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
    //  Reconnecting once for each restart, never "live" in between while
    //  actd or actd-http was away (each retried stream opens, then ends:
    //  the pill flickered live before each "reconnecting…")
    assert.deepEqual (pills, ['connecting…', 'live', 'reconnecting…', 'live', 'reconnecting…',
                              'live'], 'the pill said ' + pills.join (', '));
    //  The stream cut is Chromium's console error, not the page's; so are
    //  the header's polls that a stopping actd-http answered 503 and, while
    //  it is down, those the proxy closed unanswered (a network error:
    //  ERR_EMPTY_RESPONSE, ERR_SOCKET_NOT_CONNECTED, ... as the timing goes)
    const expected = new RegExp ('ERR_INCOMPLETE_CHUNKED_ENCODING'
                                 + '|Failed to load resource: net::ERR_'
                                 + '|status of 503 \\(Service Unavailable\\)');
    const real = problems.filter ((problem) => !expected.test (problem));
    assert.deepEqual (real, [], 'the page had errors:\n' + real.join ('\n'));
    log (`restarted actd, then actd-http: the page said ${pills.join (', ')}; messages ${[...seqs].sort ().join (', ')} once`);
    await page.close ();
    between.close ();
    const stopActd = async () => {
        actd.kill ('SIGTERM');
        await actd.exited;
    };
    actd = await openedWhileDown (browser, `${base}/?token=${TOKEN}#/c/${ctx}`, 4, stopActd,
                                  async () => {
                                      const again = startActd ();
                                      await healthy ();
                                      return again;
                                  });
    return [http, actd];
}

module.exports = { refusedStreams, restartedActd };
