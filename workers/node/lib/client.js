'use strict';
//  Client: the Promise API of the client sub-protocol (PROTOCOL.md section 1).
//
//  Every request gets a fresh request id, so any number of requests can be
//  in flight on the DEALER sockets; replies are matched by request id.
//  A CALL or PLAN is answered ACCEPTED, then one DONE per call that has an
//  _outputPath (matched by request id and call id).
//
//  Several brokers sharing one store (one Link, so one DEALER, per broker):
//  a request about context C goes to the broker C was last seen at, else to
//  the first broker of C's rendezvous order (./route.js); an ERROR moved
//  names the owner, and the request is sent there again, with the same
//  request id (at most MAX_HOPS times); one that names none (a broker cut
//  off from the database that knew no live one) sends it to the next
//  broker at once, never back to that one. STATUS and CANCEL go first to the
//  broker that accepted the call, STATS and PING to the first broker in the
//  list. A broker that gives no reply within requestTimeoutMs is skipped
//  for DEAD_MS and the request goes to the next broker in the order; a
//  client given one endpoint, whose requestTimeoutMs is 0 by default, takes
//  5000 once a moved reply names a second broker (one that died, its lease
//  not yet out, then costs 5 s, not timeoutMs), as the C library does.
//
//  DONE goes only to the socket that submitted the call, from the broker
//  that owns the context when the call ends. When the connection drops (the
//  broker stopped or crashed), or a call's DONE has not come for
//  statusPollMs (a broker that took the context over cannot send it to
//  us), the call is followed with a watch of its context, one for all such
//  calls of a context (STATUS of each once the watch opens, then their
//  {call} events; never STATUS in a loop), so a waiting call() still
//  resolves. wait () of a call of another client goes the same way.
//
//  This file has the API; the requests' routing, replies and timers are in
//  ./client_requests.js, the watches and the following of calls in
//  ./client_watch.js (their methods are Client's).

const { ActdError, NotFoundError } = require ('./errors');
const clock = require ('./clock');
const { endpointList, withIds, withKey } = require ('./route');
const { curveOptions } = require ('./curve');
const { ClientRequests, MAX_HOPS, parseFrame } = require ('./client_requests');
const { ClientWatch } = require ('./client_watch');

const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5555';
const HISTORY_LIMIT = 1000;             //  Most messages one HISTORY returns
const MULTI_REQUEST_TIMEOUT_MS = 5000;  //  Default requestTimeoutMs with several brokers
const PRESCRIBED_MS = 2000;             //  How long a TOOLS answer is used (see _prescribe)

function s_has_output (call) {
    return call !== null && typeof call === 'object' && !Array.isArray (call)
        && typeof call._outputPath === 'string';
}

//  The activity of a call without _outputPath (call () with wait asks
//  whether its tool prescribes one), else null
function s_lacking (call) {
    if (call === null || typeof call !== 'object' || Array.isArray (call)
    ||  call._outputPath !== undefined || typeof call._tool !== 'string')
        return null;
    return call._tool;
}

//  The output path TOOLS activity's answer prescribes (outputPath.const), or null
function s_prescribed (answer, activity) {
    const path = answer?.[activity]?.outputPath?.const;
    return typeof path === 'string'? path: null;
}

function s_json (value, what) {
    const text = JSON.stringify (value);
    if (text === undefined)
        throw new TypeError (what + ' is not a JSON value');
    return text;
}

//  A page size (CONTEXTS' limit, HISTORY's pageSize) is an integer from 1
//  to HISTORY_LIMIT, as actd takes it (and as the Python package checks it)
function s_check_page (size, what) {
    if (!Number.isInteger (size) || size < 1 || size > HISTORY_LIMIT)
        throw new TypeError (`${what} is an integer from 1 to ${HISTORY_LIMIT}, not `
                             + String (size));
}

let s_iterate_warned = false;           //  iterateHistory () warns once a process

class Client {
    //  options: endpoints (an array of brokers sharing a store, or a
    //  comma-separated string), or endpoint (default $ACTD_ENDPOINT, else
    //  tcp://127.0.0.1:5555), or the endpoint string itself; curveServer
    //  and curveCert for CURVE (./curve.js); timeoutMs (30000): how long a
    //  request waits for its first reply (0: forever; DONE has no limit);
    //  requestTimeoutMs (5000 with several endpoints, 0 with one until a
    //  moved reply names a second broker, then 5000; 0 given explicitly
    //  stays 0): a broker silent that long is skipped and the request sent
    //  to the next;
    //  statusPollMs (1000, 0: never): after how long without DONE a call is
    //  followed with a watch of its context.
    constructor (options = {}) {
        if (typeof options === 'string')
            options = { endpoint: options };
        const endpoints = endpointList (options, process.env.ACTD_ENDPOINT || DEFAULT_ENDPOINT);
        this.endpoint = endpoints [0];
        this.endpoints = endpoints;     //  Grows with endpoints moved names
        this.timeoutMs = options.timeoutMs ?? 30000;
        this.requestTimeoutMs = options.requestTimeoutMs
                             ?? (endpoints.length > 1? MULTI_REQUEST_TIMEOUT_MS: 0);
        //  requestTimeoutMs taken once a moved reply names a second broker,
        //  when it is 0 by default (one endpoint given): an owner named
        //  while dead (its lease not yet out) then costs that long, not
        //  timeoutMs. 0 when requestTimeoutMs was given, 0 included
        this._severalTimeoutMs = options.requestTimeoutMs == null && endpoints.length === 1
                               ? MULTI_REQUEST_TIMEOUT_MS: 0;
        this.statusPollMs = options.statusPollMs ?? 1000;
        if (!(this.requestTimeoutMs >= 0) || !(this.statusPollMs >= 0))
            throw new TypeError ('requestTimeoutMs and statusPollMs are numbers >= 0');
        this._curve = curveOptions (options);
        this._links = new Map ();       //  endpoint -> Link
        this._everUp = false;           //  A handshake succeeded once, with any broker
        this._failures = new Map ();    //  endpoint -> what its last attempt saw
        this._dead = new Map ();        //  endpoint -> skipped until (clock.now ())
        this._owners = new Map ();      //  context -> endpoint
        this._accepted = new Map ();    //  call id -> endpoint
        this._pending = new Map ();     //  request id -> request
        this._waits = new Map ();       //  request id + "\n" + call id -> wait
        this._watches = new Set ();     //  Open watch () states
        this._rescues = new Map ();     //  context -> calls followed with a watch
        this._counter = 0;
        this._prescriptions = new Map ();   //  activity -> { until, path } (TOOLS answers)
        this._scanTimer = null;
        this._closing = null;           //  close ()'s promise
        this._timersChanged ();
        this.closed = false;
        try {
            for (const endpoint of endpoints)
                this._link (endpoint);
        }
        catch (error) {
            //  An endpoint zeromq cannot connect to (a TypeError naming
            //  it): the sockets opened already would keep the process alive
            this.close ();
            throw error;
        }
    }

    //  ------------------------------------------------------------------
    //  Calls

    //  CALL. Resolves with the DONE outcome when wait (default true) and
    //  the call has an _outputPath, else with the call id. With wait and
    //  no _outputPath, the client asks TOOLS <activity> (the answer is
    //  kept 2 s per client and activity) whether the tool prescribes an
    //  output path ("outputPath": {"const": ...}); when it does, the call
    //  is sent with that _outputPath and resolves with its outcome (a
    //  different prescription by the time it arrives: ERROR bad_call).
    async call (context, call, options = {}) {
        const wait = options.wait ?? true;
        if (wait)
            [call] = await this._prescribe ([call]);
        const { callId, done } = await this._submit ('CALL', context, call, wait, options);
        return done? done: callId;
    }

    //  CALL, resolving at ACCEPTED with { callId, done }: done is a promise
    //  of the DONE outcome, or null for a call without _outputPath.
    async submit (context, call, options = {}) {
        return this._submit ('CALL', context, call, true, options);
    }

    //  PLAN. Resolves with one entry per call, in order: its DONE outcome
    //  when wait (default true) and it has an _outputPath, else its call id.
    //  With wait, a call without _outputPath whose tool prescribes one is
    //  given it first, as call () does.
    async plan (context, calls, options = {}) {
        const wait = options.wait ?? true;
        if (wait && Array.isArray (calls))
            calls = await this._prescribe (calls);
        const { callIds, done } = await this._submit ('PLAN', context, calls, wait, options);
        return Promise.all (callIds.map ((id, index) => done [index] || id));
    }

    //  PLAN, resolving at ACCEPTED with { callIds, done } (done [i] null
    //  for calls without _outputPath)
    async submitPlan (context, calls, options = {}) {
        return this._submit ('PLAN', context, calls, true, options);
    }

    //  calls, those without _outputPath whose tool prescribes one given it
    //  (copies: the caller's objects are not changed). TOOLS is asked for
    //  each activity whose answer is older than PRESCRIBED_MS; a broker
    //  without TOOLS (unknown_command), or that refuses this client TOOLS
    //  (unauthorized: no read right), prescribes nothing.
    async _prescribe (calls) {
        const paths = new Map ();
        for (const call of calls) {
            const activity = s_lacking (call);
            if (activity === null || paths.has (activity))
                continue;
            const known = this._prescriptions.get (activity);
            if (known && known.until > clock.now ()) {
                paths.set (activity, known.path);
                continue;
            }
            let answer = {};
            try {
                answer = await this.tools (activity);
            }
            catch (error) {
                if (!(error instanceof ActdError)
                ||  !['unknown_command', 'unauthorized'].includes (error.code))
                    throw error;
            }
            const path = s_prescribed (answer, activity);
            this._prescriptions.set (activity, { until: clock.now () + PRESCRIBED_MS, path });
            paths.set (activity, path);
        }
        return calls.map ((call) => {
            const path = paths.get (s_lacking (call));
            return path? { ...call, _outputPath: path }: call;
        });
    }

    _submit (command, context, body, track, options) {
        const plan = command === 'PLAN';
        //  With several brokers (given, or named by a moved reply since) a
        //  request may be sent twice (a retry after a timeout): an _id
        //  makes actd run each call once
        if (this.endpoints.length > 1)
            body = withIds (body, plan);
        const text = s_json (body, plan? 'the plan': 'the call');
        const outputs = plan? (Array.isArray (body)? body.map (s_has_output): [])
                            : [s_has_output (body)];
        return this._request (command, [context, text], options, (request, args) => {
            const ids = plan? parseFrame (args [0]).map (String): [args [0].toString ()];
            const done = ids.map ((id, index) =>
                track && outputs [index]? this._expectDone (request, id): null);
            return plan? { callIds: ids, done }: { callId: ids [0], done: done [0] };
        });
    }

    //  A promise of the DONE for call id of request
    _expectDone (request, id) {
        let deferred;
        const promise = new Promise ((resolve, reject) => { deferred = { resolve, reject }; });
        promise.catch (() => {});       //  An unawaited done is not unhandled
        if (!request.dones.has (id))
            request.dones.set (id, []);
        request.dones.get (id).push (deferred);
        this._waits.set (request.id + '\n' + id, {
            request, callId: id, endpoint: request.endpoint, heard: clock.now (), rescue: null,
            promise, settle: (outcome) => this._done (request, id, outcome),
            //  A failed watch: DONE may still come, or a new watch after
            //  statusPollMs; but a call STATUS does not know, or whose
            //  context was deleted, never ends: its DONE rejects (and the
            //  call is no longer followed)
            fail: (error) => {
                if (error instanceof NotFoundError)
                    this._done (request, id, null, error);
            }
        });
        return promise;
    }

    //  ------------------------------------------------------------------
    //  Contexts

    //  APPEND; resolves with the message's _seq. options.key: an
    //  idempotency key (1-128 bytes): an APPEND again with the same key in
    //  the context appends nothing and resolves with the first one's _seq.
    //  Without one, with several brokers (given, or named by a moved reply
    //  since) it may be sent twice (a retry after a timeout): it gets a
    //  random key, kept across its resends, so that actd appends it once
    async append (context, message, options = {}) {
        let args = [context, s_json (message, 'the message')];
        if (options.key !== undefined)
            args.push (String (options.key));
        else
        if (this.endpoints.length > 1)
            args = withKey (args);
        return this._request ('APPEND', args, {}, (request, reply) => parseFrame (reply [0]).seq);
    }

    //  DELETE: cancels the context's calls not ended, removes it; resolves
    //  with {messages, cancelled}, rejects with NotFoundError
    async delete (context) {
        return this._request ('DELETE', [context], {}, (request, args) => parseFrame (args [0]));
    }

    //  CONTEXTS: an async iterator over the stored contexts ({context,
    //  messages, last_seq, updated, pending}) whose id starts with
    //  options.prefix (default: all), in byte order, asking options.limit
    //  (an integer from 1 to 1000, default 100; else a TypeError at once)
    //  of them a request
    contexts (options = {}) {
        if (options === null || typeof options !== 'object')
            throw new TypeError ('contexts ({prefix, limit}) is an async iterator over the '
                                 + 'contexts');
        const limit = options.limit ?? 100;
        s_check_page (limit, 'limit');
        return this._contexts (String (options.prefix ?? ''), String (limit));
    }

    async * _contexts (prefix, limit) {
        let after = '';
        do {
            const page = await this._request ('CONTEXTS', [prefix, after, limit], {},
                (request, args) => {
                    const value = parseFrame (args [0]);
                    if (value === null || typeof value !== 'object'
                    ||  !Array.isArray (value.contexts)
                    ||  !(value.next === undefined || typeof value.next === 'string'))
                        throw new Error ('not {contexts: [...], next?}');
                    return value;
                });
            yield * page.contexts;
            after = page.next;
        } while (after !== undefined);
    }

    //  RESOLVE; rejects with NotFoundError when the value is absent
    async resolve (context, expression, instance) {
        const args = instance === undefined? [context, expression]
                                           : [context, expression, instance];
        return this._request ('RESOLVE', args, {}, (request, reply) => parseFrame (reply [0]));
    }

    //  VIEW: the merged view, a JSON array (format "json") or text ("text")
    async view (context, format = 'json') {
        return this._request ('VIEW', [context, format], {}, (request, args) =>
            format === 'text'? args [0].toString (): parseFrame (args [0]));
    }

    //  Every stored message of context from options.fromSeq (default 1)
    //  on, oldest first, at most options.limit (default: all), read with
    //  HISTORY options.pageSize (an integer from 1 to 1000, default 1000)
    //  at a time: an async iterator. A plain method, so that history
    //  (context, fromSeq, limit), which resolved with one page before it
    //  was the iterator, throws at once, as do a bad pageSize or limit.
    history (context, options = {}) {
        if (options === null || typeof options !== 'object')
            throw new TypeError ('history (context, {fromSeq, limit, pageSize}) is an async '
                                 + 'iterator over the messages');
        const limit = options.limit ?? Infinity;
        const size = options.pageSize ?? HISTORY_LIMIT;
        if (limit !== Infinity && !(Number.isSafeInteger (limit) && limit >= 0))
            throw new TypeError ('limit is an integer >= 0 (default: all), not ' + String (limit));
        s_check_page (size, 'pageSize');
        return this._history (context, options.fromSeq ?? 1, limit, size);
    }

    async * _history (context, from, left, size) {
        while (left > 0) {
            const asked = Math.min (size, left);
            const page = await this._request ('HISTORY', [context, String (from), String (asked)],
                {}, (request, args) => {
                    const value = parseFrame (args [0]);
                    if (!Array.isArray (value) || !value.every ((message) =>
                        message !== null && typeof message === 'object'
                        && Number.isSafeInteger (message._seq)))
                        throw new Error ('not an array of messages with _seq');
                    return value;
                });
            for (const message of page)
                yield message;
            left -= page.length;
            //  Only an empty page is the end: actd stops a page early at
            //  max_reply_bytes
            if (page.length === 0)
                return;
            from = page [page.length - 1]._seq + 1;
        }
    }

    //  Deprecated: history ()'s name in actd 0.1.0
    iterateHistory (context, options) {
        if (!s_iterate_warned) {
            s_iterate_warned = true;
            process.emitWarning ('client.iterateHistory () is deprecated: use client.history ()',
                                 'DeprecationWarning', 'ACTD_ITERATE_HISTORY');
        }
        return this.history (context, options);
    }

    //  ------------------------------------------------------------------
    //  Calls by id, and the broker

    async status (callId) {
        return this._request ('STATUS', [String (callId)], {}, (request, args) => {
            const status = parseFrame (args [0]);
            if (status === null || typeof status !== 'object' || Array.isArray (status))
                throw new Error ('the status is not an object');
            return status;
        });
    }

    //  CANCEL; resolves also for a call that has already ended
    async cancel (callId) {
        return this._request ('CANCEL', [String (callId)], {}, () => undefined);
    }

    //  STATS of the first broker that answers
    async stats () {
        return this._request ('STATS', [], {}, (request, args) => parseFrame (args [0]));
    }

    //  TOOLS: the tools the workers declared (PROTOCOL.md section 2.1),
    //  { activity: { description?, params?, outputPath?, workers } }, all
    //  of them or only activity's
    async tools (activity, options = {}) {
        const args = activity === undefined || activity === null ? [] : [String (activity)];
        return this._request ('TOOLS', args, options, (request, reply) => parseFrame (reply [0]));
    }

    //  PING (the first broker that answers); resolves with the round trip
    //  in milliseconds
    async ping (options = {}) {
        const start = process.hrtime.bigint ();
        return this._request ('PING', [], options, () =>
            Number (process.hrtime.bigint () - start) / 1e6);
    }

    //  Any command: resolves with the reply { verb, args } (args as
    //  Buffers), whatever its verb (the caller reads it: this is for
    //  commands this class has no method for); ERROR rejects like the
    //  other methods. A CALL or PLAN sent this way gets no DONE.
    async request (command, args = [], options = {}) {
        return this._request (command, args, { ...options, anyVerb: true },
                              (request, reply, verb) => ({ verb, args: reply }));
    }

    //  Close the client: requests still waiting reject with code "closed"
    //  at once. Each watch still open is sent UNWATCH first (actd frees its
    //  slot of max_watches at once, rather than at its context's next
    //  event), best effort: the sockets close once every OK came, or after
    //  200 ms (UNWATCH_CLOSE_MS), at once when no watch is open. Returns a
    //  promise that resolves then (never rejects); closing again returns
    //  the same one.
    close () {
        if (this.closed)
            return this._closing;
        this.closed = true;
        clearTimeout (this._scanTimer);
        this._scanTimer = null;
        const error = new ActdError ('closed', 'the client was closed');
        for (const request of this._pending.values ())
            this._settle (request, error);
        this._pending.clear ();
        this._waits.clear ();
        const unwatched = this._unwatchAll (this._watches);
        const links = [...this._links.values ()];
        const closeLinks = () => {
            for (const link of links)
                link.close ();
            this._pending.clear ();     //  UNWATCHes not answered in time
        };
        if (unwatched)
            this._closing = unwatched.then (closeLinks);
        else {
            closeLinks ();
            this._closing = Promise.resolve ();
        }
        for (const watch of this._watches)
            if (watch.wake)
                watch.wake ();
        return this._closing;
    }
}

//  The methods of ./client_requests.js and ./client_watch.js are Client's
//  (one concern a file)
for (const part of [ClientRequests, ClientWatch])
    for (const name of Object.getOwnPropertyNames (part.prototype))
        if (name !== 'constructor')
            Object.defineProperty (Client.prototype, name,
                                   Object.getOwnPropertyDescriptor (part.prototype, name));

module.exports = { Client, DEFAULT_ENDPOINT, MAX_HOPS, PRESCRIBED_MS };
