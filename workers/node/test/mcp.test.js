'use strict';
//  actd-mcp through the official MCP SDK's own Client: stdio (the
//  bin/actd-mcp.js process) and Streamable HTTP, against a real actd and
//  real Node workers: tools/list, tools/call (ok, error outcome, refused
//  call), the context's merged view as a resource, and
//  notifications/tools/list_changed when a worker with a new tool comes
//  and goes.

const { describe, it, before, after } = require ('node:test');
const assert = require ('node:assert/strict');
const http = require ('node:http');
const path = require ('node:path');
const { Client: McpClient } = require ('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require ('@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } =
    require ('@modelcontextprotocol/sdk/client/streamableHttp.js');
const { ToolListChangedNotificationSchema, ResourceListChangedNotificationSchema } =
    require ('@modelcontextprotocol/sdk/types.js');
const { Worker, ActivityError } = require ('..');
const { ActdMcp } = require ('../lib/mcp');
const { Actd, until } = require ('./actd');

const BIN = path.join (__dirname, '..', 'bin', 'actd-mcp.js');
const WEATHER = {
    description: 'The weather in a city',
    params: { type: 'object', required: ['city'], additionalProperties: false,
              properties: { city: { type: 'string' } } }
};

//  A raw initialize request to actd-mcp's HTTP server with these headers
//  (Host among them): { status, body }
function s_initialize (port, headers) {
    const body = JSON.stringify ({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {
        protocolVersion: '2025-06-18', capabilities: {},
        clientInfo: { name: 'rebinding', version: '1' } } });
    return new Promise ((resolve, reject) => {
        const request = http.request ({ host: '127.0.0.1', port, path: '/mcp', method: 'POST',
            headers: { 'content-type': 'application/json',
                       accept: 'application/json, text/event-stream', ...headers } },
        (response) => {
            let text = '';
            response.setEncoding ('utf8');
            response.on ('data', (chunk) => { text += chunk; });
            response.on ('end', () => resolve ({ status: response.statusCode, body: text }));
        });
        request.on ('error', reject);
        request.end (body);
    });
}

describe ('actd-mcp', () => {
    let actd, client, transport, worker, stderr = '';
    const toolsChanged = [], resourcesChanged = [];

    //  A Node worker serving handlers with tools, registered with actd
    async function serve (name, activities) {
        const serving = new Worker ({ endpoint: actd.workerEndpoint, heartbeatMs: 200,
                                      liveness: 3, name });
        for (const [activity, [handler, tool]] of Object.entries (activities))
            serving.activity (activity, handler, tool);
        serving.run ();
        const probe = actd.client ();
        try {
            await until (async () => (await probe.stats ()).workers.some ((w) => w.name === name),
                         `worker ${name} in STATS`);
        } finally {
            probe.close ();
        }
        return serving;
    }

    before (async () => {
        actd = await new Actd ().start ();
        worker = await serve ('mcp-worker', {
            weather: [({ city }) => ({ city, sky: city.length % 2? 'rainy': 'sunny' }), WEATHER],
            fails: [() => { throw new ActivityError ('no such station', { code: 'no_station',
                                                                          retryable: false }); },
                    { description: 'Always fails' }]
        });
        transport = new StdioClientTransport ({
            command: process.execPath,
            args: [BIN, '--endpoint', actd.clientEndpoint, '--poll-ms', '100'],
            stderr: 'pipe'
        });
        transport.stderr.on ('data', (chunk) => { stderr += chunk; });
        client = new McpClient ({ name: 'actd-mcp-test', version: '1.0.0' });
        client.setNotificationHandler (ToolListChangedNotificationSchema,
                                       (notification) => toolsChanged.push (notification));
        client.setNotificationHandler (ResourceListChangedNotificationSchema,
                                       (notification) => resourcesChanged.push (notification));
        await client.connect (transport);
    });

    after (async () => {
        if (client)
            await client.close ();
        if (worker)
            await worker.stop ();
        await actd.finish ();
    });

    it ('lists the workers\' tools with their schemas', async () => {
        const { tools } = await client.listTools ();
        assert.deepEqual (tools.map ((tool) => tool.name), ['fails', 'weather']);
        const weather = tools.find ((tool) => tool.name === 'weather');
        assert.equal (weather.description, 'The weather in a city');
        assert.deepEqual (weather.inputSchema, WEATHER.params);
        const fails = tools.find ((tool) => tool.name === 'fails');
        assert.deepEqual (fails.inputSchema, { type: 'object' });
        assert.match (stderr, /serving MCP on stdio \(context mcp\/[0-9a-f-]{36}\)/);
    });

    it ('calls a tool as a CALL and returns its result', async () => {
        const result = await client.callTool ({ name: 'weather', arguments: { city: 'Oslo' } });
        assert.equal (result.isError, undefined);
        assert.deepEqual (JSON.parse (result.content [0].text), { city: 'Oslo', sky: 'sunny' });
    });

    it ('returns an error outcome, and a refused call, as isError', async () => {
        const failed = await client.callTool ({ name: 'fails', arguments: {} });
        assert.equal (failed.isError, true);
        assert.equal (failed.content [0].text, 'no_station: no such station');
        const refused = await client.callTool ({ name: 'weather', arguments: { town: 'Oslo' } });
        assert.equal (refused.isError, true);
        assert.match (refused.content [0].text, /^bad_call: /);
        const unknown = await client.callTool ({ name: 'nothing', arguments: {} });
        assert.equal (unknown.isError, true);
        assert.match (unknown.content [0].text, /^unknown_tool: /);
    });

    it ('serves the session\'s context\'s merged view as a resource', async () => {
        const { resources } = await client.listResources ();
        assert.equal (resources.length, 1);
        const [resource] = resources;
        assert.match (resource.uri, /^actd:\/\/context\/mcp\/[0-9a-f-]{36}$/);
        assert.equal (resource.mimeType, 'text/plain');
        const read = await client.readResource ({ uri: resource.uri });
        assert.equal (read.contents [0].uri, resource.uri);
        //  The view holds what the calls wrote, as VIEW text renders it
        const context = resource.uri.slice ('actd://context/'.length);
        const probe = actd.client ();
        try {
            assert.equal (read.contents [0].text, await probe.view (context, 'text'));
            assert.deepEqual (await probe.resolve (context, '\u2020tools["weather"]'),
                              { city: 'Oslo', sky: 'sunny' });
        } finally {
            probe.close ();
        }
        assert.match (read.contents [0].text, /Oslo/);
        const { resourceTemplates } = await client.listResourceTemplates ();
        assert.equal (resourceTemplates [0].uriTemplate, 'actd://context/{id}');
    });

    it ('runs a call in the context its _context argument names', async () => {
        const result = await client.callTool ({ name: 'weather',
            arguments: { city: 'Bergen', _context: 'mcp-named', _outputPath: '\u2020state.w' } });
        assert.equal (result.isError, undefined);
        await until (() => resourcesChanged.length > 0, 'resources/list_changed');
        const { resources } = await client.listResources ();
        assert.ok (resources.some ((r) => r.uri === 'actd://context/mcp-named'));
        const read = await client.readResource ({ uri: 'actd://context/mcp-named' });
        assert.match (read.contents [0].text, /Bergen/);
    });

    it ('sends tools/list_changed when a worker with a new tool comes and goes', async () => {
        const before = toolsChanged.length;
        const second = await serve ('mcp-second', {
            summarize: [({ text }) => text.slice (0, 5),
                        { description: 'Summarize', outputPath: '\u2020state.summary' }]
        });
        try {
            await until (() => toolsChanged.length > before, 'list_changed for a new tool');
            const { tools } = await client.listTools ();
            assert.deepEqual (tools.map ((tool) => tool.name), ['fails', 'summarize', 'weather']);
            //  A prescribed output path is the one the call gets
            const result = await client.callTool ({ name: 'summarize',
                                                    arguments: { text: 'abcdefgh' } });
            assert.equal (result.content [0].text, '"abcde"');
        } finally {
            await second.stop ();
        }
        const gone = toolsChanged.length;
        await until (() => toolsChanged.length > gone, 'list_changed when the worker goes');
        await until (async () => !(await client.listTools ()).tools.some ((t) => t.name === 'summarize'),
                     'summarize off the list');
    });

    it ('serves Streamable HTTP on loopback, a context per session', async () => {
        const mcp = await new ActdMcp ({ endpoint: actd.clientEndpoint, pollMs: 100 }).start ();
        assert.throws (() => mcp.listenHttp (0, '0.0.0.0'), /loopback only/);
        const port = await mcp.listenHttp (0);
        const httpClient = new McpClient ({ name: 'actd-mcp-http-test', version: '1.0.0' });
        try {
            const httpTransport = new StreamableHTTPClientTransport (
                new URL (`http://127.0.0.1:${port}/mcp`));
            await httpClient.connect (httpTransport);
            const { tools } = await httpClient.listTools ();
            assert.ok (tools.some ((tool) => tool.name === 'weather'));
            const result = await httpClient.callTool ({ name: 'weather',
                                                        arguments: { city: 'Rome' } });
            assert.deepEqual (JSON.parse (result.content [0].text), { city: 'Rome', sky: 'sunny' });
            const { resources } = await httpClient.listResources ();
            assert.equal (resources [0].uri, `actd://context/mcp/${httpTransport.sessionId}`);
            const read = await httpClient.readResource ({ uri: resources [0].uri });
            assert.match (read.contents [0].text, /Rome/);
            //  DNS rebinding: a page at another name that resolves to
            //  127.0.0.1 sends its own name as Host and Origin; refused
            for (const [headers, status] of [
                    [{ host: `evil.example:${port}` }, 403],
                    [{ host: `127.0.0.1:${port}`, origin: `http://evil.example:${port}` }, 403],
                    [{ host: `127.0.0.1:${port}`, origin: 'null' }, 403],
                    [{ host: `localhost:${port}`, origin: `http://localhost:${port}` }, 200]]) {
                const reply = await s_initialize (port, headers);
                assert.equal (reply.status, status, JSON.stringify (headers));
                if (status === 403)
                    assert.match (reply.body, /loopback names/);
            }
        } finally {
            await httpClient.close ();
            await mcp.close ();
        }
    });
});
