'use strict';
//  Client: the Promise API of the client sub-protocol (PROTOCOL.md section 1).
//
//  Every request gets a fresh request id, so any number of requests can be
//  in flight on the one DEALER socket; replies are matched by request id.
//  A CALL or PLAN is answered ACCEPTED, then one DONE per call that has an
//  _outputPath (matched by request id and call id).
//
//  DONE goes only to the socket that submitted the call while it stays
//  connected. When the connection drops (the broker stopped or crashed),
//  the calls whose DONE is still awaited are followed with STATUS every
//  statusPollMs until they end, so a waiting call() still resolves.

const { Link } = require ('./link');
const { ActdError, errorFromReply } = require ('./errors');

const HEADER = 'ACTC01';
const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5555';
const HISTORY_LIMIT = 1000;             //  Most messages one HISTORY returns

function s_has_output (call) {
    return call !== null && typeof call === 'object' && !Array.isArray (call)
        && typeof call._outputPath === 'string';
}

function s_json (value, what) {
    const text = JSON.stringify (value);
    if (text === undefined)
        throw new TypeError (what + ' is not a JSON value');
    return text;
}

function s_parse (frame) {
    return JSON.parse (frame.toString ());
}

class Client {
    //  options: endpoint (default tcp://127.0.0.1:5555), or the endpoint
    //  string itself; timeoutMs (30000): how long a request waits for its
    //  first reply (0: forever; DONE has no limit); statusPollMs (1000).
    constructor (options = {}) {
        if (typeof options === 'string')
            options = { endpoint: options };
        this.endpoint = options.endpoint ?? DEFAULT_ENDPOINT;
        this.timeoutMs = options.timeoutMs ?? 30000;
        this.statusPollMs = options.statusPollMs ?? 1000;
        //  One link per broker; requests are routed by _linkFor, which has
        //  only one broker to choose from for now
        this.endpoints = [this.endpoint];
        this._links = this.endpoints.map ((endpoint) => new Link (endpoint, {
            onMessage: (frames) => this._message (frames),
            onDisconnect: () => this._orphan ()
        }));
        this._pending = new Map ();     //  request id -> request
        this._counter = 0;
        this._pollTimer = null;
        this._polling = false;
        this.closed = false;
    }

    //  ------------------------------------------------------------------
    //  Calls

    //  CALL. Resolves with the DONE outcome when wait (default true) and
    //  the call has an _outputPath, else with the call id.
    async call (context, call, options = {}) {
        const wait = options.wait ?? true;
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
    async plan (context, calls, options = {}) {
        const wait = options.wait ?? true;
        const { callIds, done } = await this._submit ('PLAN', context, calls, wait, options);
        return Promise.all (callIds.map ((id, index) => done [index] || id));
    }

    //  PLAN, resolving at ACCEPTED with { callIds, done } (done [i] null
    //  for calls without _outputPath)
    async submitPlan (context, calls, options = {}) {
        return this._submit ('PLAN', context, calls, true, options);
    }

    _submit (command, context, body, track, options) {
        const plan = command === 'PLAN';
        const text = s_json (body, plan? 'the plan': 'the call');
        const outputs = plan? (Array.isArray (body)? body.map (s_has_output): [])
                            : [s_has_output (body)];
        return this._request (command, [context, text], options, (request, args) => {
            const ids = plan? s_parse (args [0]).map (String): [args [0].toString ()];
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
        return promise;
    }

    //  ------------------------------------------------------------------
    //  Contexts

    //  APPEND; resolves with the message's _seq
    async append (context, message) {
        return this._request ('APPEND', [context, s_json (message, 'the message')], {},
                              (request, args) => s_parse (args [0]).seq);
    }

    //  RESOLVE; rejects with NotFoundError when the value is absent
    async resolve (context, expression, instance) {
        const args = instance === undefined? [context, expression]
                                           : [context, expression, instance];
        return this._request ('RESOLVE', args, {}, (request, reply) => s_parse (reply [0]));
    }

    //  VIEW: the merged view, a JSON array (format "json") or text ("text")
    async view (context, format = 'json') {
        return this._request ('VIEW', [context, format], {}, (request, args) =>
            format === 'text'? args [0].toString (): s_parse (args [0]));
    }

    //  HISTORY: up to limit (at most 1000) stored messages from _seq fromSeq
    async history (context, fromSeq = 1, limit = HISTORY_LIMIT) {
        return this._request ('HISTORY', [context, String (fromSeq), String (limit)], {},
                              (request, args) => s_parse (args [0]));
    }

    //  Every stored message of context from fromSeq on, oldest first, read
    //  pageSize at a time
    async * iterateHistory (context, options = {}) {
        let from = options.fromSeq ?? 1;
        const size = options.pageSize ?? HISTORY_LIMIT;
        for (;;) {
            const page = await this.history (context, from, size);
            for (const message of page)
                yield message;
            if (page.length < size || !page.length)
                return;
            from = page [page.length - 1]._seq + 1;
        }
    }

    //  ------------------------------------------------------------------
    //  Calls by id, and the broker

    async status (callId) {
        return this._request ('STATUS', [String (callId)], {}, (request, args) => s_parse (args [0]));
    }

    //  CANCEL; resolves also for a call that has already ended
    async cancel (callId) {
        return this._request ('CANCEL', [String (callId)], {}, () => undefined);
    }

    async stats () {
        return this._request ('STATS', [], {}, (request, args) => s_parse (args [0]));
    }

    //  PING; resolves with the round trip in milliseconds
    async ping (options = {}) {
        const start = process.hrtime.bigint ();
        return this._request ('PING', [], options, () =>
            Number (process.hrtime.bigint () - start) / 1e6);
    }

    //  Any command: resolves with the reply { verb, args } (args as
    //  Buffers); ERROR rejects like the other methods. For commands this
    //  class has no method for; a CALL or PLAN sent this way gets no DONE.
    async request (command, args = [], options = {}) {
        return this._request (command, args, options, (request, reply, verb) =>
            ({ verb, args: reply }));
    }

    //  Close the socket; requests still waiting reject with code "closed"
    close () {
        if (this.closed)
            return;
        this.closed = true;
        clearTimeout (this._pollTimer);
        const error = new ActdError ('closed', 'the client was closed');
        for (const request of this._pending.values ())
            this._settle (request, error);
        this._pending.clear ();
        for (const link of this._links)
            link.close ();
    }

    //  ------------------------------------------------------------------
    //  Requests and replies

    _linkFor () {
        return this._links [0];
    }

    //  Send command; onReply (request, args, verb) turns the first reply
    //  (not ERROR) into the result. A request that expects DONE replies
    //  stays pending until the last one.
    _request (command, args, options, onReply) {
        if (this.closed)
            return Promise.reject (new ActdError ('closed', 'the client was closed'));
        const id = (++this._counter).toString (36);
        return new Promise ((resolve, reject) => {
            const request = { id, command, resolve, reject, onReply, replied: false,
                              dones: new Map (), orphan: false, timer: null };
            const timeout = options.timeoutMs ?? this.timeoutMs;
            if (timeout > 0)
                request.timer = setTimeout (() => {
                    this._pending.delete (id);
                    reject (new ActdError ('request_timeout',
                        `no reply to ${command} within ${timeout} ms`));
                }, timeout);
            this._pending.set (id, request);
            this._linkFor ().send ([HEADER, command, id, ...args]).catch ((error) => {
                clearTimeout (request.timer);
                this._pending.delete (id);
                reject (error);
            });
        });
    }

    _message (frames) {
        if (frames.length < 3 || frames [0].toString () !== HEADER)
            return;
        const verb = frames [1].toString ();
        const request = this._pending.get (frames [2].toString ());
        if (!request)
            return;                     //  Timed out, or DONE nobody waits for
        const args = frames.slice (3);
        if (verb === 'DONE') {
            if (args.length >= 2)
                this._done (request, args [0].toString (), s_parse (args [1]));
            return;
        }
        if (request.replied)
            return;
        request.replied = true;
        clearTimeout (request.timer);
        if (verb === 'ERROR') {
            this._pending.delete (request.id);
            request.reject (errorFromReply (args [0]? args [0].toString (): 'internal',
                                            args [1]? args [1].toString (): ''));
            return;
        }
        try {
            request.resolve (request.onReply (request, args, verb));
        }
        catch (error) {
            request.reject (new ActdError ('bad_reply', `${verb} reply to ${request.command}: `
                                           + error.message));
        }
        if (!request.dones.size)
            this._pending.delete (request.id);
    }

    //  The DONE of call id for request
    _done (request, id, outcome) {
        const waiting = request.dones.get (id);
        if (!waiting)
            return;
        request.dones.delete (id);
        for (const deferred of waiting)
            deferred.resolve (outcome);
        if (!request.dones.size)
            this._pending.delete (request.id);
    }

    _settle (request, error) {
        clearTimeout (request.timer);
        if (!request.replied)
            request.reject (error);
        for (const waiting of request.dones.values ())
            for (const deferred of waiting)
                deferred.reject (error);
    }

    //  The connection dropped: DONE replies awaited now may never come
    _orphan () {
        let any = false;
        for (const request of this._pending.values ())
            if (request.dones.size) {
                request.orphan = true;
                any = true;
            }
        if (any)
            this._schedulePoll ();
    }

    _schedulePoll () {
        if (!this._pollTimer && !this.closed)
            this._pollTimer = setTimeout (() => {
                this._pollTimer = null;
                this._poll ().catch (() => {});
            }, this.statusPollMs);
    }

    //  STATUS each orphaned call; an ended one resolves with its outcome
    async _poll () {
        if (this._polling)
            return;
        this._polling = true;
        try {
            const asks = [];
            for (const request of this._pending.values ())
                if (request.orphan)
                    for (const id of request.dones.keys ())
                        asks.push (this.status (id).then ((status) => {
                            if (status.outcome)
                                this._done (request, id, status.outcome);
                        }, () => {}));
            await Promise.all (asks);
        }
        finally {
            this._polling = false;
        }
        for (const request of this._pending.values ())
            if (request.orphan) {
                this._schedulePoll ();
                break;
            }
    }
}

module.exports = { Client, DEFAULT_ENDPOINT };
