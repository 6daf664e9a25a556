'use strict';
//  Test harness: a real actd on free ports with a temporary SQLite store
//  (or the store option: a PostgreSQL URL from ./pg.js), a scripted
//  client-side broker, and small helpers to wait for states without fixed
//  sleeps.
//
//  The binary comes from $ACTD_BIN (set by ctest), else build-asan/bin/actd,
//  else build/bin/actd of the project.

const assert = require ('node:assert/strict');
const { spawn, execFile } = require ('node:child_process');
const fs = require ('node:fs');
const net = require ('node:net');
const os = require ('node:os');
const path = require ('node:path');
const zmq = require ('zeromq');
const { Client } = require ('..');

const ROOT = path.resolve (__dirname, '..', '..', '..');

//  The package's defaults from the environment (a broker, CURVE keys) are
//  the developer's, not the tests'
for (const name of ['ACTD_ENDPOINT', 'ACTD_WORKER_ENDPOINT', 'ACTD_SERVER_KEY', 'ACTD_CERT'])
    delete process.env [name];

function actdBinary () {
    const candidates = [process.env.ACTD_BIN,
                        path.join (ROOT, 'build-asan', 'bin', 'actd'),
                        path.join (ROOT, 'build', 'bin', 'actd')];
    for (const candidate of candidates)
        if (candidate && fs.existsSync (candidate))
            return candidate;
    throw new Error ('cannot find actd: set ACTD_BIN or build the project');
}

//  A program built beside actd (actctl, actd-example-worker)
function sibling (name) {
    return path.join (path.dirname (actdBinary ()), name);
}

//  Whether a listener can bind this port on loopback now (0: any port)
function s_probe (port) {
    return new Promise ((resolve) => {
        const server = net.createServer ();
        server.once ('error', () => resolve (null));
        server.listen (port, '127.0.0.1', () => {
            const bound = server.address ().port;
            server.close (() => resolve (bound));
        });
    });
}

//  The lowest port the kernel hands out to outgoing connections
function s_ephemeralLow () {
    try {
        return parseInt (fs.readFileSync ('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split (/\s+/) [0], 10) || 0;
    }
    catch {
        return 0;
    }
}

const taken = new Set ();

//  A TCP port nothing listens on right now, below the kernel's ephemeral
//  range: a port from listen (0) lies inside it, where another test's
//  outgoing connection may take it before actd binds it (ctest runs two
//  files at once). The harness of tests/integration does the same.
async function freePort () {
    const low = s_ephemeralLow ();
    for (let tries = 0; low > 12000 && tries < 200; tries++) {
        const port = 10000 + Math.floor (Math.random () * (low - 10000));
        if (!taken.has (port) && await s_probe (port) === port) {
            taken.add (port);
            return port;
        }
    }
    const port = await s_probe (0);
    if (port === null)
        throw new Error ('cannot find a free port');
    return port;
}

const sleep = (ms) => new Promise ((resolve) => setTimeout (resolve, ms));

//  Poll probe () until it returns a truthy value; returns that value
async function until (probe, what, timeoutMs = 30000) {
    const deadline = Date.now () + timeoutMs;
    for (;;) {
        const value = await probe ();
        if (value)
            return value;
        if (Date.now () > deadline)
            throw new Error ('timed out waiting for ' + what);
        await sleep (20);
    }
}

//  Run a program to its end (options as execFile's): resolves with its
//  stdout; rejects, with its stderr in the message, unless it exits 0
function runProgram (file, args, options = {}) {
    return new Promise ((resolve, reject) => execFile (file, args, options,
        (error, stdout, stderr) => error? reject (new Error (error.message + stderr))
                                        : resolve (stdout)));
}

//  The items of an async iterable, in an array
async function collect (iterable) {
    const items = [];
    for await (const item of iterable)
        items.push (item);
    return items;
}

//  A promise with its resolve outside
function gate () {
    let open;
    const promise = new Promise ((resolve) => { open = resolve; });
    promise.open = open;
    return promise;
}

//  An activity handler that answers 'released' once hold.gate opens (read
//  as each task starts, so a test may put a new gate there), or at once
//  when its task is cancelled
//  (hold.entered counts the tasks that reached it: release () waits for
//  one, so that a gate is never opened before its task takes it)
function held (hold) {
    hold.entered = hold.entered ?? 0;
    return async (params, task) => {
        hold.entered++;
        await Promise.race ([hold.gate, new Promise ((resolve) =>
            task.signal.addEventListener ('abort', resolve))]);
        return 'released';
    };
}

//  Let the held tasks go, once count of them have reached the handler
//  since entered was read (the handler takes hold.gate as it starts)
async function release (hold, entered, count = 1) {
    await until (() => hold.entered >= entered + count, 'the held task to start');
    hold.gate.open ();
    hold.gate = gate ();
}

//  A client-side broker scripted by the test: a ROUTER on a free port;
//  answer (frames) returns (or resolves with) the reply frames, a list of
//  replies (arrays of frames), or nothing; received holds every request's
//  frames, as strings
class ScriptedBroker {
    async start (answer) {
        this.endpoint = 'tcp://127.0.0.1:' + await freePort ();
        this.router = new zmq.Router ({ linger: 0 });
        await this.router.bind (this.endpoint);
        this.received = [];
        this.answer = answer;
        (async () => {
            for await (const [identity, ...frames] of this.router) {
                this.received.push (frames.map (String));
                const reply = this.answer && await this.answer (frames);
                const replies = reply && Array.isArray (reply [0])? reply: reply? [reply]: [];
                for (const frames of replies)
                    await this.router.send ([identity, ...frames]);
            }
        }) ().catch (() => {});
        return this;
    }

    //  The commands received so far, in order
    commands () {
        return this.received.map ((frames) => frames [1]);
    }

    close () {
        this.router.close ();
    }
}

//  A relay in front of the actd at endpoint that passes requests on and
//  loses the replies: a client hears nothing from it, as from a broker
//  that stored its request and died. close () closes both sockets
async function lossyRelay (endpoint) {
    const upstream = new zmq.Dealer ({ linger: 0 });
    upstream.connect (endpoint);
    let sending = Promise.resolve ();
    const relay = await new ScriptedBroker ().start ((frames) => {
        sending = sending.then (() => upstream.send (frames));
    });
    const close = relay.close.bind (relay);
    relay.close = () => { close (); upstream.close (); };
    return relay;
}

class Actd {
    constructor (options = {}) {
        this.dir = fs.mkdtempSync (path.join (os.tmpdir (), 'actd-node-test-'));
        this.store = options.store ?? path.join (this.dir, 'actd.db');
        this.logPath = path.join (this.dir, 'actd.log');
        this.heartbeatMs = options.heartbeatMs ?? 200;
        this.liveness = options.liveness ?? 3;
        this.args = options.args ?? [];
        this.clientOptions = options.clientOptions ?? {};   //  CURVE keys, say
        this.process = null;
        this.exit = null;
        this.starts = 0;
    }

    async start () {
        if (!this.clientEndpoint) {
            this.clientEndpoint = 'tcp://127.0.0.1:' + await freePort ();
            this.workerEndpoint = 'tcp://127.0.0.1:' + await freePort ();
        }
        this.starts++;
        fs.appendFileSync (this.logPath, `---- start ${this.starts} ----\n`);
        const log = fs.openSync (this.logPath, 'a');
        const env = { ...process.env };
        env.ASAN_OPTIONS = env.ASAN_OPTIONS || 'detect_leaks=1';
        this.process = spawn (actdBinary (), [
            '--db', this.store,
            '--client-endpoint', this.clientEndpoint,
            '--worker-endpoint', this.workerEndpoint,
            '--heartbeat-ms', String (this.heartbeatMs),
            '--liveness', String (this.liveness),
            '-v', ...this.args], { stdio: ['ignore', log, log], env });
        fs.closeSync (log);
        this.exit = new Promise ((resolve) =>
            this.process.once ('exit', (code, signal) => resolve ({ code, signal })));
        await this._waitReady ();
        return this;
    }

    async _waitReady () {
        const client = this.client ();
        let exited = null;
        this.exit.then ((status) => { exited = status; });
        try {
            const deadline = Date.now () + 30000;
            while (Date.now () < deadline) {
                if (exited)
                    throw new Error (`actd exited ${JSON.stringify (exited)}:\n${this.log ()}`);
                try {
                    await client.ping ({ timeoutMs: 500 });
                    return;
                }
                catch (error) {
                    if (error.code !== 'request_timeout')
                        throw error;
                }
            }
            throw new Error ('actd did not answer PING:\n' + this.log ());
        }
        finally {
            client.close ();
        }
    }

    //  SIGTERM; resolves with the exit code (0: a clean stop, no leak)
    async stop () {
        if (!this.process)
            return null;
        const child = this.process;
        this.process = null;
        if (child.exitCode === null && child.signalCode === null)
            child.kill ('SIGTERM');
        const timer = setTimeout (() => child.kill ('SIGKILL'), 60000);
        const { code, signal } = await this.exit;
        clearTimeout (timer);
        return signal? signal: code;
    }

    //  SIGTERM and assert exit code 0
    async stopClean () {
        const code = await this.stop ();
        assert.equal (code, 0, 'actd exited ' + code + ' on SIGTERM:\n' + this.log ());
    }

    //  stopClean (), and remove the store and log whatever happened
    async finish () {
        try {
            await this.stopClean ();
        }
        finally {
            this.cleanup ();
        }
    }

    //  SIGKILL: a crash
    async kill () {
        if (!this.process)
            return;
        const child = this.process;
        this.process = null;
        child.kill ('SIGKILL');
        await this.exit;
    }

    log () {
        try {
            return fs.readFileSync (this.logPath, 'utf8');
        }
        catch (error) {
            return '(no log)';
        }
    }

    client (options = {}) {
        return new Client ({ endpoint: this.clientEndpoint, ...this.clientOptions, ...options });
    }

    cleanup () {
        if (this.process)
            this.process.kill ('SIGKILL');
        fs.rmSync (this.dir, { recursive: true, force: true });
    }
}

module.exports = { Actd, ScriptedBroker, lossyRelay, until, sleep, gate, held, release, collect, runProgram, freePort, sibling, ROOT };
