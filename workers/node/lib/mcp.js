'use strict';
//  actd-mcp: actd's workers as the tools of any Model Context Protocol
//  client, on the official SDK (@modelcontextprotocol/sdk).
//
//  - tools/list: the tools actd's TOOLS lists (PROTOCOL.md section 2.1)
//    that at least one connected worker serves, each as { name (the
//    activity), description, inputSchema (its params; {"type": "object"}
//    when it declared none, and always an object schema: see s_mcp_tool) }.
//    TOOLS is asked every pollMs; a session whose last tools/list differs
//    from the set now served gets notifications/tools/list_changed (a
//    worker with a new tool connects, the last worker of one goes, a
//    declaration changes, actd answers for the first time). Sessions are
//    served from the start: the first tools/list waits FIRST_TOOLS_MS at
//    most for TOOLS' first answer.
//  - tools/call: a CALL of that activity in the session's context, waiting
//    for its DONE. The context is "mcp/<session id>" (one per MCP session;
//    stdio has one session, its id made at start), or the one the
//    `context` option names for every session, or the one a call names in
//    its `_context` argument (with the `confine` option, only the
//    session's own context). The output path is the tool's prescribed one,
//    else the `_outputPath` argument (required by a tool whose output path
//    is a pattern, and then added to its inputSchema), else
//    †tools["<activity>"]. Other arguments whose names start with "_"
//    (actd's call fields: _id, _instance, _timeout...) are refused. An ok
//    outcome is the result as JSON text; any other outcome, and a call
//    actd refuses, is a result with isError: true and the error's code and
//    message. A tool actd does not declare is a JSON-RPC error, -32602
//    "Unknown tool: NAME" (a protocol error in MCP), unless TOOLS failed
//    (then a result with isError and TOOLS' error). A request the client
//    cancels (notifications/cancelled), or whose session closes, cancels
//    its call (CANCEL); a call whose broker has not answered TOOLS for
//    timeoutMs ends with isError (unreachable) and is cancelled as well
//    (best effort). A request with a progressToken gets
//    notifications/progress while its call runs: each change of the
//    call's state or of its worker's PROGRESS (its STATUS, asked every
//    pollMs), so that a client resetting its timeout on progress waits
//    for a long call.
//  - resources: each context a session used (its own from the start;
//    another once actd accepted a call in it) is the resource
//    actd://context/<id> (the id percent-encoded where a URI needs it),
//    its merged view (VIEW text, text/plain); resources/read reads any
//    context by that URI (template actd://context/{id}), or only the
//    session's own with `confine`; notifications/resources/list_changed
//    when a session uses a new context.
//
//  Transports: stdio (connectStdio), or Streamable HTTP on a loopback
//  address (listenHttp), a Server and a context per MCP session; HTTP
//  requests whose Host or Origin is not a loopback name are refused, a
//  body over MAX_BODY_BYTES gets 413, an initialize beyond maxSessions
//  open sessions 503, and a session idle (no request under way) for
//  sessionIdleMs is closed. A JSON-RPC batch (a body that is an array)
//  gets 400, -32600, when the request's MCP-Protocol-Version, or without
//  it the session's negotiated version, is 2025-06-18 or later (MCP has
//  had no batches since); 2025-03-26's are answered as the SDK does.

const crypto = require ('node:crypto');
const http = require ('node:http');
const { Server } = require ('@modelcontextprotocol/sdk/server/index.js');
const { StdioServerTransport } = require ('@modelcontextprotocol/sdk/server/stdio.js');
const { StreamableHTTPServerTransport } =
    require ('@modelcontextprotocol/sdk/server/streamableHttp.js');
const {
    ListToolsRequestSchema, CallToolRequestSchema, ListResourcesRequestSchema,
    ListResourceTemplatesRequestSchema, ReadResourceRequestSchema, McpError, ErrorCode,
    isInitializeRequest, SUPPORTED_PROTOCOL_VERSIONS, LATEST_PROTOCOL_VERSION
} = require ('@modelcontextprotocol/sdk/types.js');
const { Client } = require ('./client');
const { ActdError } = require ('./errors');
const clock = require ('./clock');
const { version } = require ('../package.json');

const URI_PREFIX = 'actd://context/';
const FIRST_TOOLS_MS = 2000;            //  How long a tools/list waits for TOOLS' first answer
const CANCEL_CLOSE_MS = 2000;           //  How long close () waits for the CANCELs it sent
const MAX_BODY_BYTES = 4 * 1024 * 1024; //  The largest HTTP request body (the SDK's own limit)
const LINGER_MS = 2000;                 //  How long the rest of a body too large is read and dropped
const SESSION_IDLE_MS = 30 * 60000;     //  An HTTP session with no request this long is closed
const MAX_SESSIONS = 1000;              //  Open HTTP sessions at most
const MAX_ERROR_LINES = 10;             //  Errors of one session logged at most
const MAX_PROGRESS_TEXT = 1000;         //  Characters of a PROGRESS's details in a progress message
const NO_BATCHES = '2025-06-18';        //  The first MCP version without JSON-RPC batches
const SERVED_WAIT_MS = 5000;            //  How long a tools/call of a tool no worker serves
                                        //  waits for one before it ends isError no_worker
//  The arguments starting with "_" a tool call may have (the others are
//  actd's call fields, not the MCP client's to set)
const ARGUMENTS = new Set (['_context', '_outputPath']);
//  Codes of errors the client itself gives (no answer from actd)
const LOCAL_CODES = new Set (['request_timeout', 'disconnected', 'closed']);
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
//  _outputPath argument a pattern output path requires. MCP requires an
//  object schema ("type": "object") at the top, and a client refuses the
//  whole tools/list when one tool lacks it: a schema without "type" (a
//  top-level anyOf or $ref), or whose type is a list with "object", gets
//  "type": "object" (the same schema for params, which are an object; its
//  $ref and $defs unchanged); one whose type excludes objects (no call
//  can match it) is wrapped: {"type": "object", "allOf": [it]}, its $defs
//  also at the top, where a $ref "#/$defs/..." in it looks.
function s_mcp_tool (name, tool) {
    const params = tool.params;
    let schema = { type: 'object' };
    if (params && typeof params === 'object' && !Array.isArray (params)
    &&  Object.keys (params).length) {
        const type = params.type;
        if (type === undefined || type === 'object'
        ||  (Array.isArray (type) && type.includes ('object')))
            schema = { ...params, type: 'object' };
        else {
            schema = { type: 'object', allOf: [params] };
            if (params.$defs !== undefined)
                schema.$defs = params.$defs;
        }
    }
    const pattern = tool.outputPath && tool.outputPath.pattern;
    if (typeof pattern === 'string') {
        //  actd takes a path the pattern matches as a whole; a JSON Schema
        //  "pattern" is searched for, so the host is given it anchored
        const argument = { type: 'string', pattern: '^(?:' + pattern + ')$',
                           description: 'Where actd writes the result (an output path)' };
        const required = Array.isArray (schema.required)? schema.required: [];
        schema = { ...schema, properties: { ...(schema.properties || {}), _outputPath: argument },
                   required: [...required.filter ((key) => key !== '_outputPath'), '_outputPath'] };
    }
    const entry = { name, inputSchema: schema };
    if (typeof tool.description === 'string')
        entry.description = tool.description;
    return entry;
}

//  The resource URI of context: its id with what a URI path cannot hold
//  percent-encoded (as resources/read decodes it); an id of actd's
//  characters ([A-Za-z0-9._:@/-]) as it is
function s_uri (context) {
    return URI_PREFIX + context.replace (/[^A-Za-z0-9._~!$&'()*+,;=:@/-]/gu, encodeURIComponent);
}

//  promise, or undefined after ms, whichever comes first
function s_within (promise, ms) {
    let timer;
    return Promise.race ([promise, new Promise ((resolve) => {
        timer = setTimeout (resolve, ms);
    })]).finally (() => clearTimeout (timer));
}

//  Answer an HTTP request with a JSON-RPC error (id null: the request was
//  not read as JSON-RPC)
function s_refuse (res, status, code, message) {
    res.writeHead (status, { 'content-type': 'application/json' }).end (
        JSON.stringify ({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

//  413 to a request whose body is too large: the whole answer at once,
//  then what the client still sends is read and dropped (never kept)
//  until the body ends, LINGER_MS at most, before the connection closes.
//  Closed at once, the connection would be reset under a client still
//  writing, which then may never read the answer.
function s_too_large (req, res) {
    const body = JSON.stringify ({ jsonrpc: '2.0', error: { code: -32000, message:
        `Payload Too Large: a request body is ${MAX_BODY_BYTES} bytes at most` }, id: null });
    res.writeHead (413, { 'content-type': 'application/json', connection: 'close',
                          'content-length': Buffer.byteLength (body) });
    res.write (body);
    const end = () => {
        clearTimeout (timer);
        res.end ();
    };
    const timer = setTimeout (end, LINGER_MS);
    req.once ('end', end);
    req.once ('error', end);
    req.resume ();
}

//  The body of req, at most limit bytes: a Buffer, or null once it passed
//  limit (what follows is not kept; the caller answers at once)
function s_body (req, limit) {
    return new Promise ((resolve, reject) => {
        const chunks = [];
        let size = 0;
        const data = (chunk) => {
            size += chunk.length;
            if (size > limit) {
                req.off ('data', data);
                req.off ('end', end);
                resolve (null);
            }
            else
                chunks.push (chunk);
        };
        const end = () => resolve (Buffer.concat (chunks));
        req.on ('data', data);
        req.once ('end', end);
        req.once ('error', reject);
        req.once ('close', () => reject (new Error ('the request closed before its body ended')));
    });
}

//  True when MCP protocol version has no JSON-RPC batches (2025-06-18 on);
//  false for one the SDK does not support (its transport answers 400)
function s_no_batches (version) {
    return SUPPORTED_PROTOCOL_VERSIONS.includes (version) && version >= NO_BATCHES;
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

//  A JSON-RPC error the SDK sends as it is, { code, message }: an
//  McpError's own message starts "MCP error <code>: ", which the SDK
//  would put on the wire too (and its client adds once more)
function s_protocol_error (code, message) {
    const error = new McpError (code, message);
    error.message = message;
    return error;
}

//  Refuse a list request with a cursor (-32602, as MCP has a server do
//  with one it never gave): every list is one page, with no nextCursor.
//  Returns nothing.
function s_no_cursor (request) {
    if (request.params && request.params.cursor !== undefined)
        throw s_protocol_error (ErrorCode.InvalidParams, `${request.method}: no such cursor `
            + `${JSON.stringify (request.params.cursor)} (actd-mcp lists all in one page)`);
}

//  A function (progress, message) that sends notifications/progress for
//  the request, or null when it has no progressToken
function s_progress_sender (request, extra) {
    const token = request.params._meta && request.params._meta.progressToken;
    if (token === undefined)
        return null;
    return (progress, message) => extra.sendNotification ({ method: 'notifications/progress',
        params: { progressToken: token, progress, message } }).catch (() => {});
}

//  What an MCP client reads of an outcome that is not ok, or a refusal
function s_error_result (code, message) {
    return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }] };
}

class ActdMcp {
    //  options: endpoint (the broker's client endpoint; $ACTD_ENDPOINT,
    //  else tcp://127.0.0.1:5555), curveServer/curveCert (or
    //  $ACTD_SERVER_KEY, $ACTD_CERT), context (one context for every
    //  session; default: "mcp/<session id>" each), confine (true: a
    //  session reaches only that context: a _context or resource naming
    //  another is refused), pollMs (1000): how often TOOLS is asked,
    //  timeoutMs (30000, 0: none): how long a request waits for actd's
    //  reply, and a tools/call for DONE while actd answers no TOOLS,
    //  sessionIdleMs (30 minutes, 0: never) and maxSessions (1000): HTTP
    //  sessions, log (a function of one line; default: none)
    constructor (options = {}) {
        const clientOptions = { timeoutMs: options.timeoutMs ?? 30000 };
        for (const key of ['endpoint', 'endpoints', 'curveServer', 'curveCert'])
            if (options [key] !== undefined)
                clientOptions [key] = options [key];
        this.client = new Client (clientOptions);
        this.context = options.context ?? null;
        this.confine = options.confine ?? false;
        this.pollMs = options.pollMs ?? 1000;
        this.timeoutMs = clientOptions.timeoutMs;
        this.sessionIdleMs = options.sessionIdleMs ?? SESSION_IDLE_MS;
        this.maxSessions = options.maxSessions ?? MAX_SESSIONS;
        this.log = options.log ?? (() => {});
        this.tools = new Map ();        //  name -> TOOLS entry, for the served tools
        this.known = new Map ();        //  name -> TOOLS entry, every declared tool
        this._fingerprint = null;       //  s_stable of the served tools (null: none asked yet)
        this._failure = null;           //  The last TOOLS failure (an Error), null after an answer
        this._heard = clock.now ();     //  When actd last answered TOOLS
        this._sessions = new Set ();    //  Open sessions (stdio's, or HTTP's once initialized)
        this._waiting = new Set ();     //  Calls awaiting DONE: { since, giveUp (error) }
        this._submits = new Set ();     //  CALLs sent, not ACCEPTED yet
        this._cancels = new Set ();     //  CANCEL requests under way
        this._transports = new Map ();  //  HTTP session -> { transport, session, active, last, version }
        this._initializing = 0;         //  HTTP initializes under way
        this._first = null;             //  The first TOOLS' refresh ()
        this._timer = null;
        this._sweeper = null;
        this._polling = null;
        this._http = null;
        this.closed = false;
    }

    //  Ask TOOLS now; notify every session shown another set of tools.
    //  Resolves true when the set changed.
    async refresh () {
        let tools;
        try {
            tools = await this.client.tools ();
        } catch (error) {
            if (this.closed)
                return false;
            if (error instanceof ActdError && !LOCAL_CODES.has (error.code))
                this._heard = clock.now (); //  It answered (ERROR)
            //  Once per kind of failure, not at every poll
            if (!this._failure || error.message !== this._failure.message)
                this.log (`TOOLS failed: ${error.message}`);
            this._failure = error;
            this._unreachable ();
            return false;
        }
        this._heard = clock.now ();
        this._failure = null;
        const served = new Map (Object.entries (tools).filter (([, tool]) => tool.workers > 0)
                                                     .sort (([a], [b]) => (a < b? -1: a > b)));
        const fingerprint = s_stable ([...served].map (([name, tool]) =>
            [name, { ...tool, workers: undefined }]));
        this.known = new Map (Object.entries (tools));
        if (fingerprint === this._fingerprint)
            return false;
        this._fingerprint = fingerprint;
        this.tools = served;
        //  A session that listed tools (an empty list too, when actd was
        //  unreachable) and was shown others than these
        for (const session of this._sessions)
            if (session.shown !== null && session.shown !== fingerprint)
                session.server.sendToolListChanged ().catch (() => {});
        this.log (`tools: ${[...served.keys ()].join (', ') || 'none'}`);
        return true;
    }

    //  TOOLS failed: the calls that have heard nothing from actd for
    //  timeoutMs (since it last answered TOOLS, or since they were
    //  accepted) stop waiting
    _unreachable () {
        const now = clock.now ();
        for (const waiting of [...this._waiting]) {
            const silent = now - Math.max (this._heard, waiting.since);
            if (this.timeoutMs > 0 && silent >= this.timeoutMs)
                waiting.giveUp (new ActdError ('unreachable', `actd has not answered for ${silent} `
                    + 'ms: the call may still run (it was sent CANCEL)'));
        }
    }

    //  Start polling TOOLS. Resolves once its first answer (or failure)
    //  came; sessions may be served before.
    async start () {
        if (!this._first) {
            this._first = this._polling = this.refresh ();
            const tick = async () => {
                this._polling = this.refresh ();
                await this._polling;
                if (!this.closed)
                    this._timer = setTimeout (tick, this.pollMs);
            };
            this._first.then (() => {
                if (!this.closed)
                    this._timer = setTimeout (tick, this.pollMs);
            });
        }
        await this._first;
        return this;
    }

    //  A Server for one MCP session; id () is the session's id once known.
    //  The caller adds it to _sessions once it is open.
    _session (id) {
        const server = new Server ({ name: 'actd-mcp', version },
            { capabilities: { tools: { listChanged: true }, resources: { listChanged: true } } });
        //  shown: the fingerprint of the last tools/list answered
        //  errors: how many the SDK reported (server.onerror)
        const session = { server, id, contexts: new Set (), shown: null, errors: 0 };
        session.defaultContext = () => this.context ?? `mcp/${session.id ()}`;
        server.setRequestHandler (ListToolsRequestSchema, async (request) => {
            s_no_cursor (request);
            if (this._fingerprint === null && this._first)
                await s_within (this._first, FIRST_TOOLS_MS);
            session.shown = this._fingerprint ?? s_stable ([]);
            return { tools: [...this.tools].map (([name, tool]) => s_mcp_tool (name, tool)) };
        });
        server.setRequestHandler (CallToolRequestSchema, (request, extra) =>
            this._call (session, request.params.name, request.params.arguments ?? {},
                        extra.signal, s_progress_sender (request, extra)));
        server.setRequestHandler (ListResourcesRequestSchema, async (request) => ({
            ...s_no_cursor (request),
            resources: [session.defaultContext (), ...session.contexts]
                .filter ((context, index, all) => all.indexOf (context) === index)
                .map ((context) => ({ uri: s_uri (context), name: context,
                                      mimeType: 'text/plain',
                                      description: `The merged view of actd context ${context}` }))
        }));
        server.setRequestHandler (ListResourceTemplatesRequestSchema, async (request) => ({
            ...s_no_cursor (request),
            resourceTemplates: this.confine? []: [{
                uriTemplate: URI_PREFIX + '{id}', name: 'actd context', mimeType: 'text/plain',
                description: 'The merged view of an actd context' }]
        }));
        server.setRequestHandler (ReadResourceRequestSchema, (request) =>
            this._read (session, request.params.uri));
        //  What the SDK refuses without an answer (a line that is not
        //  JSON-RPC, a stdio message past its 10 MB buffer, which also
        //  closes the session): one line each, MAX_ERROR_LINES at most
        server.onerror = (error) => {
            if (++session.errors > MAX_ERROR_LINES)
                return;
            //  The SDK's schema error (a zod error: its issues) is a page
            const text = Array.isArray (error.issues)
                ? 'not a JSON-RPC message (an array is a batch, which MCP has had no more since '
                  + `2025-06-18): ${error.issues [0] && error.issues [0].message}`
                : String (error.message).replace (/\s+/gu, ' ').slice (0, 300);
            this.log (`session ${session.id () ?? '(initializing)'}: ${text}`
                      + (session.errors === MAX_ERROR_LINES? ' (its next errors are not logged)': ''));
        };
        server.onclose = () => {
            this._sessions.delete (session);
            if (session.onclose)
                session.onclose ();
        };
        return session;
    }

    //  Why session may not use context (confine), or null
    _refused (session, context) {
        const own = session.defaultContext ();
        return this.confine && context !== own
             ? `this server is confined to the session's context ${own}, not ${context}`: null;
    }

    //  Whether a worker serves tool name, asking TOOLS again for
    //  SERVED_WAIT_MS at most (until signal aborts). A tool whose workers
    //  all left stays declared in actd, and its call would wait there for
    //  a worker up to schedule_timeout_ms (60 s by default: an MCP
    //  client's whole request timeout), the client told nothing of why
    async _served (name, signal) {
        const deadline = clock.now () + SERVED_WAIT_MS;
        while (!this.tools.has (name) && clock.now () < deadline && !(signal && signal.aborted)) {
            const pause = Math.max (1, Math.min (this.pollMs, 250, deadline - clock.now ()));
            await new Promise ((resolve) => setTimeout (resolve, pause));
            if (!this.closed)
                await this.refresh ();
        }
        return this.tools.has (name);
    }

    //  tools/call: a CALL in the session's context, until its DONE (or
    //  signal aborts: the call is cancelled); progress: see _follow. A
    //  tool actd does not declare throws -32602 "Unknown tool: NAME" (a
    //  protocol error in MCP, not a result with isError).
    async _call (session, name, args, signal, progress = null) {
        const tool = this.known.get (name) ?? (await this.refresh (), this.known.get (name));
        if (!tool) {
            //  TOOLS failed: its error (a result), not an unknown tool
            const failure = this._failure;
            if (failure)
                return s_error_result (failure.code ?? 'error', failure.message);
            throw s_protocol_error (ErrorCode.InvalidParams, `Unknown tool: ${name}`);
        }
        if (!this.tools.has (name) && !(await this._served (name, signal)))
            return s_error_result ('no_worker', `no worker serves tool ${name} now (its workers `
                + `left, and none came within ${SERVED_WAIT_MS} ms): try again later`);
        const fields = Object.keys (args).filter ((key) => key.startsWith ('_')
                                                        && !ARGUMENTS.has (key));
        if (fields.length)
            return s_error_result ('bad_arguments', `${fields.join (', ')}: the arguments of a `
                + 'tool call that start with "_" are _context and _outputPath only (the others '
                + 'are actd call fields, which actd-mcp does not pass)');
        const { _context, _outputPath, ...params } = args;
        const context = typeof _context === 'string' && _context? _context
                                                                : session.defaultContext ();
        const refused = this._refused (session, context);
        if (refused)
            return s_error_result ('forbidden', refused);
        const path = tool.outputPath && typeof tool.outputPath.const === 'string'
                   ? tool.outputPath.const
                   : typeof _outputPath === 'string'? _outputPath
                   : '\u2020tools[' + JSON.stringify (name) + ']';
        const call = { ...params, _tool: name, _outputPath: path };
        if (signal && signal.aborted)
            return s_error_result ('cancelled', 'the request was cancelled');
        let outcome;
        try {
            const submitting = this.client.submit (context, call);
            const forget = () => this._submits.delete (submitting);
            this._submits.add (submitting);
            submitting.then (forget, forget);
            const submitted = await submitting;
            this._used (session, context);
            outcome = await this._outcome (submitted, signal, progress);
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

    //  The DONE outcome of a submitted call ({ callId, done }). When
    //  signal aborts (the MCP request was cancelled, or its session
    //  closed), or actd stops answering (_unreachable), the call is sent
    //  CANCEL and this rejects. progress: see _follow.
    _outcome ({ callId, done }, signal, progress) {
        return new Promise ((resolve, reject) => {
            const waiting = { since: clock.now () };
            const unfollow = progress? this._follow (callId, progress): () => {};
            const finish = (settle, value) => {
                if (!this._waiting.delete (waiting))
                    return;
                unfollow ();
                if (signal)
                    signal.removeEventListener ('abort', abort);
                settle (value);
            };
            waiting.giveUp = (error) => {
                this._cancel (callId);
                finish (reject, error);
            };
            const abort = () => waiting.giveUp (new ActdError ('cancelled',
                `the request was cancelled: call ${callId} was sent CANCEL`));
            this._waiting.add (waiting);
            if (signal) {
                if (signal.aborted) {
                    abort ();
                    return;
                }
                signal.addEventListener ('abort', abort, { once: true });
            }
            done.then ((outcome) => finish (resolve, outcome),
                       (error) => finish (reject, error));
        });
    }

    //  Follow call callId for a request that asked for progress (a
    //  progressToken): its STATUS every pollMs until the returned function
    //  is called; each change of its state or of its worker's latest
    //  PROGRESS is sent with progress (the count of changes, so that it
    //  increases) and a message (the state, and the details as JSON).
    //  Best effort: a STATUS that fails is tried again at the next tick.
    _follow (callId, progress) {
        let last = null, count = 0, timer = null, followed = true;
        const tick = async () => {
            try {
                const status = await this.client.status (callId);
                const seen = s_stable ([status.state, status.progress ?? null]);
                if (followed && seen !== last) {
                    last = seen;
                    const details = status.progress === undefined? ''
                                  : ': ' + JSON.stringify (status.progress).slice (0, MAX_PROGRESS_TEXT);
                    await progress (++count, status.state + details);
                }
            } catch {
                //  The next tick asks again; DONE ends the call either way
            }
            if (followed)
                timer = setTimeout (tick, this.pollMs);
        };
        tick ();
        return () => {
            followed = false;
            clearTimeout (timer);
        };
    }

    //  CANCEL of call callId, best effort (close () waits for it a while)
    _cancel (callId) {
        const cancel = this.client.cancel (callId).catch ((error) => {
            if (!this.closed)
                this.log (`CANCEL of call ${callId} failed: ${error.message}`);
        }).finally (() => this._cancels.delete (cancel));
        this._cancels.add (cancel);
    }

    //  A session used context: one more resource
    _used (session, context) {
        if (context === session.defaultContext () || session.contexts.has (context))
            return;
        session.contexts.add (context);
        session.server.sendResourceListChanged ().catch (() => {});
    }

    //  resources/read of actd://context/<id>: VIEW text
    async _read (session, uri) {
        if (!uri.startsWith (URI_PREFIX))
            throw s_protocol_error (ErrorCode.InvalidParams, `not an actd context: ${uri}`);
        let context;
        try {
            context = decodeURIComponent (uri.slice (URI_PREFIX.length));
        } catch {
            throw s_protocol_error (ErrorCode.InvalidParams, `not an actd context: ${uri} (its `
                                + 'percent-encoding is broken)');
        }
        const refused = this._refused (session, context);
        if (refused)
            throw s_protocol_error (ErrorCode.InvalidParams, `forbidden: ${refused}`);
        let text;
        try {
            text = await this.client.view (context, 'text');
        } catch (error) {
            if (error.code === 'bad_context')
                throw s_protocol_error (ErrorCode.InvalidParams, `${error.code}: ${error.message}`);
            if (error.code !== 'not_found')
                throw s_protocol_error (ErrorCode.InternalError, `${error.code}: ${error.message}`);
            text = '';
        }
        return { contents: [{ uri, mimeType: 'text/plain', text }] };
    }

    //  Serve one session on stdin and stdout
    async connectStdio () {
        const id = crypto.randomUUID ();
        const session = this._session (() => id);
        await session.server.connect (new StdioServerTransport ());
        this._sessions.add (session);
        return session;
    }

    //  Serve Streamable HTTP at http://host:port/mcp; host must be a
    //  loopback address (the server has no authentication), and a request
    //  whose Host or Origin is not a loopback name gets 403 (DNS
    //  rebinding). Resolves with the port (useful with port 0).
    listenHttp (port, host = '127.0.0.1') {
        if (!LOOPBACK.has (host))
            throw new Error (`actd-mcp listens on loopback only (127.0.0.1, ::1), not ${host}`);
        this._http = http.createServer ((req, res) => {
            this._http_request (req, res).catch ((error) => {
                this.log (`HTTP: ${error.message}`);
                if (!res.headersSent)
                    res.writeHead (500).end ();
            });
        });
        if (this.sessionIdleMs > 0) {
            this._sweeper = setInterval (() => this._expire (),
                                         Math.min (this.sessionIdleMs, 60000));
            this._sweeper.unref ();
        }
        return new Promise ((resolve, reject) => {
            this._http.once ('error', reject);
            this._http.listen (port, host, () => resolve (this._http.address ().port));
        });
    }

    //  Close the HTTP sessions idle (no request under way, none open: a
    //  GET stream counts) for sessionIdleMs
    _expire () {
        const now = clock.now ();
        for (const [id, entry] of this._transports)
            if (!entry.active && now - entry.last >= this.sessionIdleMs) {
                this.log (`HTTP: session ${id} idle for ${now - entry.last} ms: closed`);
                this._transports.delete (id);
                entry.session.server.close ().catch (() => {});
            }
    }

    async _http_request (req, res) {
        if (new URL (req.url, 'http://localhost').pathname !== '/mcp') {
            res.writeHead (404).end ();
            return;
        }
        if (!s_from_loopback (req)) {
            this.log (`HTTP: refused a request for host ${req.headers.host}, origin `
                      + `${req.headers.origin ?? 'none'}: loopback names only`);
            s_refuse (res, 403, -32000, 'Forbidden: the Host and Origin of a request must be '
                      + 'loopback names (127.0.0.1, [::1], localhost)');
            return;
        }
        const id = req.headers ['mcp-session-id'];
        let body;
        if (req.method === 'POST') {
            //  Past MAX_BODY_BYTES (as declared, or as read): 413 at once
            if (Number (req.headers ['content-length']) > MAX_BODY_BYTES) {
                s_too_large (req, res);
                return;
            }
            const buffer = await s_body (req, MAX_BODY_BYTES);
            if (buffer === null) {
                s_too_large (req, res);
                return;
            }
            try {
                body = JSON.parse (buffer.toString ('utf8'));
            } catch {
                s_refuse (res, 400, -32700, 'Parse error');
                return;
            }
        }
        const entry = id? this._transports.get (id): undefined;
        if (!entry && !id && req.method === 'POST' && isInitializeRequest (body)) {
            await this._http_initialize (req, res, body);
            return;
        }
        if (!entry) {
            s_refuse (res, id? 404: 400, -32000, id? 'Unknown session'
                                                  : 'No session: initialize first');
            return;
        }
        //  The request's version is its header's; without one, the
        //  session's (the specification's 2025-03-26 is for a server with
        //  no other way to know)
        const version = req.headers ['mcp-protocol-version'] ?? entry.version;
        if (Array.isArray (body) && s_no_batches (version)) {
            const message = 'Invalid Request: a JSON-RPC batch (an array) is not part of MCP '
                + `since ${NO_BATCHES} (this request's protocol version is ${version}): send `
                + 'each message in a POST of its own';
            entry.session.server.onerror (new Error (message));
            s_refuse (res, 400, -32600, message);
            return;
        }
        entry.active++;
        res.once ('close', () => {
            entry.active--;
            entry.last = clock.now ();
        });
        await entry.transport.handleRequest (req, res, body);
    }

    //  An initialize: a new session, kept once it is initialized (a
    //  refused initialize leaves nothing), maxSessions at most
    async _http_initialize (req, res, body) {
        if (this._transports.size + this._initializing >= this.maxSessions) {
            this.log (`HTTP: refused a new session: ${this.maxSessions} are open`);
            s_refuse (res, 503, -32000, `Service Unavailable: ${this.maxSessions} sessions are `
                      + 'open, the most this server keeps (one closes when its client sends '
                      + 'DELETE, or after it is idle)');
            return;
        }
        let session = null;
        //  The version the SDK's Server negotiates (the client's when it
        //  supports it, else its newest): kept as the session's version
        const asked = body.params.protocolVersion;
        const version = SUPPORTED_PROTOCOL_VERSIONS.includes (asked)? asked: LATEST_PROTOCOL_VERSION;
        const transport = new StreamableHTTPServerTransport ({
            sessionIdGenerator: () => crypto.randomUUID (),
            onsessioninitialized: (sessionId) => {
                this._transports.set (sessionId, { transport, session, active: 0,
                                                   last: clock.now (), version });
                this._sessions.add (session);
            }
        });
        transport.onclose = () => {
            if (transport.sessionId)
                this._transports.delete (transport.sessionId);
        };
        session = this._session (() => transport.sessionId);
        await session.server.connect (transport);
        this._initializing++;
        try {
            await transport.handleRequest (req, res, body);
        } finally {
            this._initializing--;
        }
        if (!transport.sessionId)
            await session.server.close ().catch (() => {});
    }

    //  Stop polling, close every session (their calls under way are
    //  cancelled), the HTTP server and the client
    async close () {
        this.closed = true;
        clearTimeout (this._timer);
        clearInterval (this._sweeper);
        for (const session of [...this._sessions])
            await session.server.close ().catch (() => {});
        if (this._http)
            await new Promise ((resolve) => this._http.close (() => resolve ()));
        //  The calls of the sessions closed are sent CANCEL: those accepted
        //  at once, those whose ACCEPTED is on its way once it comes
        if (this._submits.size || this._cancels.size)
            await s_within ((async () => {
                await Promise.allSettled ([...this._submits]);
                await Promise.allSettled ([...this._cancels]);
            }) (), CANCEL_CLOSE_MS);
        await this.client.close ();
        await this._polling;
    }
}

module.exports = { ActdMcp, mcpTool: s_mcp_tool };
