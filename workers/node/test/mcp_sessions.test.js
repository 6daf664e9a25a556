'use strict';
//  actd-mcp (lib/mcp.js, bin/actd-mcp.js) where sessions and actd come
//  and go: a call whose MCP session closes mid-call (HTTP DELETE, a stdio
//  client that goes) is cancelled at actd; a call whose actd dies ends
//  (unreachable); an actd down at start holds neither initialize nor
//  tools/list_changed; HTTP sessions refused, idle or too many, request
//  bodies too large, and JSON-RPC batches (refused from 2025-06-18 on);
//  confine; TOOLS' error when it fails.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const http = require ('node:http');
const path = require ('node:path');
const { Client: McpClient } = require ('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require ('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } =
    require ('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = require ('@modelcontextprotocol/sdk/types.js');
const { Worker } = require ('..');
const { ActdMcp } = require ('../lib/mcp');
const { Actd, until, sleep, freePort } = require ('./actd');

const BIN = path.join (__dirname, '..', 'bin', 'actd-mcp.js');
const INITIALIZE = JSON.stringify ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
    protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });

//  A Node worker serving activities ({ name: [handler, tool] }), once
//  actd lists it in STATS
async function serve (actd, name, activities) {
    const worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                                 name, capacity: 10 });
    for (const [activity, [handler, tool]] of Object.entries (activities))
        worker.activity (activity, handler, tool);
    worker.run ();
    const probe = actd.client ();
    try {
        await until (async () => (await probe.stats ()).workers.some ((w) => w.name === name),
                     `worker ${name} in STATS`);
    } finally {
        probe.close ();
    }
    return worker;
}

//  A tool that takes 20 s unless cancelled; counts in seen
function s_slow (seen) {
    return [async (params, task) => {
        seen.started++;
        await new Promise ((resolve) => {
            task.signal.addEventListener ('abort', resolve);
            setTimeout (resolve, 20000).unref ();
        });
        if (task.signal.aborted)
            seen.aborted++;
        return 'finished';
    }, { description: 'Takes 20 s unless cancelled' }];
}

//  An MCP client of actd-mcp's HTTP server at port: [client, transport]
async function s_http_client (port) {
    const transport = new StreamableHTTPClientTransport (new URL (`http://127.0.0.1:${port}/mcp`));
    const client = new McpClient ({ name: 'actd-mcp-sessions-test', version: '1.0.0' });
    await client.connect (transport);
    return [client, transport];
}

//  A raw request to actd-mcp's HTTP server: { status, headers, body }.
//  body: a string, or a function of the request that writes it
function s_raw (port, method, body, headers = {}) {
    return new Promise ((resolve, reject) => {
        const request = http.request ({ host: '127.0.0.1', port, path: '/mcp', method,
            agent: false, headers: { 'content-type': 'application/json',
                                     accept: 'application/json, text/event-stream', ...headers } },
        (response) => {
            let text = '';
            response.setEncoding ('utf8');
            response.on ('data', (chunk) => { text += chunk; });
            response.on ('end', () => resolve ({ status: response.statusCode,
                                                 headers: response.headers, body: text }));
        });
        request.on ('error', reject);
        if (typeof body === 'function')
            body (request);
        else
            request.end (body);
    });
}

//  promise, or a rejection naming what after ms
function s_within (promise, ms, what) {
    let timer;
    return Promise.race ([promise, new Promise ((resolve, reject) => {
        timer = setTimeout (() => reject (new Error (`no ${what} within ${ms} ms`)), ms);
    })]).finally (() => clearTimeout (timer));
}

describe ('actd-mcp sessions', () => {
    let actd, worker;
    const seen = { started: 0, aborted: 0 };

    before (async () => {
        actd = await new Actd ().start ();
        worker = await serve (actd, 'sessions-worker', {
            slow: s_slow (seen),
            echo: [(params, task) => ({ params, context: task.context }), { description: 'Echo' }]
        });
    });

    after (async () => {
        if (worker)
            await worker.stop ();
        await actd.finish ();
    });

    it ('cancels the call of an HTTP session deleted mid-call', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, pollMs: 100 }).start ();
        try {
            const port = await mcp.listenHttp (0);
            const [client, transport] = await s_http_client (port);
            const { started, aborted } = seen;
            const call = client.callTool ({ name: 'slow', arguments: {} }).catch ((error) => error);
            await until (() => seen.started > started, 'the slow task started');
            await transport.terminateSession ();
            await client.close ();
            await call;
            await until (() => seen.aborted > aborted, 'the task cancelled', 5000);
        } finally {
            await mcp.close ();
        }
    });

    it ('cancels the call of a stdio client that goes mid-call', async () => {
        const transport = new StdioClientTransport ({ command: process.execPath,
            args: [BIN, '--endpoint', actd.clientEndpoint, '--quiet'], stderr: 'ignore' });
        const client = new McpClient ({ name: 'actd-mcp-sessions-test', version: '1.0.0' });
        await client.connect (transport);
        const { started, aborted } = seen;
        client.callTool ({ name: 'slow', arguments: {} }).catch (() => {});
        await until (() => seen.started > started, 'the slow task started');
        await client.close ();
        await until (() => seen.aborted > aborted, 'the task cancelled', 5000);
    });

    it ('cancels a call whose ACCEPTED comes once close () began', async () => {
        //  A worker may start a task before its ACCEPTED reaches the
        //  client (early tasks): close () waits for it, then sends CANCEL
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, pollMs: 100 }).start ();
        const submit = mcp.client.submit.bind (mcp.client);
        mcp.client.submit = async (...args) => {
            const submitted = await submit (...args);
            await sleep (300);
            return submitted;
        };
        const port = await mcp.listenHttp (0);
        const [client] = await s_http_client (port);
        const { started, aborted } = seen;
        client.callTool ({ name: 'slow', arguments: {} }).catch (() => {});
        await until (() => seen.started > started, 'the slow task started');
        await mcp.close ();
        await client.close ();
        await until (() => seen.aborted > aborted, 'the task cancelled', 5000);
    });

    it ('ends a call as unreachable when its actd dies', async () => {
        const dying = await new Actd ().start ();
        const alone = { started: 0, aborted: 0 };
        const served = await serve (dying, 'dying-worker', { slow: s_slow (alone) });
        const mcp = await new ActdMcp ({ endpoint: dying.clientEndpoint, pollMs: 100,
                                         timeoutMs: 1000 }).start ();
        try {
            const port = await mcp.listenHttp (0);
            const [client] = await s_http_client (port);
            const call = client.callTool ({ name: 'slow', arguments: {} });
            await until (() => alone.started > 0, 'the slow task started');
            await dying.kill ();
            const started = Date.now ();
            //  Its DONE never comes: it waited for ever
            const result = await Promise.race ([call, sleep (10000).then (() => 'still waiting')]);
            assert.notEqual (result, 'still waiting');
            assert.equal (result.isError, true);
            //  Which ends it is a race: TOOLS unanswered for timeoutMs
            //  (unreachable), or the client library seeing the connection
            //  drop while a request of the call's (its STATUS, the watch
            //  that follows it) was out (disconnected); either way at once
            assert.match (result.content [0].text,
                          /^(unreachable: actd has not answered for \d+ ms|disconnected: )/);
            assert.ok (Date.now () - started < 5000);
            await client.close ();
        } finally {
            await mcp.close ();
            await served.stop ();
            dying.cleanup ();
        }
    });

    it ('serves at once while actd is down, and lists its tools once it is up', async () => {
        const later = new Actd ();
        later.clientEndpoint = 'tcp://127.0.0.1:' + await freePort ();
        later.workerEndpoint = 'tcp://127.0.0.1:' + await freePort ();
        const transport = new StdioClientTransport ({ command: process.execPath,
            args: [BIN, '--endpoint', later.clientEndpoint, '--poll-ms', '100', '--quiet'],
            stderr: 'ignore' });
        const client = new McpClient ({ name: 'actd-mcp-sessions-test', version: '1.0.0' });
        const changed = [];
        client.setNotificationHandler (ToolListChangedNotificationSchema,
                                       (notification) => changed.push (notification));
        let served = null;
        try {
            const started = Date.now ();
            //  initialize waited for the first TOOLS' timeout (30 s)
            await client.connect (transport);
            const took = Date.now () - started;
            assert.ok (took < 10000, `initialize took ${took} ms`);
            assert.deepEqual ((await client.listTools ()).tools, []);
            await later.start ();
            served = await serve (later, 'later-worker', { echo: [(params) => params, {}] });
            //  The session was shown no tools: it hears of the new ones
            await until (() => changed.length > 0, 'tools/list_changed', 10000);
            const { tools } = await client.listTools ();
            assert.deepEqual (tools.map ((tool) => tool.name), ['echo']);
        } finally {
            await client.close ();
            if (served)
                await served.stop ();
            if (later.starts)
                await later.finish ();
            else
                later.cleanup ();
        }
    });

    it ('answers a tool call with TOOLS\' error when TOOLS fails', async () => {
        const mcp = await new ActdMcp ({ endpoint: 'tcp://127.0.0.1:' + await freePort (),
                                         timeoutMs: 300 }).start ();
        try {
            const port = await mcp.listenHttp (0);
            const [client] = await s_http_client (port);
            const result = await client.callTool ({ name: 'echo', arguments: {} });
            assert.equal (result.isError, true);
            assert.match (result.content [0].text, /^request_timeout: no reply to TOOLS/);
            await client.close ();
        } finally {
            await mcp.close ();
        }
    });

    it ('keeps no session of a refused initialize', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint }).start ();
        try {
            const port = await mcp.listenHttp (0);
            for (let index = 0; index < 20; index++) {
                const reply = await s_raw (port, 'POST', INITIALIZE,
                                           { accept: 'application/json' });
                assert.equal (reply.status, 406);
            }
            assert.equal (mcp._sessions.size, 0);
            assert.equal ((await s_raw (port, 'POST', INITIALIZE)).status, 200);
            assert.equal (mcp._sessions.size, 1);
        } finally {
            await mcp.close ();
        }
    });

    it ('closes an HTTP session idle for sessionIdleMs', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint,
                                         sessionIdleMs: 500 }).start ();
        try {
            const port = await mcp.listenHttp (0);
            //  The SDK's client holds a GET stream open: never idle
            const [client] = await s_http_client (port);
            const reply = await s_raw (port, 'POST', INITIALIZE);
            assert.equal (reply.status, 200);
            const id = reply.headers ['mcp-session-id'];
            const list = JSON.stringify ({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
            const headers = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
            assert.equal ((await s_raw (port, 'POST', list, headers)).status, 200);
            await until (() => mcp._sessions.size === 1, 'the idle session closed', 5000);
            assert.equal ((await s_raw (port, 'POST', list, headers)).status, 404);
            assert.ok ((await client.listTools ()).tools.some ((tool) => tool.name === 'echo'));
            await client.close ();
        } finally {
            await mcp.close ();
        }
    });

    it ('refuses a session beyond maxSessions with 503', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, maxSessions: 2 }).start ();
        try {
            const port = await mcp.listenHttp (0);
            const first = await s_raw (port, 'POST', INITIALIZE);
            assert.equal (first.status, 200);
            assert.equal ((await s_raw (port, 'POST', INITIALIZE)).status, 200);
            const refused = await s_raw (port, 'POST', INITIALIZE);
            assert.equal (refused.status, 503);
            assert.match (JSON.parse (refused.body).error.message, /2 sessions are open/);
            const deleted = await s_raw (port, 'DELETE', '', {
                'mcp-session-id': first.headers ['mcp-session-id'],
                'mcp-protocol-version': '2025-06-18' });
            assert.equal (deleted.status, 200);
            assert.equal ((await s_raw (port, 'POST', INITIALIZE)).status, 200);
        } finally {
            await mcp.close ();
        }
    });

    it ('answers 413 to a body over 4 MB, without reading it', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint }).start ();
        try {
            const port = await mcp.listenHttp (0);
            //  A declared length over the limit: answered before the body
            let pending = null;
            const declared = await s_within (s_raw (port, 'POST', (request) => {
                pending = request;
                request.setHeader ('content-length', String (5 * 1024 * 1024));
                request.write ('{');
            }), 5000, 'answer').finally (() => pending.destroy ());
            assert.equal (declared.status, 413);
            //  A chunked body: answered once it passes the limit, while
            //  the client still sends (it was all read, then 400)
            const chunk = Buffer.alloc (1024 * 1024, 0x20);
            let sent = 0, answered = false;
            const streamed = await s_within (s_raw (port, 'POST', (request) => {
                request.on ('response', () => { answered = true; });
                request.on ('error', () => {});
                const write = () => {
                    while (!answered && sent < 256) {
                        sent++;
                        if (!request.write (chunk))
                            return request.once ('drain', write);
                    }
                    request.end ();
                };
                write ();
            }), 30000, 'answer');
            assert.equal (streamed.status, 413);
            assert.match (JSON.parse (streamed.body).error.message, /4194304 bytes at most/);
            assert.ok (sent < 256, `${sent} MB sent`);
        } finally {
            await mcp.close ();
        }
    });

    it ('refuses a JSON-RPC batch on 2025-06-18 and later, answers it on 2025-03-26', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint }).start ();
        try {
            const port = await mcp.listenHttp (0);
            //  A session that negotiated version: its id
            const open = async (version) => {
                const reply = await s_raw (port, 'POST', JSON.stringify ({ jsonrpc: '2.0', id: 1,
                    method: 'initialize', params: { protocolVersion: version, capabilities: {},
                                                    clientInfo: { name: 'raw', version: '1' } } }));
                assert.equal (reply.status, 200);
                return reply.headers ['mcp-session-id'];
            };
            const batch = JSON.stringify ([{ jsonrpc: '2.0', id: 2, method: 'ping' },
                                           { jsonrpc: '2.0', id: 3, method: 'ping' }]);
            //  The ids of the answers in an SSE body
            const answered = (reply) => reply.body.split ('\n')
                .filter ((line) => line.startsWith ('data: '))
                .map ((line) => JSON.parse (line.slice (6)).id).sort ();
            //  2025-06-18, from the header or, without it, the session's
            const newer = await open ('2025-06-18');
            for (const version of ['2025-06-18', undefined]) {
                const reply = await s_raw (port, 'POST', batch, { 'mcp-session-id': newer,
                    ...(version && { 'mcp-protocol-version': version }) });
                assert.equal (reply.status, 400, version);
                const { jsonrpc, id, error } = JSON.parse (reply.body);
                assert.deepEqual ([jsonrpc, id, error.code], ['2.0', null, -32600]);
                assert.match (error.message, /batch .* not part of MCP since 2025-06-18/);
            }
            const single = await s_raw (port, 'POST', JSON.stringify ({ jsonrpc: '2.0', id: 4,
                method: 'ping' }), { 'mcp-session-id': newer, 'mcp-protocol-version': '2025-06-18' });
            assert.equal (single.status, 200);
            assert.deepEqual (answered (single), [4]);
            //  2025-03-26 had batches: answered, with the header or without
            const older = await open ('2025-03-26');
            for (const version of ['2025-03-26', undefined]) {
                const reply = await s_raw (port, 'POST', batch, { 'mcp-session-id': older,
                    ...(version && { 'mcp-protocol-version': version }) });
                assert.equal (reply.status, 200, version);
                assert.deepEqual (answered (reply), [2, 3]);
            }
            //  The header names the version of its request
            const later = await s_raw (port, 'POST', batch, { 'mcp-session-id': older,
                                                              'mcp-protocol-version': '2025-11-25' });
            assert.equal (later.status, 400);
            assert.equal (JSON.parse (later.body).error.code, -32600);
        } finally {
            await mcp.close ();
        }
    });

    it ('confines a session to its context with confine', async () => {
        const probe = actd.client ();
        await probe.append ('private', { type: 'data', kind: 'secrets', data: { key: 'hunter2' } });
        probe.close ();
        for (const context of ['pinned', undefined]) {
            const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, context,
                                             confine: true }).start ();
            try {
                const port = await mcp.listenHttp (0);
                const [client, transport] = await s_http_client (port);
                const own = context ?? `mcp/${transport.sessionId}`;
                //  Another context (another session's too) is refused
                const [otherClient, other] = await s_http_client (port);
                for (const elsewhere of ['private', `mcp/${other.sessionId}`]) {
                    const refused = await client.callTool ({ name: 'echo', arguments: {
                        key: '\u2020secrets.key', _context: elsewhere } });
                    assert.equal (refused.isError, true);
                    assert.match (refused.content [0].text, /^forbidden: this server is confined /);
                    await assert.rejects (
                        client.readResource ({ uri: `actd://context/${elsewhere}` }), /forbidden/);
                }
                const result = await client.callTool ({ name: 'echo', arguments: {
                    text: 'hi', _context: own } });
                assert.deepEqual (JSON.parse (result.content [0].text),
                                  { params: { text: 'hi' }, context: own });
                const read = await client.readResource ({ uri: `actd://context/${own}` });
                assert.match (read.contents [0].text, /hi/);
                assert.deepEqual ((await client.listResourceTemplates ()).resourceTemplates, []);
                await client.close ();
                await otherClient.close ();
            } finally {
                await mcp.close ();
            }
        }
    });
});
