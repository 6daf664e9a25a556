'use strict';
//  Client's watches (methods of Client, ./client.js): watch () resuming
//  by itself, and the following of calls whose DONE may never come with a
//  watch of their context (wait (), and the rescue of a call whose DONE is
//  late or whose broker dropped).

const { ActdError, NotFoundError, errorFromReply } = require ('./errors');
const { parseFrame } = require ('./client_requests');

const WATCH_IDLE_MS = 10000;            //  A watch silent this long PINGs its broker
const UNWATCH_MS = 2000;                //  How long leaving a watch waits for UNWATCH's OK
const UNWATCH_CLOSE_MS = 200;           //  How long close () waits for the OK of its UNWATCHes

//  An EVENT's object; an EVENT that does not read as one ends the watch
//  with code bad_reply, as any reply the client cannot read
function s_event (frame) {
    let event;
    try {
        if (frame === undefined)
            throw new Error ('no event');
        event = parseFrame (frame);
        if (event === null || typeof event !== 'object' || Array.isArray (event))
            throw new Error ('the event is not an object');
    }
    catch (error) {
        throw new ActdError ('bad_reply', 'EVENT reply to WATCH: ' + error.message);
    }
    return event;
}

class ClientWatch {
    //  WATCH: an async iterator over the events of context (PROTOCOL.md
    //  1.1): {seq, message} from options.fromSeq on (default 1; 0: what is
    //  appended from now on), with options.calls also {call} (a STATUS
    //  object) at each change of state of its calls, and a last {deleted:
    //  true}. It resumes by itself from the message after the last it gave
    //  (UNWATCH of the old watch, WATCH anew): after a gap in seq, when the
    //  connection to the broker drops (a restart), and when the broker,
    //  silent for options.idleMs (10000), does not answer PING in as long.
    //  With several brokers it goes on at another at once when the
    //  connection drops, and when its WATCH waited requestTimeoutMs at a
    //  broker not connected (a dead owner a moved reply named).
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
        //  ended: the broker ended the WATCH now open (refused it, or its
        //  context was deleted): close () sends it no UNWATCH
        const watch = { items: [], wake: null, lost: false, request: null, ended: false };
        const push = (item) => {
            if (item.verb === 'EVENT') {
                try {
                    item.event = s_event (item.args [0]);
                }
                catch (error) {
                    item.error = error;
                }
            }
            if (item.verb === 'ERROR' || (item.event && item.event.deleted))
                watch.ended = true;
            watch.items.push (item);
            if (watch.wake)
                watch.wake ();
        };
        const open = () => {
            if (watch.request)
                this._unwatch (watch.request, UNWATCH_MS);
            watch.items = [];
            watch.lost = false;
            watch.ended = false;
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
                //  An EVENT that does not read, or a reply of another verb
                //  (bad_reply, from _message)
                if (item.error)
                    throw item.error;
                const event = item.event;
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

    //  close () of a client (closed already, its requests rejected): send
    //  UNWATCH for each of watches still open at the broker, not one it
    //  ended (docs/protocol.md section 2.6: actd learns that a socket
    //  closed only when it sends to it, so an open watch would hold its
    //  slot of max_watches until its context's next event). A promise that
    //  resolves once each is answered (or its connection dropped), or
    //  after UNWATCH_CLOSE_MS, whichever comes first; null when none was
    //  sent
    _unwatchAll (watches) {
        const sent = [];
        for (const watch of watches) {
            if (!watch.request || watch.ended)
                continue;
            this._pending.delete (watch.request.id);
            sent.push (new Promise ((resolve) => {
                const request = this._track ('UNWATCH', [watch.request.id], {
                    resolve, reject: resolve, onReply: () => undefined,
                    endpoint: watch.request.endpoint, pinned: true });
                this._transmit (request);
            }));
        }
        if (!sent.length)
            return null;
        let timer;
        return Promise.race ([Promise.all (sent), new Promise ((resolve) => {
            timer = setTimeout (resolve, UNWATCH_CLOSE_MS);
        })]).finally (() => clearTimeout (timer));
    }

    //  End the watch of request (best effort: resolves in any case)
    _unwatch (request, timeoutMs) {
        this._pending.delete (request.id);
        if (this.closed)
            return Promise.resolve ();
        return this._request ('UNWATCH', [request.id], { timeoutMs, endpoint: request.endpoint },
                              () => undefined).catch (() => {});
    }

    //  The outcome of call callId once it has ended: its DONE when this
    //  client submitted it, else from a watch of its context (_rescue).
    //  options.timeout (ms; default none): rejects with code "timeout"
    async wait (callId, options = {}) {
        const id = String (callId);
        const mine = [...this._waits.values ()].find ((wait) => wait.callId === id);
        let follower = null;
        let left = false;               //  wait () has returned (its timeout passed)
        const ended = mine? mine.promise: this.status (id).then ((status) => {
            if (status.outcome || left)
                return status.outcome;  //  STATUS answered after the timeout: follow nothing
            return new Promise ((settle, fail) => {
                follower = { callId: id, settle, fail, rescue: null };
                this._rescue (status.context, follower);
            });
        });
        let timer = null;
        try {
            return await (options.timeout > 0? Promise.race ([ended, new Promise ((_, reject) => {
                timer = setTimeout (reject, options.timeout, new ActdError (
                    'timeout', `call ${id} did not end within ${options.timeout} ms`
                    + this._unreached ()));
            })]): ended);
        }
        finally {
            left = true;
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
                       (request, args) => parseFrame (args [0])).then ((status) => {
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
}

module.exports = { ClientWatch };
