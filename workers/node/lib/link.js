'use strict';
//  Link: one DEALER socket connected to one broker endpoint, with a send
//  queue and a receive loop.
//
//  zeromq.js allows one pending send per socket at a time; many callers
//  (pipelined requests, concurrent task results) send at once, so sends go
//  through a FIFO queue that one pump drains in order. Received messages are
//  handed to onMessage synchronously, so a slow handler never stalls the
//  socket.

const zmq = require ('zeromq');
const { ActdError } = require ('./errors');
const clock = require ('./clock');

const HEARTBEAT_MS = 1000;              //  ZMTP heartbeat interval (as in C)
const HEARTBEAT_TIMEOUT_MS = 10000;     //  A connection silent this long drops

//  What a connection attempt saw (onAttempt), as the C library says it
const REFUSED = 'refused: is actd listening there?';
const HANDSHAKE_FAILED = 'the handshake failed: are both ends on CURVE, '
                       + 'with the broker\'s public key?';
const CLOSED_AT_HANDSHAKE = 'the connection closed at the handshake';
const ATTEMPTS = { 'connect:retry': REFUSED, 'handshake:error:protocol': HANDSHAKE_FAILED,
                   'handshake:error:auth': HANDSHAKE_FAILED,
                   'handshake:error:other': HANDSHAKE_FAILED };

class Link {
    //  options: { onMessage (frames), onDisconnect (dropped), onConnect (),
    //  onRefused (), onAttempt (why: what an attempt to connect saw, one of
    //  REFUSED, HANDSHAKE_FAILED, CLOSED_AT_HANDSHAKE; null once a
    //  handshake succeeded), onError (error: onMessage threw, or the receive loop
    //  failed; default a process warning), linger, curve (socket options of
    //  ./curve.js), heartbeat (true: ZMTP heartbeats, HEARTBEAT_MS, and a
    //  connection silent HEARTBEAT_TIMEOUT_MS drops) }
    constructor (endpoint, options = {}) {
        this.endpoint = endpoint;
        this.closed = false;
        this.lastSent = 0;              //  clock.now () of the last send
        this._queue = [];               //  { frames, resolve, reject }
        this._pumping = false;
        this._onMessage = options.onMessage || (() => {});
        //  Heartbeats (clients): a broker that dies without closing the
        //  connection (its machine went away, or it is stopped) is noticed,
        //  the connection drops (onDisconnect) and the requests lost with
        //  it can be failed. Generous, as in the C library: a dropped
        //  connection loses the replies in flight on it, and a loaded
        //  broker may answer late
        const heartbeat = options.heartbeat
            ? { heartbeatInterval: HEARTBEAT_MS, heartbeatTimeout: Link.heartbeatTimeoutMs }: {};
        //  An IPv6 address needs IPv6 on, or libzmq connects to nothing
        //  (not for host names: localhost could resolve to ::1)
        const ipv6 = endpoint.startsWith ('tcp://[')? { ipv6: true }: {};
        this.socket = new zmq.Dealer ({ linger: options.linger ?? 500, ...heartbeat, ...ipv6,
                                        ...options.curve });
        //  Socket events tell a client its broker went away (so DONE
        //  replies may never come) and came back, and a worker that the
        //  broker refused its CURVE key (it would hear nothing else)
        //  onDisconnect (dropped): dropped is true when the connection had
        //  come up (its handshake succeeded), so requests written to it are
        //  lost; a handshake that fails (a plain client to a CURVE broker)
        //  also ends in a disconnect, with nothing written
        this.up = false;                //  Connected, handshake done
        this.socket.events.on ('handshake', () => { this.up = true; });
        if (options.onAttempt)
            this._attempts (options.onAttempt);
        const watched = { disconnect: options.onDisconnect, connect: options.onConnect,
                          'handshake:error:auth': options.onRefused };
        for (const [event, callback] of Object.entries (watched))
            if (callback)
                this.socket.events.on (event, () => {
                    const dropped = this.up;
                    if (event === 'disconnect')
                        this.up = false;
                    if (!this.closed)
                        callback (dropped);
                });
        try {
            this.socket.connect (endpoint);
        }
        catch (error) {
            //  An endpoint zeromq cannot connect to (tcp://*:5555, a bad
            //  address): the socket (and its event observer) would keep
            //  the process alive, and zeromq's error does not name it
            this.closed = true;
            this.socket.close ();
            throw new TypeError (`cannot connect to ${endpoint}: ${error.message}`,
                                 { cause: error });
        }
        //  A bug in onMessage, or a receive that fails, is reported to
        //  onError (default: a process warning), never thrown: it would be
        //  an unhandled rejection, which ends the process
        this._onError = options.onError || ((error) => process.emitWarning (error));
        this._receive ();
    }

    //  Tell onAttempt what each connection attempt saw (registered before
    //  onDisconnect's listener, so a disconnect is seen while up still
    //  says whether the handshake had succeeded)
    _attempts (onAttempt) {
        const tell = (why) => {
            if (!this.closed)
                onAttempt (why);
        };
        for (const [event, why] of Object.entries (ATTEMPTS))
            this.socket.events.on (event, () => tell (why));
        this.socket.events.on ('handshake', () => tell (null));
        this.socket.events.on ('disconnect', () => {
            if (!this.up)
                tell (CLOSED_AT_HANDSHAKE);
        });
    }

    //  Queue a multipart message; resolves once zeromq has taken it
    send (frames) {
        if (this.closed)
            return Promise.reject (new ActdError ('closed', 'the connection is closed'));
        return new Promise ((resolve, reject) => {
            this._queue.push ({ frames, resolve, reject });
            this._pump ();
        });
    }

    async _pump () {
        if (this._pumping)
            return;
        this._pumping = true;
        while (this._queue.length && !this.closed) {
            const item = this._queue [0];
            try {
                this.lastSent = clock.now ();
                await this.socket.send (item.frames);
                item.resolve ();
            }
            catch (error) {
                item.reject (this.closed
                    ? new ActdError ('closed', 'the connection is closed')
                    : error);
            }
            this._queue.shift ();
        }
        this._pumping = false;
    }

    //  Hand each message to onMessage; a message it throws on is dropped
    //  (reported) and the loop goes on. Never rejects.
    async _receive () {
        try {
            for await (const frames of this.socket) {
                try {
                    this._onMessage (frames);
                }
                catch (error) {
                    this._report (error);
                }
            }
        }
        catch (error) {
            //  Closing the socket ends the loop; anything else is a bug we
            //  cannot recover from on this socket
            if (!this.closed)
                this._report (error);
        }
    }

    _report (error) {
        try {
            this._onError (error);
        }
        catch (problem) {
            //  An onError that throws: nowhere else to go
        }
    }

    //  linger (ms, default the socket's): how long messages not yet sent
    //  may still go out (0: drop them at once)
    close (linger) {
        if (this.closed)
            return;
        this.closed = true;
        for (const item of this._queue.splice (this._pumping? 1: 0))
            item.reject (new ActdError ('closed', 'the connection is closed'));
        if (linger !== undefined)
            this.socket.linger = linger;
        this.socket.close ();
    }
}

//  The heartbeat timeout of the links made from now on (ms): a property,
//  not the constant, so that a test of dropped connections (drop.test.js)
//  need not wait 10 s for each drop
Link.heartbeatTimeoutMs = HEARTBEAT_TIMEOUT_MS;

module.exports = { Link, HEARTBEAT_MS, HEARTBEAT_TIMEOUT_MS, REFUSED, HANDSHAKE_FAILED,
                   CLOSED_AT_HANDSHAKE };
