'use strict';
//  Link: one DEALER socket connected to one broker endpoint, with a send
//  queue and a receive loop.
//
//  zeromq.js allows one pending send per socket at a time; many callers
//  (pipelined requests, concurrent task results) send at once, so sends go
//  through a FIFO queue that one pump drains in order. Received messages are
//  handed to onMessage synchronously, so a slow handler never stalls the
//  socket.
//
//  A dropped connection is told (onDisconnect) only once the messages that
//  came on it are handed to onMessage (_afterRead): libzmq keeps them
//  readable after it reports the drop, and they answer requests that the
//  drop would otherwise fail.
//
//  With readEventsFirst (clients), the socket's pending events are read
//  before a message is written (_pump), so that a drop that came before
//  the write is counted (disconnects) before it, as the C library reads
//  its connection events before each send.

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

//  Run run once the event loop has polled for I/O again: an immediate
//  queued from an immediate runs on the loop's next turn, after its poll
function s_after_poll (run) {
    setImmediate (() => setImmediate (run));
}

class Link {
    //  options: { onMessage (frames), onDisconnect (dropped, disconnects:
    //  this.disconnects as the drop made it; told once the messages that
    //  came before it are handed to onMessage), onConnect (),
    //  onRefused (), onAttempt (why: what an attempt to connect saw, one of
    //  REFUSED, HANDSHAKE_FAILED, CLOSED_AT_HANDSHAKE; null once a
    //  handshake succeeded), onError (error: onMessage threw, or the receive loop
    //  failed; default a process warning), linger, curve (socket options of
    //  ./curve.js), heartbeat (true: ZMTP heartbeats, HEARTBEAT_MS, and a
    //  connection silent HEARTBEAT_TIMEOUT_MS drops), readEventsFirst
    //  (true: the event loop polls once before the pump writes, see _pump) }
    constructor (endpoint, options = {}) {
        this.endpoint = endpoint;
        this.closed = false;
        this.lastSent = 0;              //  clock.now () of the last send
        this._queue = [];               //  { frames, resolve, reject }
        this._pumping = false;
        this._sending = false;          //  The queue's first message is in socket.send
        this._readEventsFirst = Boolean (options.readEventsFirst);
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
        //  Disconnects so far: a message sent while it was n goes out on
        //  the connection that the n+1th ends, or on a later one
        this.disconnects = 0;
        this._told = [];                //  { tell, due }: onDisconnect calls (_afterRead)
        this._left = 0;                 //  Messages read before the due ones are told anyway
        this._idle = true;              //  The receive loop has read all that was readable
        this.socket.events.on ('handshake', () => { this.up = true; });
        if (options.onAttempt)
            this._attempts (options.onAttempt);
        this.socket.events.on ('disconnect', () => {
            const dropped = this.up;
            const disconnects = ++this.disconnects;
            this.up = false;
            if (options.onDisconnect)
                this._afterRead (() => options.onDisconnect (dropped, disconnects));
        });
        const watched = { connect: options.onConnect, 'handshake:error:auth': options.onRefused };
        for (const [event, callback] of Object.entries (watched))
            if (callback)
                this.socket.events.on (event, () => {
                    if (!this.closed)
                        callback ();
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

    //  Queue a multipart message; resolves once zeromq has taken it.
    //  writing (disconnects), if given, is called just before the message
    //  is handed to zeromq, with this.disconnects then: the drops it may
    //  be lost with are the ones that come after
    send (frames, writing) {
        if (this.closed)
            return Promise.reject (new ActdError ('closed', 'the connection is closed'));
        return new Promise ((resolve, reject) => {
            this._queue.push ({ frames, writing, resolve, reject });
            this._pump ();
        });
    }

    //  Write the queue out, in order. With readEventsFirst, a pump that
    //  starts (nothing was being written) first lets the event loop poll
    //  once: the socket's events that came meanwhile (a drop, while the
    //  process was busy) are read, and counted (disconnects), before the
    //  messages are written. zeromq.js cannot read them synchronously.
    //  Otherwise a drop that came before the write, read after it, would
    //  fail a request that went out on the next connection (and was
    //  carried out). Once per pump, not per message: a pipelined burst
    //  queues behind one poll; the writes that follow it, while the pump
    //  runs, are no later than the events they follow, or, waiting for
    //  the socket to take them, poll as they wait
    async _pump () {
        if (this._pumping)
            return;
        this._pumping = true;
        if (this._readEventsFirst)
            await new Promise ((resolve) => s_after_poll (resolve));
        while (this._queue.length && !this.closed) {
            const item = this._queue [0];
            try {
                this.lastSent = clock.now ();
                this._sending = true;
                if (item.writing)
                    item.writing (this.disconnects);
                await this.socket.send (item.frames);
                item.resolve ();
            }
            catch (error) {
                item.reject (this.closed
                    ? new ActdError ('closed', 'the connection is closed')
                    : error);
            }
            this._sending = false;
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
                this._read ();
            }
        }
        catch (error) {
            //  Closing the socket ends the loop; anything else is a bug we
            //  cannot recover from on this socket
            if (!this.closed)
                this._report (error);
        }
        //  Nothing more will be read: what waits for it is told now
        this._idle = true;
        this._tell ();
    }

    //  After each message: whether the loop has read all that is readable
    //  (asked here, just before its next receive, which asks again: the
    //  socket's wake-up it may take is not lost), and the drops due then
    //  (_afterRead)
    _read () {
        this._idle = !this.socket.readable;
        if (this._told.length && (this._idle || --this._left <= 0))
            this._tell ();
    }

    //  Call tell (onDisconnect) once the messages readable when the
    //  connection dropped are handed to onMessage. libzmq keeps the
    //  replies that came on a connection readable after it reports the
    //  drop, but the socket's events and the receive loop are separate
    //  paths, taken in the order the event loop picks: a drop told first
    //  fails requests whose replies wait, and drops those as late.
    //  socket.readable cannot tell from here: asking takes the socket's
    //  wake-up (its ZMQ_FD is edge-triggered), and a receive waiting for
    //  it would wait on with messages readable. The wake-up of the replies
    //  came before the drop's event: once the event loop has polled again
    //  the receive loop has had them, and tell is due; told then if the
    //  loop has read all that is readable (_idle), else when it has
    //  (_read). A new connection's messages may keep the socket readable:
    //  no more than its receive high-water mark of messages wait unread at
    //  the drop, so after that many tell goes anyway
    _afterRead (tell) {
        const told = { tell, due: false };
        this._told.push (told);
        s_after_poll (() => {
            if (this.closed)
                return;
            told.due = true;
            this._left = this.socket.receiveHighWaterMark || Infinity;
            if (this._idle)
                this._tell ();
        });
    }

    //  Tell the due drops, in the order they came (none once closed)
    _tell () {
        while (this._told.length && this._told [0].due) {
            const { tell } = this._told.shift ();
            try {
                if (!this.closed)
                    tell ();
            }
            catch (error) {
                this._report (error);
            }
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
        for (const item of this._queue.splice (this._sending? 1: 0))
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
