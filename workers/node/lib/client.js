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
//  request id (at most MAX_HOPS times). STATUS and CANCEL go first to the
//  broker that accepted the call, STATS and PING to the first broker in the
//  list. A broker that gives no reply within requestTimeoutMs is skipped
//  for DEAD_MS and the request goes to the next broker in the order.
//
//  DONE goes only to the socket that submitted the call, from the broker
//  that owns the context when the call ends. When the connection drops (the
//  broker stopped or crashed), or a call's DONE has not come for
//  statusPollMs (a broker that took the context over cannot send it to
//  us), the call is followed with a watch of its context, one for all such
//  calls of a context (STATUS of each once the watch opens, then their
//  {call} events; never STATUS in a loop), so a waiting call() still
//  resolves. wait () of a call of another client goes the same way.

const { Link } = require ('./link');
const { ActdError, NotFoundError, errorFromReply } = require ('./errors');
const { rendezvous, endpointList, withIds } = require ('./route');
const { curveOptions } = require ('./curve');

const HEADER = 'ACTC01';
const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5555';
const HISTORY_LIMIT = 1000;             //  Most messages one HISTORY returns
const MAX_HOPS = 5;                     //  moved replies followed per request
const DEAD_MS = 10000;                  //  A broker that did not answer is skipped this long
const MULTI_REQUEST_TIMEOUT_MS = 5000;  //  Default requestTimeoutMs with several brokers
const ROUTES_KEPT = 10000;              //  Contexts and call ids whose broker is kept
const WATCH_IDLE_MS = 10000;            //  A watch silent this long PINGs its broker
const UNWATCH_MS = 2000;                //  How long leaving a watch waits for UNWATCH's OK

//  Commands about a context (their first argument), and about a call
const CONTEXT_COMMANDS = new Set (['CALL', 'PLAN', 'APPEND', 'RESOLVE', 'VIEW', 'HISTORY',
                                   'WATCH', 'DELETE']);
const CALL_COMMANDS = new Set (['STATUS', 'CANCEL']);

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

let s_iterate_warned = false;           //  iterateHistory () warns once a process

//  map.set (key, value) as the newest entry, keeping at most ROUTES_KEPT
function s_remember (map, key, value) {
    map.delete (key);
    map.set (key, value);
    if (map.size > ROUTES_KEPT)
        map.delete (map.keys ().next ().value);
}

class Client {
    //  options: endpoints (an array of brokers sharing a store, or a
    //  comma-separated string), or endpoint (default $ACTD_ENDPOINT, else
    //  tcp://127.0.0.1:5555), or the endpoint string itself; curveServer
    //  and curveCert for CURVE (./curve.js); timeoutMs (30000): how long a
    //  request waits for its first reply (0: forever; DONE has no limit);
    //  requestTimeoutMs (5000 with several endpoints, 0 with one): a
    //  broker silent that long is skipped and the request sent to the next;
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
        this.statusPollMs = options.statusPollMs ?? 1000;
        if (!(this.requestTimeoutMs >= 0) || !(this.statusPollMs >= 0))
            throw new TypeError ('requestTimeoutMs and statusPollMs are numbers >= 0');
        this._curve = curveOptions (options);
        this._autoId = endpoints.length > 1;
        this._links = new Map ();       //  endpoint -> Link
        this._dead = new Map ();        //  endpoint -> skipped until (Date.now ())
        this._owners = new Map ();      //  context -> endpoint
        this._accepted = new Map ();    //  call id -> endpoint
        this._pending = new Map ();     //  request id -> request
        this._waits = new Map ();       //  request id + "\n" + call id -> wait
        this._watches = new Set ();     //  Open watch () states
        this._rescues = new Map ();     //  context -> calls followed with a watch
        this._counter = 0;
        this._scanTimer = null;
        this._scanMs = Math.max (10, Math.min (250,
            ...[this.requestTimeoutMs, this.statusPollMs].filter ((ms) => ms > 0)
                                                       .map ((ms) => ms / 4)));
        this.closed = false;
        for (const endpoint of endpoints)
            this._link (endpoint);
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
        //  With several brokers a request may be sent twice (a retry after
        //  a timeout): an _id makes actd run each call once
        if (this._autoId)
            body = withIds (body, plan);
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
        this._waits.set (request.id + '\n' + id, {
            request, callId: id, endpoint: request.endpoint, heard: Date.now (), rescue: null,
            promise, settle: (outcome) => this._done (request, id, outcome),
            fail: () => {}              //  DONE may still come, or a new watch
        });
        return promise;
    }

    //  ------------------------------------------------------------------
    //  Contexts

    //  APPEND; resolves with the message's _seq. options.key: an
    //  idempotency key (1-128 bytes): an APPEND again with the same key in
    //  the context appends nothing and resolves with the first one's _seq
    async append (context, message, options = {}) {
        const args = [context, s_json (message, 'the message')];
        if (options.key !== undefined)
            args.push (String (options.key));
        return this._request ('APPEND', args, {}, (request, reply) => s_parse (reply [0]).seq);
    }

    //  DELETE: cancels the context's calls not ended, removes it; resolves
    //  with {messages, cancelled}, rejects with NotFoundError
    async delete (context) {
        return this._request ('DELETE', [context], {}, (request, args) => s_parse (args [0]));
    }

    //  CONTEXTS: an async iterator over the stored contexts ({context,
    //  messages, last_seq, updated, pending}) whose id starts with
    //  options.prefix (default: all), in byte order, asking options.limit
    //  (default 100, at most 1000) of them a request
    async * contexts (options = {}) {
        const prefix = options.prefix ?? '';
        const limit = String (options.limit ?? 100);
        let after = '';
        do {
            const page = await this._request ('CONTEXTS', [prefix, after, limit], {},
                                              (request, args) => s_parse (args [0]));
            yield * page.contexts;
            after = page.next;
        } while (after !== undefined);
    }

    //  WATCH: an async iterator over the events of context (PROTOCOL.md
    //  1.1): {seq, message} from options.fromSeq on (default 1; 0: what is
    //  appended from now on), with options.calls also {call} (a STATUS
    //  object) at each change of state of its calls, and a last {deleted:
    //  true}. It resumes by itself from the message after the last it gave
    //  (UNWATCH of the old watch, WATCH anew): after a gap in seq, when the
    //  connection to the broker drops (a restart), and when the broker,
    //  silent for options.idleMs (10000), does not answer PING in as long.
    //  {call} events of the time between are lost. options.signal (an
    //  AbortSignal) ends it with the signal's reason. Leaving the loop
    //  sends UNWATCH.
    watch (context, options = {}) {
        return this._watch (context, options, null);
    }

    //  watch (), calling onOpen (request) after each WATCH request sent
    async * _watch (context, options, onOpen) {
        const idleMs = options.idleMs ?? WATCH_IDLE_MS;
        const signal = options.signal;
        let last = (options.fromSeq ?? 1) - 1;  //  -1: from now on, none given yet
        const watch = { items: [], wake: null, lost: false, request: null };
        const push = (item) => {
            watch.items.push (item);
            if (watch.wake)
                watch.wake ();
        };
        const open = () => {
            if (watch.request)
                this._unwatch (watch.request, UNWATCH_MS);
            watch.items = [];
            watch.lost = false;
            watch.request = this._track ('WATCH', [context, String (last + 1),
                                                   options.calls? 'all': 'messages'],
                                         { replied: true, stream: push });
            this._transmit (watch.request);
            if (onOpen)
                onOpen (watch.request);
        };
        if (signal)
            signal.addEventListener ('abort', () => watch.wake && watch.wake (), { once: true });
        this._watches.add (watch);
        try {
            open ();
            for (;;) {
                if (this.closed)
                    throw new ActdError ('closed', 'the client was closed');
                if (signal && signal.aborted)
                    throw signal.reason;
                if (watch.lost) {
                    open ();
                    continue;
                }
                const item = watch.items.shift ();
                if (!item) {
                    await this._idle (watch, idleMs);
                    continue;
                }
                if (item.verb === 'ERROR')
                    throw errorFromReply (String (item.args [0] ?? 'internal'),
                                          String (item.args [1] ?? ''));
                if (item.verb !== 'EVENT')
                    continue;
                const event = s_parse (item.args [0]);
                if (typeof event.seq === 'number' && last >= 0) {
                    if (event.seq <= last)
                        continue;       //  Given already
                    if (event.seq !== last + 1) {
                        watch.lost = true;      //  Events were dropped
                        continue;
                    }
                }
                if (typeof event.seq === 'number')
                    last = event.seq;
                yield event;
                if (event.deleted)
                    return;
            }
        }
        finally {
            this._watches.delete (watch);
            if (watch.request)
                await this._unwatch (watch.request, UNWATCH_MS);
        }
    }

    //  Wait for watch's next item; when none comes in idleMs, PING its
    //  broker, and when that gets no PONG in idleMs either, it is lost
    async _idle (watch, idleMs) {
        let timer;
        const woke = await new Promise ((resolve) => {
            watch.wake = () => resolve (true);
            timer = setTimeout (resolve, idleMs, false);
        });
        clearTimeout (timer);
        watch.wake = null;
        if (woke || this.closed)
            return;
        try {
            await this._request ('PING', [], { timeoutMs: idleMs, endpoint: watch.request.endpoint },
                                 () => undefined);
        }
        catch (error) {
            if (error.code === 'request_timeout' || error.code === 'disconnected')
                watch.lost = true;
        }
    }

    //  End the watch of request (best effort: resolves in any case)
    _unwatch (request, timeoutMs) {
        this._pending.delete (request.id);
        if (this.closed)
            return Promise.resolve ();
        return this._request ('UNWATCH', [request.id], { timeoutMs, endpoint: request.endpoint },
                              () => undefined).catch (() => {});
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

    //  Every stored message of context from options.fromSeq (default 1)
    //  on, oldest first, at most options.limit (default: all), read with
    //  HISTORY options.pageSize (default and most 1000) at a time: an async
    //  iterator. A plain method, so that history (context, fromSeq, limit),
    //  which resolved with one page before it was the iterator, throws at once.
    history (context, options = {}) {
        if (options === null || typeof options !== 'object')
            throw new TypeError ('history (context, {fromSeq, limit, pageSize}) is an async '
                                 + 'iterator over the messages');
        return this._history (context, options.fromSeq ?? 1, options.limit ?? Infinity,
                              options.pageSize ?? HISTORY_LIMIT);
    }

    async * _history (context, from, left, size) {
        while (left > 0) {
            const asked = Math.min (size, left);
            const page = await this._request ('HISTORY', [context, String (from), String (asked)],
                                              {}, (request, args) => s_parse (args [0]));
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
        return this._request ('STATUS', [String (callId)], {},
                              (request, args) => s_parse (args [0]));
    }

    //  CANCEL; resolves also for a call that has already ended
    async cancel (callId) {
        return this._request ('CANCEL', [String (callId)], {}, () => undefined);
    }

    //  The outcome of call callId once it has ended: its DONE when this
    //  client submitted it, else from a watch of its context (_rescue).
    //  options.timeout (ms; default none): rejects with code "timeout"
    async wait (callId, options = {}) {
        const id = String (callId);
        const mine = [...this._waits.values ()].find ((wait) => wait.callId === id);
        let follower = null;
        const ended = mine? mine.promise: this.status (id).then ((status) =>
            status.outcome ?? new Promise ((settle, fail) => {
                follower = { callId: id, settle, fail, rescue: null };
                this._rescue (status.context, follower);
            }));
        let timer = null;
        try {
            return await (options.timeout > 0? Promise.race ([ended, new Promise ((_, reject) => {
                timer = setTimeout (reject, options.timeout, new ActdError (
                    'timeout', `call ${id} did not end within ${options.timeout} ms`));
            })]): ended);
        }
        finally {
            clearTimeout (timer);
            if (follower && follower.rescue)
                follower.rescue.drop (follower);
        }
    }

    //  Follow follower ({callId, settle (outcome), fail (error), rescue})
    //  with the watch of context (with calls) that follows its calls, opened
    //  now when there is none: STATUS of each follower once at each
    //  (re)opening of the watch, and once as one joins an open watch; the
    //  watch ends when none is left
    _rescue (context, follower) {
        let rescue = this._rescues.get (context);
        if (!rescue) {
            const controller = new AbortController ();
            rescue = { followers: new Set (), endpoint: null, controller, drop: (gone) => {
                rescue.followers.delete (gone);
                gone.rescue = null;
                if (!rescue.followers.size && this._rescues.get (context) === rescue) {
                    this._rescues.delete (context);
                    controller.abort ();
                }
            } };
            this._rescues.set (context, rescue);
            this._rescueRun (context, rescue);
        }
        rescue.followers.add (follower);
        follower.rescue = rescue;
        if (rescue.endpoint)
            this._check (rescue, follower);
    }

    async _rescueRun (context, rescue) {
        let error = new NotFoundError (`the context ${context} was deleted`);
        const opened = (request) => {
            rescue.endpoint = request.endpoint;
            for (const follower of rescue.followers)
                this._check (rescue, follower);
        };
        try {
            const events = this._watch (context, { fromSeq: 0, calls: true,
                                                   signal: rescue.controller.signal }, opened);
            for await (const event of events)
                if (event.call && event.call.outcome)
                    this._ended (rescue, String (event.call.call_id), event.call.outcome);
        }
        catch (thrown) {
            error = thrown;
        }
        for (const follower of [...rescue.followers]) {
            rescue.drop (follower);
            follower.fail (error);
        }
    }

    //  STATUS of follower's call, sent after the watch's WATCH
    _check (rescue, follower) {
        this._request ('STATUS', [follower.callId], { endpoint: rescue.endpoint },
                       (request, args) => s_parse (args [0])).then ((status) => {
            if (status.outcome)
                this._ended (rescue, follower.callId, status.outcome);
        }, (error) => {
            if (error instanceof NotFoundError && follower.rescue === rescue) {
                rescue.drop (follower);
                follower.fail (error);
            }
        });
    }

    _ended (rescue, id, outcome) {
        for (const follower of [...rescue.followers])
            if (follower.callId === id) {
                rescue.drop (follower);
                follower.settle (outcome);
            }
    }

    //  STATS of the first broker that answers
    async stats () {
        return this._request ('STATS', [], {}, (request, args) => s_parse (args [0]));
    }

    //  TOOLS: the tools the workers declared (PROTOCOL.md section 2.1),
    //  { activity: { description?, params?, outputPath?, workers } }, all
    //  of them or only activity's
    async tools (activity, options = {}) {
        const args = activity === undefined || activity === null ? [] : [String (activity)];
        return this._request ('TOOLS', args, options, (request, reply) => s_parse (reply [0]));
    }

    //  PING (the first broker that answers); resolves with the round trip
    //  in milliseconds
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

    //  Close the sockets; requests still waiting reject with code "closed"
    close () {
        if (this.closed)
            return;
        this.closed = true;
        clearTimeout (this._scanTimer);
        this._scanTimer = null;
        const error = new ActdError ('closed', 'the client was closed');
        for (const request of this._pending.values ())
            this._settle (request, error);
        this._pending.clear ();
        this._waits.clear ();
        for (const link of this._links.values ())
            link.close ();
        for (const watch of this._watches)
            if (watch.wake)
                watch.wake ();
    }

    //  ------------------------------------------------------------------
    //  Where requests go

    //  The Link to endpoint, connected on first use
    _link (endpoint) {
        let link = this._links.get (endpoint);
        if (!link) {
            link = new Link (endpoint, {
                onMessage: (frames) => this._message (endpoint, frames),
                onDisconnect: (dropped) => dropped? this._disconnected (endpoint)
                                                  : this._lost (endpoint),
                curve: this._curve,
                heartbeat: true
            });
            this._links.set (endpoint, link);
        }
        return link;
    }

    _live (endpoint, now) {
        return (this._dead.get (endpoint) ?? 0) <= now;
    }

    //  The broker request goes to next: its context's (or call's) known
    //  broker if live, else the first live broker of the context's
    //  rendezvous order (the list's order for the others) not tried yet;
    //  never avoid when there is another
    _route (request, avoid) {
        const now = Date.now ();
        let known, order;
        if (request.context !== undefined) {
            known = this._owners.get (request.context);
            order = rendezvous (this.endpoints, request.context);
        }
        else {
            if (request.callId !== undefined)
                known = this._accepted.get (request.callId);
            order = this.endpoints;
        }
        if (known !== undefined && known !== avoid && this._live (known, now))
            return known;
        const fits = [
            (endpoint) => endpoint !== avoid && this._live (endpoint, now)
                       && !request.tried.has (endpoint),
            (endpoint) => endpoint !== avoid && this._live (endpoint, now),
            (endpoint) => endpoint !== avoid];
        for (const fit of fits) {
            const found = order.find (fit);
            if (found !== undefined)
                return found;
        }
        return order [0];
    }

    _transmit (request) {
        request.sentAt = Date.now ();
        request.tried.add (request.endpoint);
        const endpoint = request.endpoint;
        this._link (endpoint).send ([HEADER, request.command, request.id, ...request.args])
            .catch ((error) => {
                if (this.closed || this._pending.get (request.id) !== request
                ||  request.replied || request.endpoint !== endpoint)
                    return;
                this._pending.delete (request.id);
                clearTimeout (request.timer);
                request.reject (error);
            });
        this._arm ();
    }

    //  ERROR moved: send request again to the owner it names; false when
    //  it cannot (no owner named, or too many hops)
    _follow (request, args) {
        const owner = args [1]? args [1].toString (): '';
        if (!owner || request.hops >= MAX_HOPS)
            return false;
        if (!this.endpoints.includes (owner))
            this.endpoints.push (owner);
        if (request.context !== undefined)
            s_remember (this._owners, request.context, owner);
        if (request.callId !== undefined)
            s_remember (this._accepted, request.callId, owner);
        request.hops++;
        request.endpoint = owner;
        this._transmit (request);
        return true;
    }

    //  ------------------------------------------------------------------
    //  Requests and replies

    //  Send command; onReply (request, args, verb) turns the first reply
    //  (not ERROR) into the result. A request that expects DONE replies
    //  stays pending until the last one.
    _request (command, args, options, onReply) {
        if (this.closed)
            return Promise.reject (new ActdError ('closed', 'the client was closed'));
        return new Promise ((resolve, reject) => {
            const pinned = options.endpoint !== undefined;      //  Never another broker
            const request = this._track (command, args, { resolve, reject, onReply,
                                                          endpoint: options.endpoint, pinned });
            const timeout = options.timeoutMs ?? this.timeoutMs;
            if (timeout > 0)
                request.timer = setTimeout (() => {
                    this._pending.delete (request.id);
                    reject (new ActdError ('request_timeout',
                        `no reply to ${command} within ${timeout} ms`));
                }, timeout);
            this._transmit (request);
        });
    }

    //  A new request, pending, routed (not sent yet)
    _track (command, args, fields) {
        const id = (++this._counter).toString (36);
        const request = { id, command, args, replied: false, dones: new Map (), timer: null,
                          hops: 0, tried: new Set (), sentAt: 0, ...fields };
        if (CONTEXT_COMMANDS.has (command) && args.length)
            request.context = String (args [0]);
        else
        if (CALL_COMMANDS.has (command) && args.length)
            request.callId = String (args [0]);
        request.endpoint ??= this._route (request, null);
        this._pending.set (id, request);
        return request;
    }

    _message (endpoint, frames) {
        this._dead.delete (endpoint);   //  It answers
        if (frames.length < 3 || frames [0].toString () !== HEADER)
            return;
        const verb = frames [1].toString ();
        const request = this._pending.get (frames [2].toString ());
        if (!request)
            return;                     //  Timed out, or DONE nobody waits for
        const args = frames.slice (3);
        if (request.stream) {
            if (verb === 'ERROR' && args [0] && args [0].toString () === 'moved'
            &&  this._follow (request, args))
                return;
            if (verb !== 'ERROR')
                s_remember (this._owners, request.context, endpoint);
            request.stream ({ verb, args });
            return;
        }
        if (verb === 'DONE') {
            if (args.length >= 2)
                this._done (request, args [0].toString (), s_parse (args [1]));
            return;
        }
        if (request.replied)
            return;
        if (verb === 'ERROR' && args [0] && args [0].toString () === 'moved'
        &&  this._follow (request, args))
            return;
        if (verb !== 'ERROR') {
            if (request.context !== undefined)
                s_remember (this._owners, request.context, endpoint);
            if (request.callId !== undefined)
                s_remember (this._accepted, request.callId, endpoint);
        }
        request.replied = true;
        request.endpoint = endpoint;
        clearTimeout (request.timer);
        if (verb === 'ERROR') {
            this._pending.delete (request.id);
            request.reject (errorFromReply (args [0]? args [0].toString (): 'internal',
                                            args [1]? args [1].toString (): ''));
            return;
        }
        try {
            request.resolve (request.onReply (request, args, verb));
            if (verb === 'ACCEPTED' && args [0])
                this._acceptedBy (endpoint, args [0].toString ());
        }
        catch (error) {
            request.reject (new ActdError ('bad_reply', `${verb} reply to ${request.command}: `
                                           + error.message));
        }
        if (!request.dones.size)
            this._pending.delete (request.id);
    }

    //  STATUS and CANCEL of these calls start at the broker that accepted them
    _acceptedBy (endpoint, body) {
        let ids = [body];
        if (body.startsWith ('[')) {
            try {
                ids = JSON.parse (body).map (String);
            }
            catch (error) {
                return;
            }
        }
        for (const id of ids)
            s_remember (this._accepted, id, endpoint);
    }

    //  The DONE of call id for request
    _done (request, id, outcome) {
        const waiting = request.dones.get (id);
        if (!waiting)
            return;
        request.dones.delete (id);
        const wait = this._waits.get (request.id + '\n' + id);
        this._waits.delete (request.id + '\n' + id);
        if (wait && wait.rescue)
            wait.rescue.drop (wait);
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

    //  ------------------------------------------------------------------
    //  Timers: brokers that do not answer, and DONE that does not come

    //  Scan every _scanMs while requests are pending
    _arm () {
        if (!this._scanTimer && !this.closed && this._pending.size
        &&  (this.requestTimeoutMs > 0 || this.statusPollMs > 0))
            this._scanTimer = setTimeout (() => {
                this._scanTimer = null;
                this._scan ();
                this._arm ();
            }, this._scanMs);
    }

    _scan () {
        const now = Date.now ();
        for (const request of [...this._pending.values ()]) {
            if (request.replied)
                continue;
            if (this.requestTimeoutMs > 0 && now - request.sentAt >= this.requestTimeoutMs) {
                this._silent (request.endpoint, now);
                const next = this._route (request, request.endpoint);
                if (next !== request.endpoint) {
                    request.endpoint = next;
                    this._transmit (request);
                }
                else
                    request.sentAt = now;
            }
        }
        if (this.statusPollMs > 0)
            for (const wait of this._waits.values ())
                if (!wait.rescue && now - wait.heard >= this.statusPollMs) {
                    wait.heard = now;   //  Again after statusPollMs if its watch fails
                    this._rescue (wait.request.context, wait);
                }
    }

    //  The broker at endpoint did not answer in time: skip it for a while,
    //  and follow the calls it accepted at once
    _silent (endpoint, now) {
        this._dead.set (endpoint, now + DEAD_MS);
        this._lost (endpoint);
    }

    //  The connection to endpoint dropped (its socket's disconnect event:
    //  the broker restarted, or was silent past the ZMTP heartbeat
    //  timeout): the requests sent on it and not answered are lost with it
    //  (libzmq forgets what it wrote to the connection, and the broker's
    //  replies go to a routing id that is gone). With several brokers each
    //  goes to the next, as when a broker is silent; otherwise each rejects
    //  with code "disconnected", and its late reply is dropped. A DONE
    //  awaited on it is followed with a watch (_lost) when statusPollMs is
    //  set, else rejects the same way
    _disconnected (endpoint) {
        const lost = [...this._pending.values ()].filter ((request) =>
            request.endpoint === endpoint && !request.replied && !request.stream);
        if (lost.length && this.endpoints.length > 1)
            this._dead.set (endpoint, Date.now () + DEAD_MS);
        for (const request of lost) {
            const next = request.pinned || request.hops >= MAX_HOPS
                       ? endpoint: this._route (request, endpoint);
            if (next !== endpoint) {
                request.hops++;
                request.endpoint = next;
                this._transmit (request);
                continue;
            }
            this._pending.delete (request.id);
            this._settle (request, new ActdError ('disconnected', `the connection to ${endpoint} `
                + 'dropped before the reply: the request may or may not have been carried out'));
        }
        if (this.statusPollMs === 0)
            for (const [key, wait] of [...this._waits])
                if (wait.endpoint === endpoint) {
                    const request = wait.request;
                    const waiting = request.dones.get (wait.callId) ?? [];
                    request.dones.delete (wait.callId);
                    this._waits.delete (key);
                    if (!request.dones.size)
                        this._pending.delete (request.id);
                    const error = new ActdError ('disconnected', `the connection to ${endpoint} `
                        + 'dropped before the DONE of this accepted call: ask STATUS');
                    for (const deferred of waiting)
                        deferred.reject (error);
                }
        this._lost (endpoint);
    }

    //  The connection to endpoint dropped (or it does not answer): DONE
    //  replies awaited from it may never come
    _lost (endpoint) {
        for (const wait of this._waits.values ())
            if (wait.endpoint === endpoint)
                wait.heard = -Infinity;
        for (const watch of this._watches)
            if (watch.request && watch.request.endpoint === endpoint) {
                watch.lost = true;
                if (watch.wake)
                    watch.wake ();
            }
        this._arm ();
    }
}

module.exports = { Client, DEFAULT_ENDPOINT, MAX_HOPS };
