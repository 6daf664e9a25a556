'use strict';
//  Worker: serves activities to an actd broker, or to several brokers
//  sharing a store (PROTOCOL.md section 2).
//
//  A Worker holds one DEALER socket at a time per broker. To each it sends
//  READY with its activities, capacity, name and lang "node", runs each
//  TASK's handler concurrently (a broker never sends more than capacity at
//  once, so with several brokers up to capacity tasks per broker run at
//  once), and answers RESULT or FAIL on the socket the task came from when
//  the handler settles. Heartbeats run on a timer of the event loop, so
//  they keep going while handlers await long work (a handler that blocks
//  the event loop with CPU work stops them: move such work to a worker
//  thread).
//
//  When a broker sends DISCONNECT, or is silent for liveness heartbeat
//  intervals, the worker drops that socket, aborts the tasks it brought
//  (the broker has given them to someone else by then) and connects anew
//  with a new socket, so a new identity, and sends READY again. A
//  DISCONNECT that answers READY itself (nothing else came on that socket)
//  is the broker refusing this worker as it is: the worker then waits
//  before it connects again, RECONNECT_FIRST_MS doubling at each refusal
//  up to RECONNECT_LAST_MS, not READY again in a tight loop.
//
//  stop () is graceful, as the Python worker's: running handlers get
//  graceMs to end and answer (their tasks would fail worker_lost at the
//  broker, and run again elsewhere as new attempts), then the worker sends
//  DISCONNECT to each broker and closes.

const os = require ('os');
const { EventEmitter } = require ('events');
const { Link } = require ('./link');
const clock = require ('./clock');
const { ActivityError } = require ('./errors');
const { endpointList } = require ('./route');
const { curveOptions } = require ('./curve');
const { taskArgs, jsonText, wellFormed, resultJson, cutFailure, thrownMessage }
    = require ('./task_frames');

const HEADER = 'ACTW01';
const DEFAULT_ENDPOINT = 'tcp://127.0.0.1:5556';

//  What actd takes in READY (docs/protocol.md section 3.2): a worker
//  outside these bounds throws at construction or at activity (), rather
//  than being refused by the broker with DISCONNECT
const MAX_CAPACITY = 100000;
const MAX_NAME_BYTES = 256;
const MAX_ACTIVITY_BYTES = 256;

//  ms the worker waits before it connects again after a DISCONNECT that
//  answered READY itself: the first, doubled at each such refusal in a
//  row, up to the last. A connection on which the broker sends anything
//  else starts again from the first.
const RECONNECT_FIRST_MS = 100;
const RECONNECT_LAST_MS = 5000;

//  The default of the option graceMs: how long running handlers may go on
//  after stop () (the Python worker's grace, 5 s). The longest setTimeout
//  delay: a grace over it has no end (Infinity: wait for every handler).
//  How long the worker waits, when it stops, for its socket to take the
//  DISCONNECT it queued behind the last answers (the socket's linger).
const GRACE_MS = 5000;
const MAX_TIMER_MS = 2147483647;
const FAREWELL_MS = 500;

//  actd's default server/max_message_bytes, the default of the option
//  maxMessageBytes (set it to actd's when actd's is raised). A body over it
//  fails at actd: a RESULT fails its attempt, not retried; a FAIL is read
//  as {}, retried as activity_failed; a PROGRESS is ignored. And a frame
//  over 4 times it plus 64 KiB makes actd's libzmq (ZMQ_MAXMSGSIZE) drop
//  the worker's connection: every task on it fails worker_lost. So the
//  worker sends none: a FAIL over it is sent as its code, retryable and
//  first MAX_FAIL_MESSAGE bytes (./task_frames.js; at most half of it) of
//  its message; a RESULT over it as FAIL activity_failed (RESULT null when
//  the call discards it); a PROGRESS over it not at all.
const MAX_MESSAGE_BYTES = 1048576;

//  What a handler returns to name the alternative of the output path it
//  took: return branch (1, value)
class Branch {
    constructor (index, value) {
        if (!Number.isInteger (index) || index < 0)
            throw new TypeError ('a branch is an integer >= 0, not ' + String (index));
        this.index = index;
        this.value = value;
    }
}

function branch (index, value) {
    return new Branch (index, value);
}

//  The connection to one broker: its Link (a new one, with a new generation
//  number, at each reconnection) and the tasks it brought
class Connection {
    constructor (endpoint) {
        this.endpoint = endpoint;
        this.link = null;               //  Current Link, null when stopped
        this.generation = 0;            //  Of the current Link
        this.tasks = new Map ();        //  task id -> Task, of the current link
        this.lastHeard = 0;             //  clock.now () of the last message in
        this.welcomed = false;          //  The broker sent more than DISCONNECT on the link
        this.pause = 0;                 //  The last wait after a refused READY (0: none)
        this.pauseTimer = null;         //  Connects again when that wait is over
    }
}

//  One TASK as a handler sees it
class Task {
    constructor (worker, connection, generation, id, activity, meta) {
        this._worker = worker;
        this._connection = connection;
        this._generation = generation;
        this._controller = new AbortController ();
        this._answered = false;
        this._cancelledByBroker = false;
        this.id = id;                           //  Task id, "<call_id>.<attempt>"
        this.endpoint = connection.endpoint;    //  The broker it came from
        this.activity = activity;               //  Activity name
        this.meta = meta;                       //  TASK meta as sent
        this.context = String (meta.context ?? '');         //  Context id of the call
        this.callId = String (meta.call_id ?? '');          //  Call id (decimal string)
        this.attempt = meta.attempt ?? 1;                   //  1 for the first dispatch
        this.deadlineMs = meta.deadline_ms ?? undefined;    //  ms this attempt may run
        this._received = clock.now ();          //  clock.now () when it arrived
        //  The deadline as a date (a Date.now () value), to show; remaining ()
        //  is what to time with
        this.deadline = typeof meta.deadline_ms === 'number'
                      ? Date.now () + meta.deadline_ms: undefined;
        this.instance = meta.instance ?? undefined;         //  Instance scope, or undefined
        this.branches = meta.branches ?? 0;     //  Alternatives in the output path
        this.discard = Boolean (meta.discard);  //  Fire-and-forget: result dropped
        this.trace = typeof meta.trace === 'string'
                   ? meta.trace: undefined;     //  The call's _trace (W3C traceparent)
        this.signal = this._controller.signal;  //  Aborted on CANCEL or lost link
    }

    //  True once the broker cancelled the task (CANCEL: the call was
    //  cancelled or its _timeout passed), or the worker lost the task
    //  (reconnect, or a stop whose grace is over). The handler should give
    //  up soon: its answer is dropped by the broker, but it frees the
    //  worker's slot.
    get cancelled () {
        return this.signal.aborted;
    }

    //  Milliseconds left before this attempt's deadline (negative once
    //  past), on the monotonic clock: a step of the wall clock does not
    //  change it, as it changes deadline - Date.now (). Undefined when the
    //  meta has no deadline_ms.
    remaining () {
        return typeof this.deadlineMs === 'number'
            ? this._received + this.deadlineMs - clock.now (): undefined;
    }

    //  Send PROGRESS with details (any JSON value), each lone surrogate as
    //  '?' as a failure's (actd refused the PROGRESS and ignored it);
    //  STATUS shows the latest as "progress". Does nothing once the task is
    //  cancelled or answered, nor for details over maxMessageBytes as JSON
    //  (a warning says so: actd would ignore them, or drop the connection).
    progress (details) {
        if (this._answered || this.signal.aborted || !this._worker._holds (this))
            return Promise.resolve ();
        const body = wellFormed (jsonText (details));
        if (this._worker._oversized (this, 'progress', body, 'not sent'))
            return Promise.resolve ();
        return this._worker._send (this._connection, ['PROGRESS', this.id, body])
            .catch (() => {});
    }

    _abort (reason) {
        if (!this.signal.aborted)
            this._controller.abort (reason);
    }
}

//  The tool declaration of an activity from its options (null when none);
//  throws TypeError for a malformed one, at registration
function s_tool (tool) {
    if (tool === undefined || tool === null)
        return null;
    if (typeof tool !== 'object' || Array.isArray (tool))
        throw new TypeError ('a tool is an object { description?, params?, outputPath? }');
    const declared = {};
    for (const key of Object.keys (tool))
        if (!['description', 'params', 'outputPath'].includes (key))
            throw new TypeError (`a tool has no option "${key}"`);
    if (tool.description !== undefined) {
        if (typeof tool.description !== 'string')
            throw new TypeError ('a tool description is a string');
        declared.description = tool.description;
    }
    if (tool.params !== undefined) {
        if (typeof tool.params !== 'boolean'
            && (typeof tool.params !== 'object' || tool.params === null || Array.isArray (tool.params)))
            throw new TypeError ('a tool\'s params is a JSON Schema (an object)');
        declared.params = tool.params;
    }
    const path = tool.outputPath;
    if (typeof path === 'string')
        declared.outputPath = { const: path };
    else if (path !== undefined) {
        const keys = path && typeof path === 'object' ? Object.keys (path) : [];
        if (keys.length !== 1 || !['const', 'pattern'].includes (keys [0])
            || typeof path [keys [0]] !== 'string')
            throw new TypeError ('outputPath is a path, { const: path } or { pattern: regex }');
        declared.outputPath = { [keys [0]]: path [keys [0]] };
    }
    return Object.keys (declared).length ? declared : null;
}

//  True for a grace (graceMs): a number >= 0, Infinity included
function s_grace (graceMs) {
    return typeof graceMs === 'number' && graceMs >= 0;
}

//  Send DISCONNECT on link after what it has queued (the last answers of
//  a stop's drain: close () drops what is still queued), then close it;
//  resolves then, within FAREWELL_MS when the socket takes nothing (no
//  broker to take it)
function s_farewell (link) {
    let timer;
    const sent = link.send ([HEADER, 'DISCONNECT', 'worker stopping']).catch (() => {});
    const late = new Promise ((resolve) => { timer = setTimeout (resolve, FAREWELL_MS); });
    return Promise.race ([sent, late]).then (() => {
        clearTimeout (timer);
        link.close ();
    });
}

class Worker extends EventEmitter {
    //  options: endpoints (an array of brokers sharing a store, or a
    //  comma-separated string), or endpoint (default $ACTD_WORKER_ENDPOINT,
    //  else tcp://127.0.0.1:5556); curveServer and curveCert for CURVE
    //  (./curve.js); capacity (1, per broker), name, heartbeatMs (1000) and
    //  liveness (3): set these as the brokers' heartbeat_ms and liveness;
    //  maxMessageBytes (1048576): set it to actd's max_message_bytes when
    //  actd's is raised (see MAX_MESSAGE_BYTES); graceMs (5000): how long
    //  running handlers may go on after stop () (0: aborted at once).
    constructor (options = {}) {
        super ();
        if (typeof options === 'string')
            options = { endpoint: options };
        this.endpoints = endpointList (options,
                                       process.env.ACTD_WORKER_ENDPOINT || DEFAULT_ENDPOINT);
        this.endpoint = this.endpoints [0];
        this.capacity = options.capacity ?? 1;
        this.name = options.name ?? `node-${os.hostname ()}-${process.pid}`;
        this.heartbeatMs = options.heartbeatMs ?? 1000;
        this.liveness = options.liveness ?? 3;
        this.maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;
        this.graceMs = options.graceMs ?? GRACE_MS;
        if (!Number.isInteger (this.capacity) || this.capacity < 1 || this.capacity > MAX_CAPACITY)
            throw new TypeError (`capacity is an integer from 1 to ${MAX_CAPACITY}`);
        if (typeof this.name !== 'string' || Buffer.byteLength (this.name) > MAX_NAME_BYTES)
            throw new TypeError (`a worker's name is a string of up to ${MAX_NAME_BYTES} bytes`);
        if (!(this.heartbeatMs > 0) || !Number.isInteger (this.liveness) || this.liveness < 1)
            throw new TypeError ('heartbeatMs is > 0 and liveness an integer >= 1');
        if (!Number.isInteger (this.maxMessageBytes) || this.maxMessageBytes < 1)
            throw new TypeError ('maxMessageBytes (actd\'s max_message_bytes) is an integer >= 1');
        if (!s_grace (this.graceMs))
            throw new TypeError ('graceMs is a number >= 0');
        this._curve = curveOptions (options);
        this._handlers = new Map ();    //  activity name -> handler
        this._tools = new Map ();       //  activity name -> its tool (READY's tools)
        this._connections = this.endpoints.map ((endpoint) => new Connection (endpoint));
        this._generation = 0;           //  Counts links; a Task knows its own
        this._timer = null;
        this._running = false;
        this._done = null;              //  Resolves run ()
        this._stopping = null;          //  stop ()'s promise, until it resolves
        this._stopped = null;           //  Resolves it
        this._graceEnd = Infinity;      //  clock.now () when the stop's grace ends
        this._graceTimer = null;        //  Ends it then
        this.connections = 0;           //  READY messages sent so far
    }

    //  Register handler (params, task) => result for activity name. Return
    //  a value (RESULT, branch 0), branch (n, value), or throw (FAIL).
    //  tool (optional, before or after handler) declares the activity's
    //  tool in READY (PROTOCOL.md section 2.1): { description, params (a
    //  JSON Schema actd checks calls against), outputPath (a string
    //  prescribes it, { const } too; { pattern } constrains it) }.
    activity (name, handler, tool) {
        if (typeof handler === 'object' && handler !== null && typeof tool === 'function')
            [handler, tool] = [tool, handler];
        if (typeof name !== 'string' || !name.length || Buffer.byteLength (name) > MAX_ACTIVITY_BYTES)
            throw new TypeError (`an activity name is a string of 1 to ${MAX_ACTIVITY_BYTES} bytes`);
        if (typeof handler !== 'function')
            throw new TypeError ('a handler is a function (params, task)');
        if (this._running)
            throw new Error ('register activities before run ()');
        const declared = s_tool (tool);
        this._handlers.set (name, handler);
        if (declared)
            this._tools.set (name, declared);
        else
            this._tools.delete (name);
        return this;
    }

    //  What READY declares: { activity: { description?, params?, outputPath? } }
    get tools () {
        return Object.fromEntries (this._tools);
    }

    get activities () {
        return [...this._handlers.keys ()];
    }

    //  Tasks running now, on the current connections
    get running () {
        let count = 0;
        for (const connection of this._connections)
            count += connection.tasks.size;
        return count;
    }

    //  Connect and serve until stop (); resolves then. Rejects (a TypeError
    //  naming it) when zeromq cannot connect to an endpoint (tcp://*:5556),
    //  before any READY is sent, with no socket left open.
    run () {
        if (this._running || this._stopping)
            return Promise.reject (new Error ('the worker is already running'));
        if (!this._handlers.size)
            return Promise.reject (new Error ('register at least one activity before run ()'));
        this._running = true;
        try {
            for (const connection of this._connections)
                this._open (connection);
        }
        catch (error) {
            for (const connection of this._connections) {
                if (connection.link)
                    connection.link.close (0);
                connection.link = null;
                connection.generation = ++this._generation;
            }
            this._running = false;
            return Promise.reject (error);
        }
        const done = new Promise ((resolve) => { this._done = resolve; });
        for (const connection of this._connections)
            this._ready (connection);
        const tick = Math.max (1, Math.floor (this.heartbeatMs / 2));
        this._timer = setInterval (() => this._tick (), tick);
        return done;
    }

    //  Stop serving, gracefully: the handlers running, and those of TASKs
    //  the brokers send meanwhile (they do while they see a free slot,
    //  until DISCONNECT), get the grace (options.graceMs, else the
    //  worker's) to end and answer, heartbeats going on. Once none runs,
    //  or the grace is over (those still running are aborted, their
    //  answers dropped: the brokers run them again as new attempts), the
    //  worker sends DISCONNECT to each broker and closes; stop () and
    //  run () resolve then. A call while stopping returns the same
    //  promise; its graceMs may end the grace sooner, never later.
    stop (options) {
        const graceMs = options?.graceMs ?? this.graceMs;
        if (!s_grace (graceMs))
            return Promise.reject (new TypeError ('graceMs is a number >= 0'));
        if (!this._running)
            return this._stopping ?? Promise.resolve ();
        if (!this._stopping) {
            this._stopping = new Promise ((resolve) => { this._stopped = resolve; });
            this._graceEnd = Infinity;
            for (const connection of this._connections) {
                clearTimeout (connection.pauseTimer);   //  No READY: it would bring tasks
                connection.pauseTimer = null;
            }
        }
        this._endGrace (graceMs);
        this._drained ();
        return this._stopping;
    }

    //  The stop's grace ends graceMs from now, unless it ends sooner
    _endGrace (graceMs) {
        const end = clock.now () + graceMs;
        if (end >= this._graceEnd)
            return;
        this._graceEnd = end;
        clearTimeout (this._graceTimer);
        this._graceTimer = graceMs <= MAX_TIMER_MS
                         ? setTimeout (() => this._close (), graceMs) : null;
    }

    //  While stopping: close once no task runs, or the grace is over
    _drained () {
        if (this._stopping && this._running
            && (this.running === 0 || clock.now () >= this._graceEnd))
            this._close ();
    }

    //  The end of a stop: abort the tasks still running (their answers
    //  are dropped), DISCONNECT each broker (after the answers its socket
    //  has queued) and close; then run () and stop () resolve, and the
    //  'stop' event
    _close () {
        if (!this._running)
            return;
        this._running = false;
        clearInterval (this._timer);
        this._timer = null;
        clearTimeout (this._graceTimer);
        this._graceTimer = null;
        const links = [];
        for (const connection of this._connections) {
            clearTimeout (connection.pauseTimer);
            connection.pauseTimer = null;
            this._drop (connection, new ActivityError ('the worker is stopping',
                                                       { code: 'worker_stopped' }));
            if (connection.link)
                links.push (connection.link);
            connection.link = null;
            connection.generation = ++this._generation;
        }
        Promise.all (links.map (s_farewell)).then (() => {
            const stopped = this._stopped;
            this._stopping = this._stopped = null;
            this._done ();
            stopped ();
            this.emit ('stop');
        }).catch ((error) => this.emit ('warning', error));    //  A 'stop' listener threw
    }

    //  New socket to the connection's broker, READY
    _connect (connection) {
        this._open (connection);
        this._ready (connection);
    }

    //  New socket to the connection's broker (throws for an endpoint
    //  zeromq cannot connect to)
    _open (connection) {
        const generation = ++this._generation;
        connection.link = new Link (connection.endpoint, {
            onMessage: (frames) => this._message (connection, generation, frames),
            onError: (error) => this.emit ('warning', error),
            onRefused: () => this.emit ('warning', new Error (
                `the broker at ${connection.endpoint} refused this worker's CURVE key`)),
            curve: this._curve
        });
        connection.generation = generation;
    }

    //  READY on the connection's new socket
    _ready (connection) {
        connection.lastHeard = clock.now ();
        connection.welcomed = false;
        this.connections++;
        const ready = { activities: this.activities, capacity: this.capacity,
                        name: this.name, lang: 'node' };
        if (this._tools.size)
            ready.tools = this.tools;
        this._send (connection, ['READY', JSON.stringify (ready)]).catch (() => {});
        this.emit ('ready', { connections: this.connections, endpoint: connection.endpoint });
    }

    //  The broker sent DISCONNECT. On a connection it had kept (it sent
    //  something else first), connect again at once. Right after READY it
    //  refused this worker as it is (a capacity or a tool it does not
    //  take) and would refuse the same READY again: connect again after a
    //  wait that doubles at each refusal in a row, up to RECONNECT_LAST_MS,
    //  and say why in the 'disconnect' event each time.
    _disconnected (connection, reason) {
        if (connection.welcomed) {
            this._reconnect (connection, 'the broker sent DISCONNECT'
                                         + (reason !== undefined? ': ' + reason: ''));
            return;
        }
        connection.pause = Math.min (Math.max (connection.pause * 2, RECONNECT_FIRST_MS),
                                     RECONNECT_LAST_MS);
        this._reconnect (connection, `the broker refused READY (${reason || 'no reason given'});`
                                     + ` connecting again in ${connection.pause} ms`,
                         connection.pause);
    }

    //  Lost a broker: abort its tasks, new socket, READY again, after
    //  delay ms (0: at once). While stopping, no new socket: a READY
    //  would bring new tasks, and the stop may now be over.
    _reconnect (connection, reason, delay = 0) {
        this.emit ('disconnect', reason, connection.endpoint);
        if (!this._running)
            return;                     //  A 'disconnect' listener stopped the worker
        this._drop (connection, new ActivityError ('lost the broker: ' + reason,
                                                   { code: 'worker_lost' }));
        connection.link.close ();
        connection.link = null;
        connection.generation = ++this._generation;
        if (this._stopping)
            this._drained ();
        else
        if (delay)
            connection.pauseTimer = setTimeout (() => {
                connection.pauseTimer = null;
                if (this._running && !this._stopping)
                    this._connect (connection);
            }, delay);
        else
            this._connect (connection);
    }

    //  Abort every task of the connection's link; their answers will be dropped
    _drop (connection, reason) {
        for (const task of connection.tasks.values ())
            task._abort (reason);
        connection.tasks.clear ();
    }

    _holds (task) {
        const connection = task._connection;
        return this._running && task._generation === connection.generation
            && connection.tasks.get (task.id) === task;
    }

    _send (connection, frames) {
        if (!connection.link)
            return Promise.reject (new Error ('the worker is not running'));
        return connection.link.send ([HEADER, ...frames]);
    }

    //  Heartbeat timer: to each broker, send HEARTBEAT when nothing else
    //  went out for about one interval; reconnect to a broker silent for
    //  liveness intervals
    _tick () {
        if (!this._running)
            return;
        const now = clock.now ();
        for (const connection of this._connections) {
            const link = connection.link;
            if (!link)
                continue;               //  Pausing before a reconnect
            if (now - connection.lastHeard > this.heartbeatMs * this.liveness) {
                //  Tell a broker that is merely slow to let our tasks go
                link.send ([HEADER, 'DISCONNECT', 'broker silent']).catch (() => {});
                this._reconnect (connection, 'the broker was silent for '
                                 + (now - connection.lastHeard) + ' ms');
            }
            else
            if (now - link.lastSent >= this.heartbeatMs * 0.75)
                this._send (connection, ['HEARTBEAT']).catch (() => {});
        }
    }

    _message (connection, generation, frames) {
        if (generation !== connection.generation || !this._running)
            return;                     //  From a link we dropped
        connection.lastHeard = clock.now ();
        if (frames.length < 2 || frames [0].toString () !== HEADER) {
            this.emit ('warning', new Error ('dropped a message without the ACTW01 header'));
            return;
        }
        const command = frames [1].toString ();
        if (command !== 'DISCONNECT') {
            //  The broker kept this connection: a later refusal waits
            //  RECONNECT_FIRST_MS again
            connection.welcomed = true;
            connection.pause = 0;
        }
        if (command === 'TASK')
            this._task (connection, frames.slice (2));
        else
        if (command === 'CANCEL') {
            const task = frames.length > 2 && connection.tasks.get (frames [2].toString ());
            if (task) {
                task._cancelledByBroker = true;
                task._abort (new ActivityError ('the broker cancelled the task',
                                                { code: 'cancelled', retryable: false }));
                this.emit ('cancel', task);
            }
        }
        else
        if (command === 'DISCONNECT')
            this._disconnected (connection, frames.length > 2? frames [2].toString (): undefined);
        else
        if (command !== 'HEARTBEAT')
            this.emit ('warning', new Error ('dropped an unknown command ' + command));
    }

    //  TASK task-id, activity, params, meta: run the handler. One that does
    //  not read (taskArgs) is answered FAIL bad_task, not retried, as the
    //  Python worker answers it: dropped, it would hold its slot at the
    //  broker until this worker was declared dead. Without even a task id
    //  there is no one to answer. A TASK that comes while the worker stops
    //  runs too, within what is left of the grace: the broker sends tasks
    //  while it sees a free slot, until DISCONNECT, and one not answered
    //  then fails worker_lost, an attempt spent.
    _task (connection, args) {
        if (!args.length) {
            this.emit ('warning', new Error ('dropped a TASK of 0 frames'));
            return;
        }
        const id = args [0].toString ();
        let activity, params, meta;
        try {
            [activity, params, meta] = taskArgs (args);
        }
        catch (error) {
            this.emit ('warning', new Error (`task ${id}: ${error.message}: answered FAIL bad_task`));
            this._send (connection, ['FAIL', id, wellFormed (JSON.stringify ({
                code: 'bad_task', message: error.message, retryable: false }))]).catch (() => {});
            return;
        }
        const task = new Task (this, connection, connection.generation, id, activity, meta);
        connection.tasks.set (id, task);
        this.emit ('task', task);
        const handler = this._handlers.get (activity);
        Promise.resolve ()
            .then (() => {
                if (!handler)
                    throw new ActivityError ('this worker has no handler for ' + activity,
                                             { code: 'unknown_activity', retryable: true });
                return handler (params, task);
            })
            .then ((value) => this._answer (task, value),
                   (error) => this._fail (task, error))
            .catch ((error) => this.emit ('warning', error))    //  A 'done' listener threw
            .finally (() => this._drained ());
    }

    _answer (task, value) {
        if (!this._finish (task))
            return;
        let frames;
        try {
            frames = value instanceof Branch
                   ? ['RESULT', task.id, resultJson (value.value), String (value.index)]
                   : ['RESULT', task.id, resultJson (value)];
        }
        catch (error) {
            //  A result JSON cannot carry (a BigInt, a cycle, a lone
            //  surrogate): not retried, as actd does not retry a RESULT that
            //  is not JSON; another attempt would run the handler again to
            //  return the same
            frames = ['FAIL', task.id, wellFormed (JSON.stringify ({
                      code: 'activity_failed',
                      message: 'the result is not JSON: ' + thrownMessage (error),
                      retryable: false }))];
        }
        if (frames [0] === 'RESULT')
            frames = this._fitting (task, frames);
        this._send (task._connection, frames).catch (() => {});
    }

    //  RESULT frames, those of a body over maxMessageBytes answered as the
    //  worker answers them itself (MAX_MESSAGE_BYTES): RESULT null for a
    //  discarded call (actd throws the result away), else FAIL
    //  activity_failed, not retried (another attempt would return as much)
    _fitting (task, frames) {
        const bytes = this._oversized (task, 'result', frames [2], task.discard
                                       ? 'sent RESULT null (the call discards it)'
                                       : 'answered FAIL activity_failed');
        if (!bytes)
            return frames;
        if (task.discard)
            return ['RESULT', task.id, 'null', ...frames.slice (3)];
        const message = `the result is ${bytes} bytes, over max_message_bytes`
                      + ` (${this.maxMessageBytes})`;
        return ['FAIL', task.id, JSON.stringify ({ code: 'activity_failed', message,
                                                   retryable: false })];
    }

    //  The bytes of body, a task's result or progress, when over
    //  maxMessageBytes (a warning names the task, the sizes and what is
    //  done instead; its emitter is the worker); 0 when it fits
    _oversized (task, what, body, instead) {
        const bytes = Buffer.byteLength (body);
        if (bytes <= this.maxMessageBytes)
            return 0;
        this.emit ('warning', new Error (`task ${task.id}: the ${what} is ${bytes} bytes, over`
                                         + ` max_message_bytes (${this.maxMessageBytes}): ${instead}`));
        return bytes;
    }

    _fail (task, error) {
        if (!this._finish (task))
            return;
        let body;
        try {
            body = error instanceof ActivityError
                 ? JSON.stringify (error)
                 : JSON.stringify ({ message: thrownMessage (error), code: 'activity_failed' });
        }
        catch (problem) {
            //  details JSON cannot carry, or a code or retryable that throws
            body = undefined;
        }
        if (typeof body !== 'string') {
            let code = 'activity_failed', retryable;
            try {
                if (error instanceof ActivityError) {
                    code = String (error.code);
                    retryable = Boolean (error.retryable);
                }
            }
            catch (problem) {
                //  The defaults
            }
            body = JSON.stringify ({ message: thrownMessage (error), code, retryable });
        }
        body = wellFormed (body);
        if (Buffer.byteLength (body) > this.maxMessageBytes)
            body = cutFailure (body, this.maxMessageBytes);
        this._send (task._connection, ['FAIL', task.id, body]).catch (() => {});
    }

    //  Mark task answered; false when its answer must not be sent (the link
    //  it came on is gone: the broker no longer knows the task)
    _finish (task) {
        if (task._answered)
            return false;
        task._answered = true;
        const held = this._holds (task);
        if (held)
            task._connection.tasks.delete (task.id);
        this.emit ('done', task);
        return held;
    }
}

module.exports = { Worker, Task, Branch, branch, DEFAULT_ENDPOINT, MAX_CAPACITY, MAX_NAME_BYTES,
                   MAX_ACTIVITY_BYTES, MAX_MESSAGE_BYTES, RECONNECT_FIRST_MS, RECONNECT_LAST_MS };
