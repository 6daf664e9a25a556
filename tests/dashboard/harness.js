//  What the dashboard test's scenarios share (test_dashboard.js,
//  streams.js): the programs under test, a scratch directory, children
//  started with their logs, polling, and pages that record their event
//  stream.

'use strict';

const { spawn } = require ('node:child_process');
const fs = require ('node:fs');
const net = require ('node:net');
const os = require ('node:os');
const path = require ('node:path');

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

module.exports = { ROOT, ACTD, ACTD_HTTP, ACTCTL, CHROMIUM, BUILD, PYTHON, TIMEOUT_MS, TOKEN,
                   children, scratch, log, freePort, start, logOf, until, appender,
                   streamPage };
