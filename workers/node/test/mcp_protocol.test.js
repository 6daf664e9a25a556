'use strict';
//  actd-mcp (bin/actd-mcp.js, lib/mcp.js) as the MCP specification has a
//  server behave, seen on the wire: what the SDK refuses without an
//  answer is logged (a line that is not JSON-RPC, a batch, a stdio
//  message past the SDK's 10 MB buffer); a request with a progressToken
//  gets notifications/progress from its call's state and its worker's
//  PROGRESS; a list request with a cursor actd-mcp never gave is -32602,
//  and so is a tools/call of an unknown tool ("Unknown tool: NAME").

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const { spawn } = require ('node:child_process');
const path = require ('node:path');
const { Client: McpClient } = require ('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require ('@modelcontextprotocol/sdk/client/stdio.js');
const { Worker } = require ('..');
const { Actd, until, sleep } = require ('./actd');

const BIN = path.join (__dirname, '..', 'bin', 'actd-mcp.js');

//  actd-mcp on stdio, spoken to line by line: { child, send (message or
//  text), reply (id), stderr () }
function s_stdio (endpoint) {
    const child = spawn (process.execPath, [BIN, '--endpoint', endpoint, '--poll-ms', '100'],
                         { stdio: ['pipe', 'pipe', 'pipe'] });
    const replies = [];
    let out = '', err = '';
    child.stdout.setEncoding ('utf8');
    child.stdout.on ('data', (chunk) => {
        out += chunk;
        for (let end; (end = out.indexOf ('\n')) >= 0; out = out.slice (end + 1))
            replies.push (JSON.parse (out.slice (0, end)));
    });
    child.stderr.setEncoding ('utf8');
    child.stderr.on ('data', (chunk) => { err += chunk; });
    child.stdin.on ('error', () => {});
    const exited = new Promise ((resolve) => child.once ('exit', (code) => resolve (code)));
    return {
        child, replies, exited,
        send: (message) => child.stdin.write ((typeof message === 'string'? message
                                                : JSON.stringify (message)) + '\n'),
        reply: (id) => until (() => replies.find ((reply) => reply.id === id), `reply ${id}`),
        stderr: () => err
    };
}

//  An MCP client of actd-mcp on stdio, once it lists actd's two tools
async function s_client (actd) {
    const client = new McpClient ({ name: 'actd-mcp-protocol-test', version: '1.0.0' });
    await client.connect (new StdioClientTransport ({ command: process.execPath,
        args: [BIN, '--endpoint', actd.clientEndpoint, '--poll-ms', '100', '--quiet'],
        stderr: 'ignore' }));
    await until (async () => (await client.listTools ()).tools.length === 2, 'the tools');
    return client;
}

describe ('actd-mcp protocol', () => {
    let actd, worker;

    before (async () => {
        actd = await new Actd ().start ();
        worker = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200, liveness: 3,
                               name: 'protocol-worker' });
        worker.activity ('echo', (params) => params, { description: 'Echo' });
        //  2 s in all, a PROGRESS every 400 ms
        worker.activity ('steps', async (params, task) => {
            for (let step = 1; step <= 5; step++) {
                await task.progress ({ step });
                await sleep (400);
            }
            return 'stepped';
        }, { description: 'Takes 2 s, telling its progress' });
        worker.run ();
    });

    after (async () => {
        if (worker)
            await worker.stop ();
        await actd.finish ();
    });

    it ('logs what the SDK drops without an answer, and why a stdio session closed', async () => {
        const peer = s_stdio (actd.clientEndpoint);
        try {
            peer.send ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
                protocolVersion: '2025-06-18', capabilities: {},
                clientInfo: { name: 'raw', version: '1' } } });
            await peer.reply (1);
            peer.send ({ jsonrpc: '2.0', method: 'notifications/initialized' });
            //  Neither is answered (the SDK drops them), and the session
            //  goes on; each is one line on stderr
            peer.send ('{"jsonrpc": "2.0", "id": 2, "method": ');
            peer.send ([{ jsonrpc: '2.0', id: 3, method: 'ping' }]);
            peer.send ({ jsonrpc: '2.0', id: 4, method: 'ping' });
            assert.deepEqual ((await peer.reply (4)).result, {});
            //  An unknown tool is a protocol error, its message as the
            //  example of MCP's Tools page (no "MCP error -32602: " before)
            peer.send ({ jsonrpc: '2.0', id: 6, method: 'tools/call',
                         params: { name: 'nothing', arguments: {} } });
            assert.deepEqual (await peer.reply (6), { jsonrpc: '2.0', id: 6, error: {
                code: -32602, message: 'Unknown tool: nothing' } });
            await until (() => (peer.stderr ().match (/^actd-mcp: session [0-9a-f-]{36}: /gmu)
                                ?? []).length >= 2, 'two errors logged');
            assert.ok (!peer.replies.some ((reply) => reply.id === 2 || reply.id === 3));
            //  A message past the SDK's buffer (10 MB) closes the session:
            //  the client sees its server go, the log says why
            peer.send ({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: {
                name: 'echo', arguments: { text: 'x'.repeat (11 * 1024 * 1024) } } });
            await peer.exited;
            assert.match (peer.stderr (), /session [0-9a-f-]{36}: ReadBuffer exceeded maximum size/);
        } finally {
            peer.child.kill ();
        }
    });

    it ('sends notifications/progress to a request with a progressToken', async () => {
        const client = await s_client (actd);
        try {
            //  Without progress a client's timeout (60 s by default) ends a
            //  long call; reset by each notification, a shorter one is met
            const seen = [];
            const result = await client.callTool ({ name: 'steps', arguments: {} }, undefined, {
                timeout: 1000, resetTimeoutOnProgress: true, maxTotalTimeout: 20000,
                onprogress: (progress) => seen.push (progress) });
            assert.equal (result.isError, undefined);
            assert.equal (result.content [0].text, '"stepped"');
            assert.ok (seen.length >= 3, JSON.stringify (seen));
            assert.ok (seen.every ((progress, i) => i === 0 || progress.progress > seen [i - 1].progress),
                       JSON.stringify (seen));
            assert.ok (seen.some ((progress) => progress.message === 'running: {"step":3}'),
                       JSON.stringify (seen));
            //  A request without a token gets none
            let unasked = 0;
            client.fallbackNotificationHandler = async () => { unasked++; };
            await client.callTool ({ name: 'echo', arguments: { a: 1 } });
            assert.equal (unasked, 0);
        } finally {
            await client.close ();
        }
    });

    it ('refuses a list request with a cursor it never gave (-32602)', async () => {
        const client = await s_client (actd);
        try {
            for (const list of ['listTools', 'listResources', 'listResourceTemplates']) {
                const { nextCursor } = await client [list] ();
                assert.equal (nextCursor, undefined, list);
                await assert.rejects (client [list] ({ cursor: 'page-2' }),
                                      (error) => error.code === -32602
                                              //  The SDK client's prefix once: actd-mcp
                                              //  sends the bare message
                                              && /^MCP error -32602: [a-z/]+: no such cursor "page-2"/u
                                                  .test (error.message), list);
            }
        } finally {
            await client.close ();
        }
    });
});
