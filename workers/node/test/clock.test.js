'use strict';
//  The package times on a monotonic clock (lib/clock.js), not Date.now ():
//  with Date.now () stepped a day ahead (as NTP, a resumed VM or the date
//  set by hand steps it), a client's pending request does not time out and
//  its broker is not skipped as dead, and an idle actd-mcp HTTP session
//  is not closed. The timers' work is called directly (the client's links
//  faked); tests/integration/test_node_clock.py steps the wall clock of a
//  whole worker process.

const { describe, it, afterEach } = require ('node:test');
const assert = require ('node:assert/strict');
const http = require ('node:http');
const { Client } = require ('..');
const { ActdMcp } = require ('../lib/mcp');
const { until } = require ('./actd');

const A = 'tcp://127.0.0.1:1';
const B = 'tcp://127.0.0.1:2';
const DAY_MS = 24 * 3600 * 1000;
const realNow = Date.now;

//  An MCP initialize, raw, to actd-mcp's HTTP server: { status }
function s_initialize (port) {
    const body = JSON.stringify ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
        protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'raw', version: '1' } } });
    return new Promise ((resolve, reject) => {
        const request = http.request ({ host: '127.0.0.1', port, path: '/mcp', method: 'POST',
            agent: false, headers: { 'content-type': 'application/json',
                                     accept: 'application/json, text/event-stream' } },
        (response) => {
            response.resume ();
            response.on ('end', () => resolve ({ status: response.statusCode }));
        });
        request.on ('error', reject);
        request.end (body);
    });
}

describe ('a step of the wall clock', () => {
    afterEach (() => {
        Date.now = realNow;
    });

    it ('does not time a pending request out, nor skip its broker', async () => {
        const client = new Client ({ endpoints: [A, B], timeoutMs: 0, requestTimeoutMs: 5000 });
        const sent = [];
        client._link = (endpoint) => ({
            up: true,
            send: async (frames) => { sent.push ([endpoint, String (frames [1])]); },
            close () {}
        });
        try {
            const status = client.status ('c-1');
            status.catch (() => {});    //  Rejected (closed) at the end
            assert.equal (sent.length, 1);
            Date.now = () => realNow () + DAY_MS;
            client._scan ();
            assert.equal (sent.length, 1, 'sent again: ' + JSON.stringify (sent));
            assert.equal (client._dead.size, 0);
        } finally {
            client.close ();
        }
    });

    it ('does not close an idle actd-mcp HTTP session', async () => {
        const mcp = new ActdMcp ({ endpoint: A, sessionIdleMs: 60000 });
        try {
            const port = await mcp.listenHttp (0);
            assert.equal ((await s_initialize (port)).status, 200);
            await until (() => mcp._transports.size === 1
                             && [...mcp._transports.values ()][0].active === 0, 'the session');
            Date.now = () => realNow () + DAY_MS;
            mcp._expire ();
            assert.equal (mcp._transports.size, 1);
        } finally {
            await mcp.close ();
        }
    });
});
