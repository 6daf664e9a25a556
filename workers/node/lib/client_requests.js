'use strict';
//  Client's requests (methods of Client, ./client.js): where each goes
//  among the brokers, sending it, matching the replies by request id,
//  and the timers and dropped connections that send it elsewhere.

const { Link, HANDSHAKE_FAILED, CLOSED_AT_HANDSHAKE } = require ('./link');
const { ActdError, errorFromReply } = require ('./errors');
const clock = require ('./clock');
const { rendezvous, withIds, withKey } = require ('./route');

const HEADER = 'ACTC01';
const MAX_HOPS = 5;                     //  moved replies followed per request
const DEAD_MS = 10000;                  //  A broker that did not answer is skipped this long
const ROUTES_KEPT = 10000;              //  Contexts and call ids whose broker is kept

//  Commands about a context (their first argument), and about a call
const CONTEXT_COMMANDS = new Set (['CALL', 'PLAN', 'APPEND', 'RESOLVE', 'VIEW', 'HISTORY',
                                   'WATCH', 'DELETE']);
const CALL_COMMANDS = new Set (['STATUS', 'CANCEL']);

//  The verb of each command's first reply besides ERROR (docs/protocol.md
//  section 2.2; WATCH's every reply), as the C library's s_request and the
//  Python one's parsers check it: a reply of another verb is not an answer
//  the command's parser can be trusted with (an OK taken for ACCEPTED is a
//  call followed for ever), so it rejects the request with bad_reply
const REPLIES = {
    CALL: 'ACCEPTED', PLAN: 'ACCEPTED', APPEND: 'OK', RESOLVE: 'VALUE', VIEW: 'VALUE',
    HISTORY: 'VALUE', STATUS: 'VALUE', CANCEL: 'OK', STATS: 'VALUE', PING: 'PONG',
    WATCH: 'EVENT', UNWATCH: 'OK', CONTEXTS: 'VALUE', DELETE: 'OK', TOOLS: 'VALUE'
};

//  The JSON of a reply's frame
function parseFrame (frame) {
    return JSON.parse (frame.toString ());
}

//  The bad_reply error of a reply of verb to request, or null when its
//  command may be answered so: ERROR, its verb, or any verb when it
//  expects none (request (): the frames as they come)
function s_unexpected (request, verb) {
    if (verb === 'ERROR' || !request.expect || verb === request.expect)
        return null;
    return new ActdError ('bad_reply', `${verb} reply to ${request.command}: `
                                       + `expected ${request.expect}`);
}

//  map.set (key, value) as the newest entry, keeping at most ROUTES_KEPT
function s_remember (map, key, value) {
    map.delete (key);
    map.set (key, value);
    if (map.size > ROUTES_KEPT)
        map.delete (map.keys ().next ().value);
}

//  A CALL's call (JSON text) given an _id (a random UUID) when it is an
//  object without one; otherwise as it was
function s_call_with_id (text) {
    let call;
    try {
        call = JSON.parse (String (text));
    }
    catch (error) {
        return text;
    }
    const given = withIds (call, false);
    return given === call? text: JSON.stringify (given);
}

class ClientRequests {
    //  ------------------------------------------------------------------
    //  Where requests go

    //  The Link to endpoint, connected on first use
    _link (endpoint) {
        let link = this._links.get (endpoint);
        if (!link) {
            link = new Link (endpoint, {
                onMessage: (frames) => this._message (endpoint, frames),
                onDisconnect: (dropped, disconnects) => dropped
                    ? this._disconnected (endpoint, disconnects): this._lost (endpoint),
                onAttempt: (why) => this._attempt (endpoint, why),
                curve: this._curve,
                heartbeat: true,
                readEventsFirst: true
            });
            this._links.set (endpoint, link);
        }
        return link;
    }

    //  What an attempt to connect to endpoint saw (Link's onAttempt): kept
    //  until a handshake succeeds, for _unreached. A failed handshake is
    //  not hidden by the retries that follow it
    _attempt (endpoint, why) {
        if (why === null) {
            this._everUp = true;
            this._failures.delete (endpoint);
        }
        else
        if (this._failures.get (endpoint) !== HANDSHAKE_FAILED
            && !(why === CLOSED_AT_HANDSHAKE && this._failures.has (endpoint)))
            this._failures.set (endpoint, why);
    }

    //  While no handshake with any broker has succeeded since the client
    //  was made, what the connection attempts saw, to add to a timeout's
    //  message (': no connection to ... was ever made (refused: ...)');
    //  else ''
    _unreached () {
        if (this._everUp)
            return '';
        let seen = this.endpoints.map ((endpoint) => this._failures.get (endpoint)
                                      ?? 'no answer: a firewall, or a host that is down?');
        if (seen.length > 1)
            seen = [this.endpoints.map ((endpoint, at) => `${endpoint}: ${seen [at]}`).join ('; ')];
        return `: no connection to ${this.endpoints.join (', ')} was ever made (${seen [0]})`;
    }

    _live (endpoint, now) {
        return (this._dead.get (endpoint) ?? 0) <= now;
    }

    //  The broker request goes to next: its context's (or call's) known
    //  broker if live, else the first live broker of the context's
    //  rendezvous order (the list's order for the others) not tried yet;
    //  never avoid when there is another
    _route (request, avoid) {
        const now = clock.now ();
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

    //  A broker was added: with several now known and requestTimeoutMs 0
    //  by default (one endpoint given), take the several-endpoints default
    //  (a moved reply may name an owner that died, its lease not yet out:
    //  the request goes back to another broker after that long, not after
    //  timeoutMs)
    _several () {
        if (this.requestTimeoutMs === 0 && this._severalTimeoutMs > 0
        &&  this.endpoints.length > 1) {
            this.requestTimeoutMs = this._severalTimeoutMs;
            this._timersChanged ();
        }
    }

    //  requestTimeoutMs or statusPollMs changed: scan often enough for
    //  them (a quarter of each, between 10 and 250 ms)
    _timersChanged () {
        this._scanMs = Math.max (10, Math.min (250,
            ...[this.requestTimeoutMs, this.statusPollMs].filter ((ms) => ms > 0)
                                                       .map ((ms) => ms / 4)));
    }

    _transmit (request) {
        request.sentAt = clock.now ();
        request.heard = false;
        request.tried.add (request.endpoint);
        const endpoint = request.endpoint;
        const link = this._link (endpoint);
        //  Which drops of its connection lose it (_disconnected): those
        //  counted after it is written (none before: Infinity). Link reads
        //  the socket's pending events first (readEventsFirst), so a drop
        //  that came before the write, while the process was busy, is
        //  counted before it and does not fail it. A write of an earlier
        //  transmission (the request since sent again) counts for nothing
        request.disconnects = Infinity;
        const transmission = request.transmission = {};
        link.send ([HEADER, request.command, request.id, ...request.args], (disconnects) => {
            if (request.transmission === transmission)
                request.disconnects = disconnects;
        })
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

    //  ERROR moved from the broker at endpoint: send request again to the
    //  owner it names, or, when it names none (a broker cut off from the
    //  database that knew no live one), to the next broker as _route
    //  picks it, never that one; false when it cannot (no other broker,
    //  too many hops, or an endpoint zeromq cannot connect to, such as the
    //  tcp://*:5555 of a broker bound to a wildcard address without
    //  server/advertise: the request then rejects with the moved error,
    //  as in the C library). A CALL without an _id gets a random one, an
    //  APPEND without a key a random key: the moved broker stored nothing,
    //  but the owner may store it and fall silent, and the request be sent
    //  on again
    _follow (request, args, endpoint) {
        let owner = args [1]? args [1].toString (): '';
        if (!owner && !request.pinned && request.hops < MAX_HOPS) {
            owner = this._route (request, endpoint);
            if (owner === endpoint)
                return false;
        }
        if (!owner || request.hops >= MAX_HOPS)
            return false;
        try {
            this._link (owner);
        }
        catch (error) {
            return false;
        }
        if (!this.endpoints.includes (owner)) {
            this.endpoints.push (owner);
            this._several ();
        }
        if (request.context !== undefined)
            s_remember (this._owners, request.context, owner);
        if (request.callId !== undefined)
            s_remember (this._accepted, request.callId, owner);
        if (request.command === 'CALL' && request.args.length > 1)
            request.args = [request.args [0], s_call_with_id (request.args [1]),
                            ...request.args.slice (2)];
        if (request.command === 'APPEND')
            request.args = withKey (request.args);
        request.hops++;
        request.endpoint = owner;
        this._transmit (request);
        return true;
    }

    //  ------------------------------------------------------------------
    //  Requests and replies

    //  Send command; onReply (request, args, verb) turns the first reply
    //  (not ERROR) into the result, once its verb is the command's
    //  (REPLIES; any with options.anyVerb). A request that expects DONE
    //  replies stays pending until the last one.
    _request (command, args, options, onReply) {
        if (this.closed)
            return Promise.reject (new ActdError ('closed', 'the client was closed'));
        return new Promise ((resolve, reject) => {
            const pinned = options.endpoint !== undefined;      //  Never another broker
            const request = this._track (command, args, {
                resolve, reject, onReply, endpoint: options.endpoint, pinned,
                expect: options.anyVerb? null: REPLIES [command] });
            const timeout = options.timeoutMs ?? this.timeoutMs;
            if (timeout > 0)
                request.timer = setTimeout (() => {
                    this._pending.delete (request.id);
                    reject (new ActdError ('request_timeout', `no reply to ${command} within `
                        + `${timeout} ms: the request may or may not have been carried out`
                        + this._unreached ()));
                    this._withdraw (request.endpoint);
                }, timeout);
            this._transmit (request);
        });
    }

    //  A new request, pending, routed (not sent yet); fields.expect: the
    //  verb of its first reply (default its command's)
    _track (command, args, fields) {
        const id = (++this._counter).toString (36);
        const request = { id, command, args, replied: false, dones: new Map (), timer: null,
                          hops: 0, tried: new Set (), sentAt: 0, expect: REPLIES [command],
                          ...fields };
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
        request.heard = true;
        if (request.stream) {
            if (verb === 'ERROR' && args [0] && args [0].toString () === 'moved'
            &&  this._follow (request, args, endpoint))
                return;
            //  A reply of another verb ends the watch (client_watch.js)
            const error = s_unexpected (request, verb);
            if (verb !== 'ERROR' && !error)
                s_remember (this._owners, request.context, endpoint);
            request.stream (error? { verb, args, error }: { verb, args });
            return;
        }
        //  DONE only after ACCEPTED: one before is a first reply of the
        //  wrong verb (s_unexpected), not a DONE to keep
        if (verb === 'DONE' && request.replied) {
            if (args.length >= 1)
                this._doneReply (request, args [0].toString (), args [1]);
            else                        //  Whose? Every DONE the request awaits fails
                for (const id of [...request.dones.keys ()])
                    this._done (request, id, null, new ActdError ('bad_reply',
                        `DONE reply to ${request.command} without a call id`));
            return;
        }
        if (request.replied)
            return;
        if (verb === 'ERROR' && args [0] && args [0].toString () === 'moved'
        &&  this._follow (request, args, endpoint))
            return;
        const unexpected = s_unexpected (request, verb);
        if (verb !== 'ERROR' && !unexpected) {
            if (request.context !== undefined)
                s_remember (this._owners, request.context, endpoint);
            if (request.callId !== undefined)
                s_remember (this._accepted, request.callId, endpoint);
        }
        request.replied = true;
        request.endpoint = endpoint;
        clearTimeout (request.timer);
        if (verb === 'ERROR' || unexpected) {
            this._pending.delete (request.id);
            request.reject (unexpected
                || errorFromReply (args [0]? args [0].toString (): 'internal',
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

    //  A DONE reply of call id for request: its outcome frame, when it
    //  reads as an object, resolves the call's DONE; else the call's DONE
    //  (only it) rejects with code bad_reply
    _doneReply (request, id, frame) {
        let outcome;
        try {
            if (frame === undefined)
                throw new Error ('no outcome');
            outcome = parseFrame (frame);
            if (outcome === null || typeof outcome !== 'object' || Array.isArray (outcome))
                throw new Error ('the outcome is not an object');
        }
        catch (error) {
            this._done (request, id, null, new ActdError ('bad_reply',
                `DONE reply to ${request.command} for call ${id}: ${error.message}`));
            return;
        }
        this._done (request, id, outcome);
    }

    //  The DONE of call id for request: resolves its promises with
    //  outcome, or rejects them with error
    _done (request, id, outcome, error) {
        const waiting = request.dones.get (id);
        if (!waiting)
            return;
        request.dones.delete (id);
        const wait = this._waits.get (request.id + '\n' + id);
        this._waits.delete (request.id + '\n' + id);
        if (wait && wait.rescue)
            wait.rescue.drop (wait);
        for (const deferred of waiting)
            if (error)
                deferred.reject (error);
            else
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
        const now = clock.now ();
        for (const request of [...this._pending.values ()])
            if (this._parked (request, now))
                this._silent (request.endpoint, now);
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

    //  True for a watch's WATCH that has waited requestTimeoutMs, nothing
    //  heard since, at a broker not connected while several are known: a
    //  dead owner that a moved reply named, its lease not yet out (a
    //  broker connected but idle sends nothing either: its watch is left
    //  to the idle PING). _silent then sends the watch to another broker
    _parked (request, now) {
        const link = this._links.get (request.endpoint);
        return Boolean (request.stream) && !request.heard && this.endpoints.length > 1
            && this.requestTimeoutMs > 0 && now - request.sentAt >= this.requestTimeoutMs
            && !(link && link.up);
    }

    //  A request to endpoint timed out (request_timeout). When the
    //  connection to it is not up (the broker is down, or not started
    //  yet), its message is still queued in the DEALER, and would be
    //  delivered, and carried out, once the broker is back: when nothing
    //  else is pending on that socket (no request, watch or DONE awaited),
    //  close it at once (linger 0), dropping the queue; the next request
    //  opens a new one. Best effort: a connection that comes up as it
    //  closes may still take the message, so request_timeout still means
    //  "may or may not have been carried out".
    _withdraw (endpoint) {
        const link = this._links.get (endpoint);
        if (this.closed || !link || link.up)
            return;
        for (const request of this._pending.values ())
            if (request.endpoint === endpoint)
                return;
        for (const wait of this._waits.values ())
            if (wait.endpoint === endpoint)
                return;
        this._links.delete (endpoint);
        link.close (0);
    }

    //  The broker at endpoint did not answer in time: skip it for a while,
    //  follow the calls it accepted at once, and watch again at another
    //  broker what was watched there (_lost)
    _silent (endpoint, now) {
        this._dead.set (endpoint, now + DEAD_MS);
        this._lost (endpoint);
    }

    //  The connection to endpoint dropped (its socket's disconnect event:
    //  the broker restarted, or was silent past the ZMTP heartbeat
    //  timeout), told once the replies that came on it are read (Link's
    //  onDisconnect): the requests sent before the drop (the link's
    //  disconnects count then below disconnects) and not answered are
    //  lost with it (libzmq forgets what it wrote to the connection, and
    //  the broker's replies go to a routing id that is gone); those sent
    //  since go out on the next connection. With several brokers each
    //  goes to the next, as when a broker is silent; otherwise each rejects
    //  with code "disconnected", and its late reply is dropped. A DONE
    //  awaited on it is followed with a watch (_lost) when statusPollMs is
    //  set, else rejects the same way. A watch on it watches again (_lost):
    //  with several brokers at another one, as this one is then skipped
    //  for DEAD_MS as when requests were lost with it
    _disconnected (endpoint, disconnects) {
        const lost = [...this._pending.values ()].filter ((request) =>
            request.endpoint === endpoint && !request.replied && !request.stream
            && request.disconnects < disconnects);
        const watched = [...this._watches].some ((watch) =>
            watch.request && watch.request.endpoint === endpoint);
        if ((lost.length || watched) && this.endpoints.length > 1)
            this._dead.set (endpoint, clock.now () + DEAD_MS);
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

module.exports = { ClientRequests, MAX_HOPS, parseFrame };
