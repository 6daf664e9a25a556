'use strict';
//  actd-mcp: actd's workers as the tools of any Model Context Protocol
//  client, on the official SDK (@modelcontextprotocol/sdk).
//
//  - tools/list: the tools actd's TOOLS lists (PROTOCOL.md section 2.1)
//    that at least one connected worker serves, each as { name (the
//    activity), description, inputSchema (its params; {"type": "object"}
//    when it declared none) }. TOOLS is asked every pollMs; when the set
//    changes (a worker with a new tool connects, the last worker of one
//    goes, a declaration changes) every session gets
//    notifications/tools/list_changed.
//  - tools/call: a CALL of that activity in the session's context, waiting
//    for its DONE. The context is "mcp/<session id>" (one per MCP session;
//    stdio has one session, its id made at start), or the one the
//    `context` option names for every session, or the one a call names in
//    its `_context` argument. The output path is the tool's prescribed one,
//    else the `_outputPath` argument (required by a tool whose output path
//    is a pattern, and then added to its inputSchema), else
//    †tools["<activity>"]. An ok outcome is the result as JSON text; any
//    other outcome, and a call actd refuses, is a result with isError:
//    true and the error's code and message.
//  - resources: each context a session used (its own from the start) is
//    the resource actd://context/<id>, its merged view (VIEW text,
//    text/plain); resources/read reads any context by that URI (template
//    actd://context/{id}); notifications/resources/list_changed when a
//    session uses a new context.
//
//  Transports: stdio (connectStdio), or Streamable HTTP on a loopback
//  address (listenHttp), a Server and a context per MCP session; HTTP
//  requests whose Host or Origin is not a loopback name are refused.

const crypto = require ('node:crypto');
const http = require ('node:http');
const { Server } = require ('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = require ('@modelcontextprotocol/sdk/server/stdio.js');
const { StreamableHTTPServerTransport } =
    require ('@modelcontextprotocol/sdk/server/streamableHttp.js');
const {
    ListToolsRequestSchema, CallToolRequestSchema, ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema, ReadResourceRequestSchema, McpError, ErrorCode,
    isInitializeRequest
} = require ('@modelcontextprotocol/sdk/types.js');
const { Client } = require ('./client');
const { version } = require ('../package.json');

const URI_PREFIX = 'actd://context/';
const LOOPBACK = new Set (['127.0.0.1', '::1', 'localhost']);
//  The host names (as URL reads them) a request to the HTTP server may use
const LOOPBACK_NAMES = new Set (['127.0.0.1', '[::1]', 'localhost']);

//  The JSON text of value with object keys sorted (a stable fingerprint)
function s_stable (value) {
    if (Array.isArray (value))
        return '[' + value.map (s_stable).join (',') + ']';
    if (value && typeof value === 'object')
        return '{' + Object.keys (value).sort ()
            .map ((key) => JSON.stringify (key) + ':' + s_stable (value [key])).join (',') + '}';
    return JSON.stringify (value);
}

//  The MCP tool of an actd tool: its params as inputSchema, with the
//  _outputPath argument a pattern output path requires
function s_mcp_tool (name, tool) {
    const params = tool.params;
    let schema = params && typeof params === 'object' && Object.keys (params).length
               ? { ...params }: { type: 'object' };
    if (schema.type === undefined && !schema.properties && !schema.$ref && !schema.allOf
        && !schema.anyOf && !schema.oneOf)
        schema.type = 'object';
    const pattern = tool.outputPath && tool.outputPath.pattern;
    if (typeof pattern === 'string') {
        const argument = { type: 'string', pattern,
                           description: 'Where actd writes the result (an output path)' };
        if (schema.type === 'object')
            schema = { ...schema, properties: { ...(schema.properties || {}), _outputPath: argument },
                       required: [...(schema.required || []), '_outputPath'] };
    }
    const entry = { name, inputSchema: schema };
    if (typeof tool.description === 'string')
        entry.description = tool.description;
    return entry;
}

//  True when req names a loopback host in Host, and in Origin when it has
//  one. A web page whose name an attacker resolves to 127.0.0.1 (DNS
//  rebinding) reaches a loopback server with its own name in both; the
//  MCP specification has servers check Origin for that reason.
function s_from_loopback (req) {
    const names = (text) => {
        try {
            const url = new URL (text);
            return (url.protocol === 'http:' || url.protocol === 'https:')
                && LOOPBACK_NAMES.has (url.hostname);
        } catch {
            return false;
        }
    };
    const host = req.headers.host;
    if (typeof host !== 'string' || !names (`http://${host}`))
        return false;
    const origin = req.headers.origin;
    return origin === undefined || names (origin);
}

//  What an MCP client reads of an outcome that is not ok, or a refusal
function s_error_result (code, message) {
    return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}

class ActdMcp {
    //  options: endpoint (the broker's client endpoint; $ACTD_ENDPOINT,
    //  else tcp://127.0.0.1:5555), curveServer/curveCert (or
    //  $ACTD_SERVER_KEY, $ACTD_CERT), context (one context for every
    //  session; default: "mcp/<session id>" each), pollMs (1000): how
    //  often TOOLS is asked; log (a function of one line; default: none)
    constructor (options = {}) {
        const clientOptions = { timeoutMs: options.timeoutMs ?? 30000 };
        for (const key of ['endpoint', 'endpoints', 'curveServer', 'curveCert'])
            if (options [key] !== undefined)
                clientOptions [key] = options [key];
        this.client = new Client (clientOptions);
        this.context = options.context ?? null;
        this.pollMs = options.pollMs ?? 1000;
        this.log = options.log ?? (() => {});
        this.tools = new Map ();        //  name -> TOOLS entry, for the served tools
        this.known = new Map ();        //  name -> TOOLS entry, every declared tool
        this._fingerprint = null;       //  s_stable of the served tools
        this._failure = null;           //  The last TOOLS failure logged
        this._sessions = new Set ();    //  Open sessions (stdio's, or HTTP's)
        this._timer = null;
        this._polling = null;
        this._http = null;
        this.closed = false;
    }

    //  Ask TOOLS now; notify every session when the served set changed.
    //  Resolves true when it changed.
    async refresh () {
        let tools;
        try {
            tools = await this.client.tools ();
        } catch (error) {
            //  Once per kind of failure, not at every poll
            if (error.message !== this._failure)
                this.log (`TOOLS failed: ${error.message}`);
            this._failure = error.message;
            return false;
        }
        this._failure = null;
        const served = new Map (Object.entries (tools).filter (([, tool]) => tool.workers > 0)
                                                     .sort (([a], [b]) => (a < b? -1: a > b)));
        const fingerprint = s_stable ([...served].map (([name, tool]) =>
            [name, { ...tool, workers: undefined }]));
        this.known = new Map (Object.entries (tools));
        if (fingerprint === this._fingerprint)
            return false;
        const first = this._fingerprint === null;
        this._fingerprint = fingerprint;
        this.tools = served;
        if (!first)
            for (const session of this._sessions)
                session.server.sendToolListChanged ().catch (() => {});
        this.log (`tools: ${[...served.keys ()].join (', ') || 'none'}`);
        return true;
    }

    //  Start polling TOOLS (the first answer before resolving)
    async start () {
        await this.refresh ();
        const tick = async () => {
            this._polling = this.refresh ();
            await this._polling;
            if (!this.closed)
                this._timer = setTimeout (tick, this.pollMs);
        };
        this._timer = setTimeout (tick, this.pollMs);
        return this;
    }

    //  A Server for one MCP session; id () is the session's id once known
    _session (id) {
        const server = new Server ({ name: 'actd-mcp', version },
            { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } });
        const session = { server, id, contexts: new Set () };
        session.defaultContext = () => this.context ?? `mcp/${session.id ()}`;
        server.setRequestHandler (ListToolsRequestSchema, async () => ({
            tools: [...this.tools].map (([name, tool]) => s_mcp_tool (name, tool)) }));
        server.setRequestHandler (CallToolRequestSchema, (request) =>
            this._call (session, request.params.name, request.params.arguments ?? {}));
        server.setRequestHandler (ListResourcesRequestSchema, async () => ({
            resources: [session.defaultContext (), ...session.contexts]
                .filter ((context, index, all) => all.indexOf (context) === index)
                .map ((context) => ({ uri: URI_PREFIX + context, name: context,
                                      mimeType: 'text/plain',
                                      description: `The merged view of actd context ${context}` }))
        }));
        server.setRequestHandler (ListResourceTemplatesRequestSchema, async () => ({
            resourceTemplates: [{ uriTemplate: URI_PREFIX + '{id}', name: 'actd context',
                                  mimeType: 'text/plain',
                                  description: 'The merged view of an actd context' }]
        }));
        server.setRequestHandler (ReadResourceRequestSchema, (request) =>
            this._read (request.params.uri));
        server.onclose = () => {
            this._sessions.delete (session);
            if (session.onclose)
                session.onclose ();
        };
        this._sessions.add (session);
        return session;
    }

    //  tools/call: a CALL in the session's context, until its DONE
    async _call (session, name, args) {
        const tool = this.known.get (name) ?? (await this.refresh (), this.known.get (name));
        if (!tool)
            return s_error_result ('unknown_tool', `actd has no tool ${name}`);
        const { _context, _outputPath, ...params } = args;
        const context = typeof _context === 'string' && _context? _context
                                                                : session.defaultContext ();
        const path = tool.outputPath && typeof tool.outputPath.const === 'string'
                   ? tool.outputPath.const
                   : typeof _outputPath === 'string'? _outputPath
                   : '\u2020tools[' + JSON.stringify (name) + ']';
        const call = { ...params, _tool: name, _outputPath: path };
        this._used (session, context);
        let outcome;
        try {
            outcome = await this.client.call (context, call);
        } catch (error) {
            return s_error_result (error.code ?? 'error', error.message);
        }
        if (outcome.status !== 'ok') {
            const error = outcome.error ?? {};
            return s_error_result (error.code ?? outcome.status,
                                   error.message ?? `the call ended ${outcome.status}`);
        }
        const text = outcome.result === undefined? 'null': JSON.stringify (outcome.result);
        return { content: [{ type: 'text', text }] };
    }

    //  A session used context: one more resource
    _used (session, context) {
        if (context === session.defaultContext () || session.contexts.has (context))
            return;
        session.contexts.add (context);
        session.server.sendResourceListChanged ().catch (() => {});
    }

    //  resources/read of actd://context/<id>: VIEW text
    async _read (uri) {
        if (!uri.startsWith (URI_PREFIX))
            throw new McpError (ErrorCode.InvalidParams, `not an actd context: ${uri}`);
        const context = decodeURIComponent (uri.slice (URI_PREFIX.length));
        let text;
        try {
            text = await this.client.view (context, 'text');
        } catch (error) {
            if (error.code !== 'not_found')
                throw new McpError (ErrorCode.InternalError, `${error.code}: ${error.message}`);
            text = '';
        }
        return { contents: [{ uri, mimeType: 'text/plain', text }] };
    }

    //  Serve one session on stdin and stdout
    async connectStdio () {
        const id = crypto.randomUUID ();
        const session = this._session (() => id);
        await session.server.connect (new StdioServerTransport ());
        return session;
    }

    //  Serve Streamable HTTP at http://host:port/mcp; host must be a
    //  loopback address (the server has no authentication), and a request
    //  whose Host or Origin is not a loopback name gets 403 (DNS
    //  rebinding). Resolves with the port (useful with port 0).
    listenHttp (port, host = '127.0.0.1') {
        if (!LOOPBACK.has (host))
            throw new Error (`actd-mcp listens on loopback only (127.0.0.1, ::1), not ${host}`);
        const transports = new Map ();  //  session id -> transport
        this._http = http.createServer ((req, res) => {
            this._http_request (transports, req, res).catch ((error) => {
                this.log (`HTTP: ${error.message}`);
                if (!res.headersSent)
                    res.writeHead (500).end ();
            });
        });
        return new Promise ((resolve, reject) => {
            this._http.once ('error', reject);
            this._http.listen (port, host, () => resolve (this._http.address ().port));
        });
    }

    async _http_request (transports, req, res) {
        if (new URL (req.url, 'http://localhost').pathname !== '/mcp') {
            res.writeHead (404).end ();
            return;
        }
        if (!s_from_loopback (req)) {
            this.log (`HTTP: refused a request for host ${req.headers.host}, origin `
                      + `${req.headers.origin ?? 'none'}: loopback names only`);
            res.writeHead (403, { 'content-type': 'application/json' }).end (JSON.stringify (
                { jsonrpc: '2.0', error: { code: -32000, message: 'Forbidden: the Host and '
                  + 'Origin of a request must be loopback names (127.0.0.1, [::1], localhost)' },
                  id: null }));
            return;
        }
        const id = req.headers ['mcp-session-id'];
        let body;
        if (req.method === 'POST') {
            const chunks = [];
            for await (const chunk of req)
                chunks.push (chunk);
            try {
                body = JSON.parse (Buffer.concat (chunks).toString ('utf8'));
            } catch {
                res.writeHead (400, { 'content-type': 'application/json' }).end (JSON.stringify (
                    { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error' }, id: null }));
                return;
            }
        }
        let transport = id? transports.get (id): undefined;
        if (!transport && !id && req.method === 'POST' && isInitializeRequest (body)) {
            transport = new StreamableHTTPServerTransport ({
                sessionIdGenerator: () => crypto.randomUUID (),
                onsessioninitialized: (sessionId) => transports.set (sessionId, transport)
            });
            transport.onclose = () => {
                if (transport.sessionId)
                    transports.delete (transport.sessionId);
            };
            const session = this._session (() => transport.sessionId);
            await session.server.connect (transport);
        }
        if (!transport) {
            res.writeHead (id? 404: 400, { 'content-type': 'application/json' }).end (JSON.stringify (
                { jsonrpc: '2.0', error: { code: -32000, message: id? 'Unknown session'
                                                          : 'No session: initialize first' },
                  id: null }));
            return;
        }
        await transport.handleRequest (req, res, body);
    }

    //  Stop polling, close every session, the HTTP server and the client
    async close () {
        this.closed = true;
        clearTimeout (this._timer);
        await this._polling;
        for (const session of [...this._sessions])
            await session.server.close ().catch (() => {});
        if (this._http)
            await new Promise ((resolve) => this._http.close (() => resolve ()));
        await this.client.close ();
    }
}

module.exports = { ActdMcp, mcpTool: s_mcp_tool };
