//  Typed use of the whole public API: `tsc --noEmit -p test/types` must
//  accept it (the @ts-expect-error lines must be errors, so the types are
//  not any).

import {
    Worker, Client, branch, Branch, ActivityError, ActdError, NotFoundError, DEFAULTS,
    Task, Outcome, Status, Stats, StoredMessage, ViewEntry, Submitted, SubmittedPlan, Json,
    Call, Reply, WatchEvent, ContextInfo, Deleted, Tool, ToolDeclaration, JsonSchema
} from 'actd';

interface WeatherParams { city: string }
interface Forecast { city: string; sky: 'sunny' | 'rainy' }

async function worker (): Promise<void> {
    const worker = new Worker ({ endpoint: DEFAULTS.workerEndpoint, capacity: 4, name: 'typed',
                                 heartbeatMs: DEFAULTS.heartbeatMs, liveness: DEFAULTS.liveness,
                                 maxMessageBytes: 1 << 20, graceMs: 10000 });
    const limit: number = worker.maxMessageBytes + worker.graceMs;
    void limit;
    // @ts-expect-error graceMs is a number of ms
    new Worker ({ graceMs: '5s' });
    worker
        .activity ('upper', async ({ text }: { text: string }) => text.toUpperCase ())
        .activity<WeatherParams, Forecast> ('weather', async ({ city }, task: Task) => {
            const meta: { context: string; callId: string; attempt: number; deadlineMs: number;
                          instance: string | undefined; branches: number; discard: boolean;
                          trace: string | undefined } = task;
            void meta;
            const signal: AbortSignal = task.signal;
            if (signal.aborted || task.cancelled)
                throw new ActivityError ('cancelled', { code: 'cancelled', retryable: false });
            await task.progress ({ looking: city });
            const picked: Branch<Forecast> = city.length % 2 === 0
                ? branch (0, { city, sky: 'sunny' }) : branch (1, { city, sky: 'rainy' });
            return picked;
        })
        .activity ('echo', (params: Json) => params);
    worker.on ('ready', ({ connections, endpoint }) => {
        const n: number = connections;
        const e: string = endpoint;
        void n; void e;
    });
    worker.on ('disconnect', (reason, endpoint) => {
        const s: string = reason + endpoint;
        void s;
    });
    worker.on ('task', (task) => { const id: string = task.id + task.endpoint; void id; });
    const several = new Worker ({ endpoints: ['tcp://a:5556', 'tcp://b:5556'], capacity: 2 });
    const brokers: string[] = several.endpoints;
    const first: string = several.endpoint;
    void brokers; void first;
    new Worker ({ endpoints: 'tcp://a:5556,tcp://b:5556', curveServer: 'K'.repeat (40),
                  curveCert: 'w1.key_secret' });
    // @ts-expect-error endpoints is a string or an array of strings
    new Worker ({ endpoints: [5556] });
    // @ts-expect-error curveCert is a file name
    new Worker ({ curveServer: 'K'.repeat (40), curveCert: { publicKey: 'p', secretKey: 's' } });
    const names: string[] = worker.activities;
    const running: number = worker.running;
    void names; void running;
    // @ts-expect-error a handler takes (params, task)
    worker.activity ('bad', 42);
    // @ts-expect-error the retryable option is a boolean
    new ActivityError ('x', { retryable: 'yes' });
    // @ts-expect-error no such event
    worker.on ('nonsense', () => {});
    const run: Promise<void> = worker.run ();
    const stopping: Promise<void> = worker.stop ();
    await worker.stop ({ graceMs: 0 });
    await stopping;
    await run;
}

async function client (): Promise<void> {
    const client = new Client ({ endpoint: DEFAULTS.clientEndpoint, timeoutMs: 10000,
                                 statusPollMs: 500 });
    const alsoClient = new Client ('tcp://127.0.0.1:5555');
    new Client ({ endpoints: 'tcp://127.0.0.1:5555', curveServer: 'K'.repeat (40),
                  curveCert: 'alice.key_secret' }).close ();
    alsoClient.close ();
    const multi = new Client ({ endpoints: ['tcp://a:5555', 'tcp://b:5555'],
                                requestTimeoutMs: 2000, statusPollMs: 1000 });
    const retry: number = multi.requestTimeoutMs;
    void retry;
    multi.close ();
    // @ts-expect-error history takes options, not (fromSeq, limit)
    client.history ('ctx', 1, 100);
    // @ts-expect-error requestTimeoutMs is a number
    new Client ({ endpoints: ['tcp://a:5555'], requestTimeoutMs: '5s' });
    const call: Call = { _tool: 'upper', _outputPath: '†state.x', text: 'hi' };
    const outcome: Outcome = await client.call ('ctx', { _tool: 'upper', _outputPath: '†s.x' });
    const status: string = outcome.status;
    const code: string | undefined = outcome.error?.code;
    const id: string = await client.call ('ctx', call, { wait: false });
    const either: Outcome | string = await client.call ('ctx', call, { wait: true, timeoutMs: 5 });
    const submitted: Submitted = await client.submit ('ctx', call);
    const done: Outcome | undefined = submitted.done ? await submitted.done : undefined;
    const planned: (Outcome | string)[] = await client.plan ('ctx', [call, { _tool: 'echo' }]);
    const ids: string[] = await client.plan ('ctx', [call], { wait: false });
    const plan: SubmittedPlan = await client.submitPlan ('ctx', [call]);
    const seq: number = await client.append ('ctx', { type: 'data', kind: 'user', data: { a: 1 } });
    const value = await client.resolve<{ a: number }> ('ctx', '†user', 'instance');
    const a: number = value.a;
    const view: ViewEntry[] = await client.view ('ctx');
    const text: string = await client.view ('ctx', 'text');
    for await (const message of client.history ('ctx', { fromSeq: 1, limit: 100, pageSize: 10 })) {
        const stored: StoredMessage = message;
        const s: number = stored._seq;
        void s;
    }
    const keyed: number = await client.append ('ctx', { type: 'data', kind: 'k' }, { key: 'k1' });
    for await (const event of client.watch ('ctx', { fromSeq: 0, calls: true, idleMs: 1000,
                                                     signal: AbortSignal.timeout (10) })) {
        const any: WatchEvent = event;
        if (event.seq !== undefined) {
            const message: StoredMessage = event.message;
            void message;
        }
        else if (event.call)
            void event.call.state;
        else {
            const deleted: true = event.deleted;
            void deleted;
        }
        void any;
    }
    for await (const entry of client.contexts ({ prefix: 'run-', limit: 10 })) {
        const info: ContextInfo = entry;
        const last: number = info.last_seq;
        void last;
    }
    const removed: Deleted = await client.delete ('ctx');
    const waited: Outcome = await client.wait (id, { timeout: 1000 });
    // @ts-expect-error key is a string
    await client.append ('ctx', { type: 'data' }, { key: 1 });
    const st: Status = await client.status (id);
    const progress: Json | undefined = st.progress;
    const nothing: void = await client.cancel (1);
    const stats: Stats = await client.stats ();
    const workers: number = stats.activities.upper.workers;
    const ms: number = await client.ping ({ timeoutMs: 100 });
    const reply: Reply = await client.request ('PING', []);
    const verb: string = reply.verb;
    const endpoints: string[] = client.endpoints;
    try {
        await client.resolve ('ctx', '†absent');
    }
    catch (error) {
        if (error instanceof NotFoundError) {
            const nf: 'not_found' = error.code;
            void nf;
        }
        else if (error instanceof ActdError) {
            const c: string = error.code;
            void c;
        }
    }
    // @ts-expect-error a call needs _tool
    await client.call ('ctx', { text: 'no tool' });
    // @ts-expect-error wait is a boolean
    await client.call ('ctx', call, { wait: 'yes' });
    // @ts-expect-error the text view is a string, not entries
    const wrong: ViewEntry[] = await client.view ('ctx', 'text');
    const closed: Promise<void> = client.close ();
    await closed;
    void [status, code, either, done, planned, ids, plan, seq, a, view, text, progress,
          nothing, workers, ms, verb, endpoints, wrong, keyed, removed, waited];
}

void worker;
void client;

async function tools (): Promise<void> {
    const worker = new Worker ({ name: 'typed-tools' });
    worker.activity<{ city: string }, string> ('weather', ({ city }) => city, {
        description: 'The weather', params: { type: 'object', required: ['city'] },
        outputPath: '†state.weather' });
    worker.activity ('note', { outputPath: { pattern: '^†notes\\.' } }, () => 'x');
    const declared: ToolDeclaration | undefined = worker.tools.weather;
    void declared;
    // @ts-expect-error outputPath is a path or { const } / { pattern }
    worker.activity ('bad', () => 1, { outputPath: { regex: 'x' } });
    const client = new Client ();
    const listed: { [activity: string]: Tool } = await client.tools ();
    const workers: number = listed.weather.workers;
    const schema: JsonSchema | undefined = (await client.tools ('weather')).weather.params;
    void workers; void schema;
}
void tools;
