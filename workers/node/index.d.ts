//  Type declarations of the actd package (hand-written; the package itself
//  is plain CommonJS JavaScript).

import { EventEmitter } from 'events';

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Transport defaults of PROTOCOL.md section 5. */
export declare const DEFAULTS: {
    readonly clientEndpoint: string;
    readonly workerEndpoint: string;
    readonly heartbeatMs: number;
    readonly liveness: number;
};

//  ----------------------------------------------------------------------
//  Errors

/** The broker answered ERROR (PROTOCOL.md section 3), or the client gave up
 *  on a request: code "request_timeout" (no first reply within timeoutMs:
 *  the request may or may not have been carried out, and may still arrive
 *  later; repeat a CALL with the same _id, an APPEND with the same key),
 *  "closed" (the client was closed), "bad_reply" (a reply did not parse, or
 *  is not the shape the protocol gives it: only the request, or the call
 *  of a DONE, it answers rejects), "disconnected" (the connection to the
 *  broker dropped before the reply: the request may or may not have been
 *  carried out; also a DONE awaited on it when statusPollMs is 0).
 *  Code "moved" (the message is the owner's client endpoint) reaches the
 *  caller only after the client has followed 5 moved replies, or when it
 *  names an endpoint zeromq cannot connect to (tcp://*:5555). */
export declare class ActdError extends Error {
    constructor(code: string, message: string);
    readonly code: string;
}

/** ERROR not_found: an absent value, an unknown call or context. */
export declare class NotFoundError extends ActdError {
    constructor(message: string);
    readonly code: 'not_found';
}

export interface ActivityErrorOptions {
    /** The call's error code (default "activity_failed"). */
    code?: string;
    /** Whether the broker may run the call again (default true). */
    retryable?: boolean;
    /** Anything else is sent with the FAIL and kept in the error object. */
    [detail: string]: unknown;
}

/** Throw from a handler to answer FAIL with a code and details. Any other
 *  thrown value answers FAIL with code "activity_failed". */
export declare class ActivityError extends Error {
    constructor(message: string, options?: ActivityErrorOptions);
    readonly code: string;
    readonly retryable: boolean;
    readonly details: { [detail: string]: unknown };
    /** The FAIL body: {message, code, retryable, ...details}. */
    toJSON(): { message: string; code: string; retryable: boolean; [detail: string]: unknown };
}

//  ----------------------------------------------------------------------
//  Worker

/** A result that names the alternative of the output path it took. */
export declare class Branch<T = unknown> {
    constructor(index: number, value: T);
    readonly index: number;
    readonly value: T;
}

/** Return branch(n, value) from a handler to take alternative n. */
export declare function branch<T>(index: number, value: T): Branch<T>;

/** The meta of a TASK (PROTOCOL.md section 2). */
export interface TaskMeta {
    context: string;
    call_id: string;
    attempt: number;
    deadline_ms: number;
    instance?: string;
    branches: number;
    discard: boolean;
    /** The call's `_trace`: a W3C traceparent, only when it has one. */
    trace?: string;
    [key: string]: unknown;
}

/** One TASK, as its handler sees it. */
export declare class Task {
    private constructor();
    /** Task id, "<call_id>.<attempt>". */
    readonly id: string;
    /** The worker endpoint of the broker that sent the task (it is
     *  answered there). */
    readonly endpoint: string;
    readonly activity: string;
    readonly meta: TaskMeta;
    readonly context: string;
    readonly callId: string;
    readonly attempt: number;
    /** Milliseconds this attempt may run, counted from when it arrived. */
    readonly deadlineMs: number;
    /** Date.now() value when the attempt's time is up (a date, to show:
     *  time with remaining(), which a step of the wall clock does not move). */
    readonly deadline: number | undefined;
    readonly instance: string | undefined;
    /** The call's `_trace` (a W3C traceparent,
     *  "00-<trace id>-<parent id>-<flags>"), or undefined. */
    readonly trace: string | undefined;
    /** Alternatives in the call's output path (0: none). */
    readonly branches: number;
    /** A fire-and-forget call: the result is thrown away. */
    readonly discard: boolean;
    /** Aborted when the broker sends CANCEL (the call was cancelled or its
     *  _timeout passed), or the worker lost the task (reconnect, or a stop
     *  whose grace is over). */
    readonly signal: AbortSignal;
    /** signal.aborted */
    readonly cancelled: boolean;
    /** Milliseconds left before the attempt's deadline (negative once past),
     *  on a monotonic clock; undefined when the meta has no deadline_ms. */
    remaining(): number | undefined;
    /** Send PROGRESS (STATUS shows it); a no-op once cancelled or answered,
     *  and for details over the worker's maxMessageBytes as JSON (with a
     *  'warning'). */
    progress(details: unknown): Promise<void>;
}

/** A handler: resolve with the result (branch 0), with branch(n, value),
 *  or throw (ActivityError for a code of your own). */
export type Handler<P = any, R = unknown> =
    (params: P, task: Task) => R | Branch<R> | Promise<R | Branch<R>>;

/** CURVE, for a broker with security/server_key (both or neither). */
export interface CurveOptions {
    /** The broker's public key, 40 characters of Z85 (default
     *  $ACTD_SERVER_KEY). */
    curveServer?: string;
    /** This client's or worker's certificate file, as `actctl keygen`
     *  writes it (default $ACTD_CERT). */
    curveCert?: string;
}

export interface WorkerOptions extends CurveOptions {
    /** The worker endpoints of several brokers sharing a store (an array,
     *  or a comma-separated string): one socket, READY, heartbeats and
     *  reconnections each (default $ACTD_WORKER_ENDPOINT, else
     *  tcp://127.0.0.1:5556). */
    endpoints?: string | string[];
    /** The same as endpoints. */
    endpoint?: string | string[];
    /** Tasks the worker may hold at once, per broker: each broker is told
     *  this capacity in READY (default 1). An integer from 1 to 100000,
     *  else the constructor throws a TypeError. */
    capacity?: number;
    /** Name shown in STATS (default node-HOST-PID); up to 256 bytes, else
     *  the constructor throws a TypeError. */
    name?: string;
    /** The broker's heartbeat_ms (default 1000). */
    heartbeatMs?: number;
    /** The broker's liveness (default 3). */
    liveness?: number;
    /** actd's server/max_message_bytes (default 1048576, actd's default):
     *  set it to actd's when actd's is raised. A result over it (as JSON)
     *  is answered FAIL activity_failed, not retried (RESULT null for a
     *  discarded call), progress over it is not sent, a failure over it is
     *  cut: actd would fail them, or drop the worker's connection past 4
     *  times it. A positive integer, else the constructor throws a
     *  TypeError. */
    maxMessageBytes?: number;
    /** How long running handlers may go on, and answer, after stop()
     *  (default 5000 ms; 0 aborts them at once, Infinity waits for them
     *  all). A number >= 0, else the constructor throws a TypeError. */
    graceMs?: number;
}

export interface StopOptions {
    /** This stop's grace, instead of the worker's graceMs. While the worker
     *  stops already, it may end the grace sooner, never later. */
    graceMs?: number;
}

export interface WorkerEvents {
    /** READY was sent to the broker at endpoint (connections counts them, for
     *  all brokers: 1 per broker, then 1 more per reconnect). */
    ready: [info: { connections: number; endpoint: string }];
    /** The worker dropped its connection to the broker at endpoint and is
     *  reconnecting: at once, or, when the broker refused READY (its
     *  DISCONNECT came first on the connection), after a wait of 100 ms
     *  doubling at each refusal up to 5 s, which reason gives with the
     *  broker's ("the broker refused READY (...); connecting again in N ms"). */
    disconnect: [reason: string, endpoint: string];
    task: [task: Task];
    cancel: [task: Task];
    /** The handler settled (whether or not its answer could be sent). */
    done: [task: Task];
    /** The worker stopped: DISCONNECT sent, sockets closed. */
    stop: [];
    /** Something was dropped (a malformed message). Never fatal. */
    warning: [error: Error];
}

/** A JSON Schema (draft 2020-12), as actd validates it. */
export type JsonSchema = boolean | { [keyword: string]: Json };

/** How a call's _outputPath is given: prescribed (const) or constrained (pattern). */
export type OutputPathRule = { const: string } | { pattern: string };

/** An activity's tool, as a worker registers it (PROTOCOL.md section 2.1). */
export interface ToolOptions {
    description?: string;
    /** The call's parameters (without the `_` keys); actd refuses calls that do not match. */
    params?: JsonSchema;
    /** A string prescribes the output path (as { const }). */
    outputPath?: string | OutputPathRule;
}

/** An activity's tool as READY carries it. */
export interface ToolDeclaration {
    description?: string;
    params?: JsonSchema;
    outputPath?: OutputPathRule;
}

/** TOOLS' answer for one activity. */
export interface Tool extends ToolDeclaration {
    /** Connected workers serving it now. */
    workers: number;
}

export declare class Worker extends EventEmitter {
    constructor(options?: WorkerOptions | string);
    /** The first broker's endpoint. */
    readonly endpoint: string;
    /** Every broker's endpoint, in the order given. */
    readonly endpoints: string[];
    readonly capacity: number;
    readonly name: string;
    readonly heartbeatMs: number;
    readonly liveness: number;
    readonly maxMessageBytes: number;
    readonly graceMs: number;
    /** READY messages sent so far. */
    readonly connections: number;
    /** Registered activity names. */
    readonly activities: string[];
    /** Tasks running now on the current connections. */
    readonly running: number;
    /** Register a handler, and optionally its tool (declared in READY); before run().
     *  Throws a TypeError for a name that is not 1 to 256 bytes. */
    activity<P = any, R = unknown>(name: string, handler: Handler<P, R>, tool?: ToolOptions): this;
    activity<P = any, R = unknown>(name: string, tool: ToolOptions, handler: Handler<P, R>): this;
    /** What READY declares, by activity. */
    readonly tools: { [activity: string]: ToolDeclaration };
    /** Connect, send READY and serve until stop(). Rejects (a TypeError
     *  naming it) when zeromq cannot connect to an endpoint, before any
     *  READY, with no socket left open. */
    run(): Promise<void>;
    /** Stop gracefully: running handlers, and those of TASKs that come
     *  meanwhile, get graceMs to finish and answer (heartbeats go on);
     *  then those still running are aborted (their answers dropped),
     *  DISCONNECT goes to each broker and the sockets close. Resolves then,
     *  as run() does; at once when no task runs. A call while stopping
     *  returns the same promise. Rejects with a TypeError for a graceMs
     *  that is not a number >= 0. */
    stop(options?: StopOptions): Promise<void>;

    on<E extends keyof WorkerEvents>(event: E, listener: (...args: WorkerEvents[E]) => void): this;
    once<E extends keyof WorkerEvents>(event: E, listener: (...args: WorkerEvents[E]) => void): this;
    off<E extends keyof WorkerEvents>(event: E, listener: (...args: WorkerEvents[E]) => void): this;
    emit<E extends keyof WorkerEvents>(event: E, ...args: WorkerEvents[E]): boolean;
}

//  ----------------------------------------------------------------------
//  Client

/** A call (SEMANTICS.md section 7): _tool and parameters. */
export interface Call {
    _tool: string;
    _outputPath?: string;
    _outputMethod?: 'set' | 'merge' | 'assign' | 'push' | 'concat' | 'erase';
    _instance?: string;
    _id?: string;
    _timeout?: number;
    _retry?: { max_attempts?: number; initial_ms?: number; backoff?: number; max_ms?: number };
    [param: string]: unknown;
}

export type CallStatus = 'ok' | 'error' | 'timeout' | 'skipped' | 'cancelled';
export type CallState = 'waiting' | 'queued' | 'running' | CallStatus;

export interface CallError {
    code: string;
    message: string;
    [detail: string]: unknown;
}

/** DONE's outcome (PROTOCOL.md section 1). */
export interface Outcome {
    call_id: string;
    status: CallStatus;
    branch?: number;
    written: string[];
    seqs: number[];
    result?: Json;
    error?: CallError;
    attempts: number;
}

/** STATUS's value. */
export interface Status {
    call_id: string;
    context: string;
    state: CallState;
    attempts: number;
    /** The call's activity (its _tool) */
    tool?: string;
    /** The call's _outputPath as submitted; absent for fire-and-forget */
    output_path?: string;
    progress?: Json;
    waiting_on?: string[];
    outcome?: Outcome;
}

/** A message to APPEND (SEMANTICS.md section 1). */
export interface Message {
    type: string;
    kind?: string;
    _instance?: string;
    data?: Json;
    schema?: Json;
    description?: string;
    _outputMethod?: 'set' | 'merge' | 'assign' | 'push' | 'concat' | 'erase';
    [field: string]: unknown;
}

/** A message as stored, with _seq and _date. */
export interface StoredMessage extends Message {
    _seq: number;
    _date: string;
}

/** One entry of the merged view (SEMANTICS.md section 6). */
export interface ViewEntry {
    type: 'data';
    kind: string;
    _instance?: string;
    data: Json;
    description?: string;
    schema?: Json;
}

export interface Stats {
    uptime_ms: number;
    contexts: number;
    messages: number;
    /** Contexts deleted by retention (store/retain_ms). */
    deleted: number;
    calls: {
        accepted: number; ok: number; error: number; timeout: number; skipped: number;
        cancelled: number; running: number; queued: number; waiting: number;
    };
    activities: { [name: string]: { workers: number; queued: number; running: number; done: number } };
    workers: { name: string; activities: string[]; capacity: number; running: number; lang: string }[];
    /** Workers and activities not listed, so that the reply stays within
     *  the broker's max_reply_bytes (present only when some were left out). */
    workers_left_out?: number;
    activities_left_out?: number;
}

export interface ClientOptions extends CurveOptions {
    /** The broker's client endpoint, or those of several brokers sharing a
     *  store (an array, or a comma-separated string): each context's
     *  requests go to the broker that owns it (default $ACTD_ENDPOINT, else
     *  tcp://127.0.0.1:5555). */
    endpoints?: string | string[];
    /** The same as endpoints. */
    endpoint?: string | string[];
    /** How long a request waits for its first reply, in ms (default 30000;
     *  0: no limit); then it rejects with code "request_timeout": it may or
     *  may not have been carried out. DONE has no limit. */
    timeoutMs?: number;
    /** A broker that gives no reply within this many ms is skipped for a
     *  while and the request is sent to the next broker (default 5000 with
     *  several endpoints; with one, 0 (never) until a moved reply names a
     *  second broker, then 5000. 0 given explicitly stays 0). */
    requestTimeoutMs?: number;
    /** After how long without DONE (or at once when their broker's
     *  connection drops) calls are followed with a watch of their context,
     *  as wait() does, in ms (default 1000; 0: never). */
    statusPollMs?: number;
}

export interface HistoryOptions {
    /** The first _seq (default 1). */
    fromSeq?: number;
    /** At most this many messages, an integer >= 0 (default: all). */
    limit?: number;
    /** Messages read per HISTORY request, an integer from 1 to 1000
     *  (default 1000); history() throws a TypeError at once for another. */
    pageSize?: number;
}

export interface AppendOptions {
    /** An idempotency key (1-128 bytes): an APPEND again with it in the
     *  context appends nothing and resolves with the first one's _seq.
     *  Without one, a client that knows several brokers (or sends the
     *  APPEND on after a moved reply) gives it a random key, kept across
     *  its resends, so that a retry at another broker appends it once. */
    key?: string;
}

export interface WatchOptions {
    /** The first _seq (default 1; 0: what is appended from now on). */
    fromSeq?: number;
    /** Also each change of state of the context's calls (default false). */
    calls?: boolean;
    /** A watch silent this long PINGs its broker, and resumes when no PONG
     *  comes in as long (ms, default 10000). */
    idleMs?: number;
    /** Ends the watch, rejecting with the signal's reason. */
    signal?: AbortSignal;
}

/** A WATCH EVENT (PROTOCOL.md section 1.1). */
export type WatchEvent =
    | { seq: number; message: StoredMessage; call?: undefined; deleted?: undefined }
    | { call: Status; seq?: undefined; deleted?: undefined }
    | { deleted: true; seq?: undefined; call?: undefined };

export interface WaitOptions {
    /** Rejects with an ActdError of code "timeout" after this many ms, and
     *  no longer follows the call (default: no limit). */
    timeout?: number;
}

export interface ContextsOptions {
    /** Only contexts whose id starts with this (default: all). */
    prefix?: string;
    /** Contexts asked per CONTEXTS request, an integer from 1 to 1000
     *  (default 100); contexts() throws a TypeError at once for another. */
    limit?: number;
}

/** One entry of CONTEXTS. */
export interface ContextInfo {
    context: string;
    messages: number;
    last_seq: number;
    /** The _date of the last message. */
    updated: string;
    /** Calls not ended. */
    pending: number;
}

export interface Deleted {
    messages: number;
    cancelled: number;
}

export interface RequestOptions {
    /** This request's first-reply limit, instead of the client's. */
    timeoutMs?: number;
}

export interface CallOptions extends RequestOptions {
    /** Wait for DONE (default true; only calls with _outputPath have one, or
     *  calls to a tool that prescribes one: with wait, call() and plan() add
     *  the prescribed path, from TOOLS kept 2 s). */
    wait?: boolean;
}

export interface Submitted {
    callId: string;
    /** DONE's outcome; null for a call without _outputPath. */
    done: Promise<Outcome> | null;
}

export interface SubmittedPlan {
    callIds: string[];
    done: (Promise<Outcome> | null)[];
}

export interface Reply {
    verb: string;
    args: Buffer[];
}

export declare class Client {
    /** Throws a TypeError naming an endpoint zeromq cannot connect to. */
    constructor(options?: ClientOptions | string);
    /** The first endpoint given. */
    readonly endpoint: string;
    /** The brokers' endpoints: those given, then those moved replies named. */
    readonly endpoints: string[];
    readonly timeoutMs: number;
    /** The value in force: 5000 once a moved reply named a second broker,
     *  when it was 0 by default. */
    readonly requestTimeoutMs: number;
    readonly statusPollMs: number;
    readonly closed: boolean;

    /** CALL: the outcome when waiting and the call has _outputPath (its own, or
     *  the one its tool prescribes), else the call id. Waiting, it rejects
     *  with NotFoundError when STATUS does not know the call (or its context
     *  is deleted) before its DONE came. */
    call(context: string, call: Call & { _outputPath: string }, options?: CallOptions & { wait?: true }): Promise<Outcome>;
    call(context: string, call: Call, options: CallOptions & { wait: false }): Promise<string>;
    call(context: string, call: Call, options?: CallOptions): Promise<Outcome | string>;
    /** CALL, resolving at ACCEPTED. */
    submit(context: string, call: Call, options?: RequestOptions): Promise<Submitted>;
    /** PLAN: per call, its outcome when waiting and it has _outputPath (its own,
     *  or the one its tool prescribes), else its id. */
    plan(context: string, calls: Call[], options: CallOptions & { wait: false }): Promise<string[]>;
    plan(context: string, calls: Call[], options?: CallOptions): Promise<(Outcome | string)[]>;
    /** PLAN, resolving at ACCEPTED. */
    submitPlan(context: string, calls: Call[], options?: RequestOptions): Promise<SubmittedPlan>;

    /** APPEND: resolves with the message's _seq. */
    append(context: string, message: Message, options?: AppendOptions): Promise<number>;
    /** DELETE: cancels the calls not ended and removes the context;
     *  rejects with NotFoundError. */
    delete(context: string): Promise<Deleted>;
    /** CONTEXTS, every page, as the iterator is consumed. */
    contexts(options?: ContextsOptions): AsyncGenerator<ContextInfo, void, undefined>;
    /** WATCH: the context's events, resuming by itself (after a gap, a
     *  reconnect, a silent broker) without duplicate or gap; ends after
     *  {deleted: true}; leaving the loop sends UNWATCH. */
    watch(context: string, options?: WatchOptions): AsyncGenerator<WatchEvent, void, undefined>;
    /** RESOLVE: rejects with NotFoundError when the value is absent. */
    resolve<T = Json>(context: string, expression: string, instance?: string): Promise<T>;
    view(context: string, format?: 'json'): Promise<ViewEntry[]>;
    view(context: string, format: 'text'): Promise<string>;
    /** The context's messages from fromSeq on, at most limit, read with
     *  HISTORY pageSize at a time as the iterator is consumed. */
    history(context: string, options?: HistoryOptions): AsyncGenerator<StoredMessage, void, undefined>;
    /** @deprecated Use history(); warns once. */
    iterateHistory(context: string, options?: HistoryOptions): AsyncGenerator<StoredMessage, void, undefined>;

    status(callId: string | number): Promise<Status>;
    /** The call's outcome once it has ended: DONE when this client
     *  submitted it, else a watch of its context (never STATUS in a loop).
     *  Rejects with NotFoundError for a call that does not exist, or whose
     *  context is deleted. */
    wait(callId: string | number, options?: WaitOptions): Promise<Outcome>;
    /** CANCEL: resolves also for a call that has already ended. */
    cancel(callId: string | number): Promise<void>;
    stats(): Promise<Stats>;
    /** TOOLS: the declared tools, every activity or only one. */
    tools(activity?: string, options?: RequestOptions): Promise<{ [activity: string]: Tool }>;
    /** PING: the round trip in milliseconds. */
    ping(options?: RequestOptions): Promise<number>;
    /** Any command; ERROR rejects. A CALL or PLAN sent this way gets no DONE. */
    request(command: string, args?: (string | Buffer)[], options?: RequestOptions): Promise<Reply>;
    /** Close the client: waiting requests reject with code "closed" at
     *  once. Each watch still open is sent UNWATCH first, so that actd frees
     *  its slot of max_watches; the sockets close once every OK came, or
     *  after 200 ms (at once with no watch open). Resolves then; never
     *  rejects. */
    close(): Promise<void>;
}
