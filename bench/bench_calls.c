/*  =========================================================================
    bench_calls - pipelined durable calls per second against a real actd.

    The program starts actd itself (the actd beside it in bin/, or
    $ACTD_BIN) on free ports with its store in a temporary directory, and
    an echo worker of capacity 64 in a thread. One client sends N calls of
    about 200 bytes, each with an output path (a set at a distinct path
    †state.r.k<i>, or with --write push a push onto †state.log), spread
    over a few contexts, keeping up to W calls outstanding (sent, DONE not
    yet received).

    Store modes, each on its own actd: the in-memory store (the baseline),
    SQLite with synchronous NORMAL, and SQLite with synchronous FULL. For
    each it prints calls per second, the p50/p99 latency of a call from
    ACCEPTED to DONE and from send to DONE, the average commit batch
    (STATS "store": writes per commit over the run), actd's CPU time per
    call and how busy the machine's CPUs were (all processes: actd, this
    program's client and worker, a database server), then the ratios
    NORMAL/memory and FULL/memory.

    Fire-and-forget mode (no output path; the client gets ACCEPTED only):
    completion is seen by polling STATS calls.ok on the same connection;
    "outstanding" is sent and not yet counted ok.

    With --postgres URL the setups are instead 1, 2, 3 (--brokers) brokers
    sharing that PostgreSQL database: one client given every broker's
    endpoint (each context goes to its owner), one worker connected to
    every broker, CPU and commits summed over the brokers; the first count
    is the baseline of the ratios. Durable calls only (fire-and-forget
    completion is counted per broker). bench/brokers.py runs it on a
    private PostgreSQL server.

    With --tool the calls carry 10 parameters of mixed types, and each
    store mode also runs as "<mode>-tool": the same, with the echo worker
    declaring a typical params JSON Schema for them (PROTOCOL.md section
    2.1), so actd checks each call at submit and at dispatch. The ratio
    <mode>-tool/<mode> is the cost of validation.

    Nothing is asserted: the figures are for reading.

    bench_calls [--calls N] [--window W] [--capacity C] [--contexts K]
                [--size BYTES] [--write set|push] [--modes memory,normal,full]
                [--postgres URL [--brokers 1,2,3]]
                [--no-fire] [--repeat R] [--tool [--only-tool]] [--params10]
                [--help]
    ========================================================================= */

#include <getopt.h>
#include <time.h>
#include "bench_util.h"

typedef struct {
    size_t calls;               //  Calls per run
    size_t window;              //  Most calls outstanding
    size_t capacity;            //  The worker's capacity
    size_t contexts;            //  Contexts the calls are spread over
    size_t size;                //  Bytes per call, about
    bool push;                  //  Push onto †state.log, not set at distinct paths
    bool tool;                  //  10 parameters; setups with and without a schema
    bool params10;              //  10 parameters (--params10, or --tool)
    bool only_tool;             //  With --tool, the "-tool" setups only
} s_options_t;

//  With --tool: the 9 parameters besides "text" (and "i" among them), and
//  the schema the "-tool" setups declare for them
#define S_PARAMS "\"n\":1.5,\"flag\":true,\"kind\":\"alpha\",\"tags\":[\"x\",\"y\"]," \
                 "\"limit\":10,\"lang\":\"en\",\"opts\":{\"deep\":false},\"note\":null,"
static const char *s_schema =
    "{\"type\":\"object\",\"properties\":{"
    "\"i\":{\"type\":\"integer\",\"minimum\":0},\"n\":{\"type\":\"number\"},"
    "\"flag\":{\"type\":\"boolean\"},\"kind\":{\"enum\":[\"alpha\",\"beta\"]},"
    "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":8},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100},"
    "\"lang\":{\"type\":\"string\",\"pattern\":\"^[a-z]{2}$\"},"
    "\"opts\":{\"type\":\"object\",\"properties\":{\"deep\":{\"type\":\"boolean\"}}},"
    "\"note\":{\"type\":[\"string\",\"null\"]},"
    "\"text\":{\"type\":\"string\",\"maxLength\":100000},"
    "\"run\":{\"type\":\"string\"}},"
    "\"required\":[\"i\",\"kind\",\"text\"],\"additionalProperties\":false}";

typedef struct {
    double rate;                //  Calls per second
    double acc_done [2];        //  p50, p99 ACCEPTED -> DONE (ms)
    double send_done [2];       //  p50, p99 send -> DONE (ms)
    double send_acc [2];        //  p50, p99 send -> ACCEPTED (ms)
    double batch;               //  Writes per commit
    long long commits;          //  Commits over the run
    size_t errors;              //  ERROR replies
    size_t failed;              //  DONE with a status other than ok
    double seconds;             //  Wall time of the run
    double cpu_us;              //  actd's CPU time per call (us)
    double busy;                //  Of the machine's CPUs, the share in use (%)
} s_result_t;

#define S_MAX_BROKERS 8

//  One store setup: its brokers, the worker and the client on them
typedef struct {
    char name [32];             //  "memory", "full", "pg-x2", ... (in context ids)
    bench_actd_t *daemons [S_MAX_BROKERS];  //  Its brokers
    size_t ndaemons;            //  How many
    act_client_t *client;       //  The client, on every broker
    act_client_t *stats [S_MAX_BROKERS];    //  One STATS client per broker
    bench_worker_t *worker;     //  The echo worker, on every broker
    bool tool;                  //  Its echo declares s_schema
    s_result_t durable;         //  The best durable run
    s_result_t forget;          //  The best fire-and-forget run
} s_setup_t;

//  actd's CPU time over the setup's brokers, in ms
static double
s_cpu_ms (s_setup_t *setup)
{
    double total = 0;
    for (size_t i = 0; i < setup->ndaemons; i++)
        total += bench_cpu_ms (setup->daemons [i]->pid);
    return total;
}

//  Store writes and commits so far over the setup's brokers
static void
s_store_counts (s_setup_t *setup, long long *writes, long long *commits)
{
    *writes = *commits = 0;
    for (size_t i = 0; i < setup->ndaemons; i++) {
        json_t *stats = bench_stats (setup->stats [i]);
        *writes += bench_json_int (json_object_get (stats, "store"), "writes", NULL);
        *commits += bench_json_int (json_object_get (stats, "store"), "commits", NULL);
        json_decref (stats);
    }
}

//  The JSON of call index (about size bytes)
static char *
s_call_json (const s_options_t *options, size_t index, bool output, const char *tag)
{
    char head [256];
    if (!output)
        snprintf (head, sizeof head, "{\"_tool\":\"echo\",\"i\":%zu,\"run\":\"%s\",%s\"text\":\"",
                  index, tag, options->params10? S_PARAMS: "");
    else
    if (options->push)
        snprintf (head, sizeof head, "{\"_tool\":\"echo\",\"_outputPath\":\"" BENCH_DAGGER
                  "state.log\",\"_outputMethod\":\"push\",\"i\":%zu,\"run\":\"%s\",%s\"text\":\"",
                  index, tag, options->params10? S_PARAMS: "");
    else
        snprintf (head, sizeof head, "{\"_tool\":\"echo\",\"_outputPath\":\"" BENCH_DAGGER
                  "state.%s.k%zu\",\"i\":%zu,%s\"text\":\"", tag, index, index,
                  options->params10? S_PARAMS: "");
    size_t length = strlen (head);
    size_t pad = options->size > length + 2? options->size - length - 2: 8;
    char *json = malloc (length + pad + 3);
    memcpy (json, head, length);
    for (size_t i = 0; i < pad; i++)
        json [length + i] = (char) ('a' + (index + i) % 26);
    memcpy (json + length + pad, "\"}", 3);
    return json;
}

//  Remember that request number is for call index (SIZE_MAX: not a call)
static void
s_slot (size_t **slots, size_t *nslots, uint64_t first, uint64_t number, size_t index)
{
    size_t at = (size_t) (number - first);
    if (at >= *nslots) {
        size_t size = *nslots? *nslots * 2: 4096;
        while (size <= at)
            size *= 2;
        *slots = realloc (*slots, size * sizeof (size_t));
        for (size_t i = *nslots; i < size; i++)
            (*slots) [i] = SIZE_MAX;
        *nslots = size;
    }
    (*slots) [at] = index;
}

//  The state of one run of calls (s_run), shared by its helpers
typedef struct {
    s_setup_t *setup;           //  The setup it runs on
    const s_options_t *options; //  The options it runs with
    size_t calls;               //  Calls in the run
    bool output;                //  Durable calls (DONE awaited), else fire-and-forget
    const char *tag;            //  Names the run
    double *sent_at;            //  Per call: when it was sent
    double *accepted_at;        //  Per call: when ACCEPTED (or an ERROR) came
    double *done_at;            //  Per call: when it was seen ended
    bool *finished;             //  Per call: seen ended
    char **contexts;            //  The contexts the calls are spread over
    uint64_t first;             //  The request number of call 0
    size_t *slots;              //  Request numbers from first on: the call index each is for
    size_t nslots;              //  Slots allocated
    size_t sent;                //  Calls sent
    size_t done;                //  Calls seen ended
    size_t accepted;            //  Calls ACCEPTED (or refused)
    size_t marked;              //  Fire-and-forget calls seen ended
    long long ok_start;         //  STATS calls.ok before the run
    char stats_request [24];    //  The STATS in flight, if any
    double stats_sent;          //  When the last STATS was sent
    s_result_t result;          //  Its errors and failures so far
} s_state_t;

//  A run's state, its per-call tables zeroed and its contexts named
static void
s_state_init (s_state_t *self, s_setup_t *setup, const s_options_t *options, size_t calls,
              bool output, const char *tag)
{
    memset (self, 0, sizeof *self);
    self->setup = setup;
    self->options = options;
    self->calls = calls;
    self->output = output;
    self->tag = tag;
    self->sent_at = calloc (calls, sizeof (double));
    self->accepted_at = calloc (calls, sizeof (double));
    self->done_at = calloc (calls, sizeof (double));
    self->finished = calloc (calls, sizeof (bool));
    self->contexts = calloc (options->contexts, sizeof (char *));
    for (size_t c = 0; c < options->contexts; c++)
        //  Setups may share one database: their contexts are apart
        self->contexts [c] = zsys_sprintf ("bench-%s-%zu", setup->name, c);
}

//  Free what s_state_init and the run allocated
static void
s_state_free (s_state_t *self)
{
    for (size_t c = 0; c < self->options->contexts; c++)
        free (self->contexts [c]);
    free (self->contexts);
    free (self->sent_at);
    free (self->accepted_at);
    free (self->done_at);
    free (self->finished);
    free (self->slots);
}

//  Send calls until the window is full or every call is sent; exits when
//  a call cannot be sent
static void
s_fill_window (s_state_t *self)
{
    while (self->sent < self->calls && self->sent - self->done < self->options->window) {
        char request [24];
        char *json = s_call_json (self->options, self->sent, self->output, self->tag);
        self->sent_at [self->sent] = bench_now ();
        if (act_client_send (self->setup->client, request, "CALL",
                             self->contexts [self->sent % self->options->contexts], json, NULL)) {
            fprintf (stderr, "bench_calls: cannot send a call\n");
            exit (1);
        }
        free (json);
        if (self->sent == 0)
            self->first = bench_request_number (request);
        s_slot (&self->slots, &self->nslots, self->first, bench_request_number (request),
                self->sent);
        self->sent++;
    }
}

//  Fire-and-forget: keep one STATS in flight to see completions
static void
s_keep_stats (s_state_t *self)
{
    if (!self->output && !*self->stats_request && bench_now () - self->stats_sent > 0.001) {
        act_client_send (self->setup->client, self->stats_request, "STATS", NULL);
        s_slot (&self->slots, &self->nslots, self->first,
                bench_request_number (self->stats_request), SIZE_MAX);
        self->stats_sent = bench_now ();
    }
}

//  Take the answer to the STATS in flight: the fire-and-forget calls it
//  counts ok have ended by now
static void
s_on_stats (s_state_t *self, act_reply_t *reply, double now)
{
    char *text = act_reply_arg (reply, 0);
    json_t *stats = text? json_loads (text, 0, NULL): NULL;
    long long ok_seen = bench_json_int (stats, "calls", "ok");
    json_decref (stats);
    free (text);
    *self->stats_request = 0;
    //  Calls run in the order sent (one activity is first in,
    //  first out): the first ok_seen - ok_start calls not refused
    //  have ended by now
    size_t ended = (size_t) (ok_seen - self->ok_start);
    while (self->done < self->calls && self->marked < ended + self->result.errors) {
        if (!self->finished [self->marked]) {
            self->finished [self->marked] = true;
            self->done_at [self->marked] = now;
        }
        self->marked++;
        self->done = self->marked;
    }
}

//  Take the DONE of call index: ended, counted failed unless its status
//  is ok (the first failure is shown)
static void
s_on_done (s_state_t *self, act_reply_t *reply, size_t index, double now)
{
    self->done_at [index] = now;
    self->finished [index] = true;
    self->done++;
    char *text = act_reply_arg (reply, 1);
    json_t *outcome = text? json_loads (text, 0, NULL): NULL;
    const char *status = json_string_value (json_object_get (outcome, "status"));
    if (!status || !streq (status, "ok")) {
        if (self->result.failed++ == 0)
            fprintf (stderr, "bench_calls: call %zu ended: %s\n", index,
                     text? text: "(no outcome)");
    }
    json_decref (outcome);
    free (text);
}

//  Take the ERROR that refused call index: counted, and the call ended
//  (the first error is shown)
static void
s_on_error (s_state_t *self, act_reply_t *reply, size_t index, double now)
{
    char *code = act_reply_arg (reply, 0);
    char *message = act_reply_arg (reply, 1);
    if (self->result.errors++ == 0)
        fprintf (stderr, "bench_calls: call %zu refused: ERROR %s %s\n", index,
                 code? code: "", message? message: "");
    free (code);
    free (message);
    if (!self->finished [index]) {
        self->finished [index] = true;
        self->done_at [index] = now;
        self->accepted_at [index] = now;
        self->accepted++;
        if (self->output)
            self->done++;
    }
}

//  Take a reply to a call (replies to no call of this run are ignored)
static void
s_on_reply (s_state_t *self, act_reply_t *reply, double now)
{
    uint64_t number = bench_request_number (reply->request);
    size_t index = number >= self->first && number - self->first < self->nslots
                 ? self->slots [number - self->first]: SIZE_MAX;
    if (index >= self->calls)
        return;
    if (streq (reply->verb, "ACCEPTED")) {
        self->accepted_at [index] = now;
        self->accepted++;
    }
    else
    if (streq (reply->verb, "DONE") && !self->finished [index])
        s_on_done (self, reply, index, now);
    else
    if (streq (reply->verb, "ERROR"))
        s_on_error (self, reply, index, now);
}

//  A STATS still in flight would be taken for a later run's reply: wait
//  for it (10 s at most between replies)
static void
s_settle_stats (s_state_t *self)
{
    while (*self->stats_request) {
        act_reply_t *reply = act_client_recv (self->setup->client, 10000);
        if (!reply)
            break;
        if (streq (reply->request, self->stats_request))
            *self->stats_request = 0;
        act_reply_destroy (&reply);
    }
}

//  p50 and p99 in out (ms) of to - from over the calls that reached to
//  (and from, when check_from); values: room for a run's calls
static void
s_spread (double *values, const double *from, const double *to, bool check_from,
          size_t calls, double out [2])
{
    size_t n = 0;
    for (size_t i = 0; i < calls; i++)
        if ((!check_from || from [i] > 0) && to [i] > 0)
            values [n++] = (to [i] - from [i]) * 1000;
    out [0] = bench_percentile (values, n, 50);
    out [1] = bench_percentile (values, n, 99);
}

//  The run's latencies (ACCEPTED->DONE, send->DONE, send->ACCEPTED) into
//  result
static void
s_latencies (s_state_t *self, s_result_t *result)
{
    double *values = calloc (self->calls, sizeof (double));
    s_spread (values, self->accepted_at, self->done_at, true, self->calls, result->acc_done);
    s_spread (values, self->sent_at, self->done_at, false, self->calls, result->send_done);
    s_spread (values, self->sent_at, self->accepted_at, false, self->calls, result->send_acc);
    free (values);
}

//  One run of calls on client. output: durable calls (DONE awaited),
//  else fire-and-forget (completion from STATS). tag names the run, so
//  paths never collide between runs.
static s_result_t
s_run (s_setup_t *setup, const s_options_t *options, size_t calls, bool output,
       const char *tag)
{
    s_state_t run;
    s_state_init (&run, setup, options, calls, output, tag);
    long long writes_before, commits_before;
    s_store_counts (setup, &writes_before, &commits_before);
    json_t *before = bench_stats (setup->client);
    run.ok_start = bench_json_int (before, "calls", "ok");
    json_decref (before);
    double cpu_start = s_cpu_ms (setup);
    unsigned long long busy_start, total_start;
    bench_machine_jiffies (&busy_start, &total_start);
    double start = bench_now ();
    double last_reply = start;
    while (run.done < calls) {
        if (zsys_interrupted) {
            fprintf (stderr, "bench_calls: interrupted\n");
            exit (1);
        }
        s_fill_window (&run);
        s_keep_stats (&run);
        //  (Fire-and-forget with no STATS in flight: wake soon to send one)
        act_reply_t *reply = act_client_recv (setup->client,
                                              !output && !*run.stats_request? 1: 1000);
        double now = bench_now ();
        if (!reply) {
            if (now - last_reply > 60 && (output || *run.stats_request)) {
                fprintf (stderr, "bench_calls: no reply for 60 s (%zu sent, %zu accepted, "
                         "%zu done)\n", run.sent, run.accepted, run.done);
                exit (1);
            }
            continue;
        }
        last_reply = now;
        if (*run.stats_request && streq (reply->request, run.stats_request))
            s_on_stats (&run, reply, now);
        else
            s_on_reply (&run, reply, now);
        act_reply_destroy (&reply);
    }
    double end = bench_now ();
    s_result_t result = run.result;
    result.cpu_us = (s_cpu_ms (setup) - cpu_start) * 1000 / (double) calls;
    unsigned long long busy_end, total_end;
    bench_machine_jiffies (&busy_end, &total_end);
    if (total_end > total_start)
        result.busy = 100.0 * (double) (busy_end - busy_start)
                    / (double) (total_end - total_start);
    s_settle_stats (&run);
    result.seconds = end - start;
    result.rate = (double) calls / result.seconds;
    long long writes, commits;
    s_store_counts (setup, &writes, &commits);
    result.commits = commits - commits_before;
    writes -= writes_before;
    result.batch = result.commits? (double) writes / (double) result.commits: 0;
    s_latencies (&run, &result);
    s_state_free (&run);
    return result;
}

static void
s_print (const char *label, const s_result_t *r, bool output)
{
    char acc [2][16] = { "-", "-" };
    if (output)
        for (int i = 0; i < 2; i++)
            snprintf (acc [i], sizeof acc [i], "%.2f", r->acc_done [i]);
    printf ("%-16s %8.0f %8s %8s %9.2f %9.2f %8.2f %8.2f %8.1f %7lld %7.1f %5.0f%% %6zu\n",
            label, r->rate, acc [0], acc [1], r->send_done [0], r->send_done [1],
            r->send_acc [0], r->send_acc [1], r->batch, r->commits, r->cpu_us, r->busy,
            r->errors + r->failed);
    fflush (stdout);
}

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: bench_calls [options]\n"
        "  --calls N        calls per run (20000)\n"
        "  --window W       most calls outstanding (1000)\n"
        "  --capacity C     the echo worker's capacity (64)\n"
        "  --contexts K     contexts the calls are spread over (8)\n"
        "  --size BYTES     bytes per call, about (200)\n"
        "  --write set|push set at distinct paths (default) or push onto " BENCH_DAGGER "state.log\n"
        "  --modes LIST     stores to run, of memory,normal,full (all three)\n"
        "  --postgres URL   instead: brokers sharing this PostgreSQL database\n"
        "  --brokers LIST   with --postgres: broker counts to run (1,2,3)\n"
        "  --no-fire        skip the fire-and-forget runs\n"
        "  --repeat R       runs of each kind per setup, the best one summed up (3)\n"
        "  --tool           calls of 10 parameters; each mode also runs with a params\n"
        "                   schema declared (\"<mode>-tool\"): the cost of validation\n"
        "  --only-tool      with --tool, only the \"-tool\" setups\n"
        "  --params10       calls of 10 parameters, no schema (to compare with the\n"
        "                   former in separate runs, one setup per process)\n"
        "  --help           this help\n"
        "Starts actd (beside this program, or $ACTD_BIN) per setup; the first setup\n"
        "(memory, or the first broker count) is the baseline of the ratios. Prints\n"
        "figures; asserts nothing.\n");
}

//  True when item is in the comma-separated list
static bool
s_listed (const char *list, const char *item)
{
    char *copy = strdup (list);
    bool found = false;
    for (char *name = strtok (copy, ","); name && !found; name = strtok (NULL, ","))
        found = streq (name, item);
    free (copy);
    return found;
}

//  Start the setup's brokers on db, its worker and its clients; warm up.
//  Exits with a message when a broker does not come up.
static void
s_setup_start (s_setup_t *setup, const char *actd, const char *dir, const char *db,
               const char *sync, const s_options_t *options)
{
    char clients [S_MAX_BROKERS * 64] = "", workers [S_MAX_BROKERS * 64] = "";
    for (size_t i = 0; i < setup->ndaemons; i++) {
        bench_actd_t *daemon = bench_actd_start (actd, dir, db, sync, NULL);
        setup->daemons [i] = daemon;
        if (bench_actd_pong (daemon, 30000) < 0) {
            fprintf (stderr, "bench_calls: actd did not answer PING in 30 s\n");
            bench_actd_log_tail (daemon, 20);
            exit (1);
        }
        snprintf (clients + strlen (clients), sizeof clients - strlen (clients), "%s%s",
                  i? ",": "", daemon->client);
        snprintf (workers + strlen (workers), sizeof workers - strlen (workers), "%s%s",
                  i? ",": "", daemon->worker);
        setup->stats [i] = act_client_new (daemon->client);
        act_client_set_timeout (setup->stats [i], 60000);
    }
    setup->worker = bench_worker_start_tool (workers, options->capacity,
                                             setup->tool? s_schema: NULL);
    setup->client = act_client_new (clients);
    act_client_set_timeout (setup->client, 60000);
    for (size_t i = 0; i < setup->ndaemons; i++)
        bench_wait_worker (setup->stats [i], "echo", 30000);
    //  Warm up: contexts created (and claimed), code and caches hot
    s_run (setup, options, options->calls / 10 > 0? options->calls / 10: 1, true, "w");
}

static void
s_setup_stop (s_setup_t *setup)
{
    act_client_destroy (&setup->client);
    bench_worker_stop (&setup->worker);
    for (size_t i = 0; i < setup->ndaemons; i++) {
        act_client_destroy (&setup->stats [i]);
        bench_actd_stop (&setup->daemons [i]);
    }
}

//  The setups of main, for s_stop_all
static s_setup_t *s_setups = NULL;
static size_t s_nsetups = 0;

//  At exit, an error's exit (1) included: stop every setup's brokers and
//  worker (those already stopped are skipped), so no actd outlives us
static void
s_stop_all (void)
{
    for (size_t i = 0; i < s_nsetups; i++)
        s_setup_stop (&s_setups [i]);
}

//  What main takes from the command line besides s_options_t
typedef struct {
    char *modes;                //  --modes: the stores to run
    char *brokers;              //  --brokers: broker counts to run (with --postgres)
    char *postgres;             //  --postgres URL, or NULL
    bool fire;                  //  Fire-and-forget runs too (not --no-fire)
    size_t repeats;             //  --repeat: runs of each kind per setup
} s_args_t;

//  Parse the command line into options and args. Returns -1 to go on,
//  else the exit code (0 after --help, 2 with the usage on bad arguments).
static int
s_parse (int argc, char *argv [], s_options_t *options, s_args_t *args)
{
    static struct option long_options [] = {
        { "calls", required_argument, 0, 'n' }, { "window", required_argument, 0, 'w' },
        { "capacity", required_argument, 0, 'c' }, { "contexts", required_argument, 0, 'k' },
        { "size", required_argument, 0, 's' }, { "write", required_argument, 0, 'W' },
        { "modes", required_argument, 0, 'm' }, { "no-fire", no_argument, 0, 'F' },
        { "repeat", required_argument, 0, 'r' }, { "postgres", required_argument, 0, 'P' },
        { "brokers", required_argument, 0, 'B' }, { "tool", no_argument, 0, 'T' },
        { "params10", no_argument, 0, 'p' }, { "only-tool", no_argument, 0, 'o' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
        switch (option) {
            case 'n': options->calls = strtoull (optarg, NULL, 10); break;
            case 'w': options->window = strtoull (optarg, NULL, 10); break;
            case 'c': options->capacity = strtoull (optarg, NULL, 10); break;
            case 'k': options->contexts = strtoull (optarg, NULL, 10); break;
            case 's': options->size = strtoull (optarg, NULL, 10); break;
            case 'W':
                if (!streq (optarg, "set") && !streq (optarg, "push")) {
                    s_usage (stderr);
                    return 2;
                }
                options->push = streq (optarg, "push");
                break;
            case 'm': free (args->modes); args->modes = strdup (optarg); break;
            case 'F': args->fire = false; break;
            case 'r': args->repeats = strtoull (optarg, NULL, 10); break;
            case 'P': free (args->postgres); args->postgres = strdup (optarg); break;
            case 'B': free (args->brokers); args->brokers = strdup (optarg); break;
            case 'T': options->tool = options->params10 = true; break;
            case 'p': options->params10 = true; break;
            case 'o': options->only_tool = true; break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return 2;
        }
    }
    if (args->repeats < 1 || options->calls < 1 || options->window < 1
    ||  options->capacity < 1 || options->contexts < 1) {
        s_usage (stderr);
        return 2;
    }
    return -1;
}

//  Name the setups to run in setups, baseline first: the broker counts
//  with --postgres (fire-and-forget then off), else the store modes.
//  Returns how many, or -1 (after a message) on a bad broker count.
static int
s_plan_setups (s_setup_t *setups, const s_options_t *options, s_args_t *args)
{
    size_t nsetups = 0;
    if (args->postgres) {
        args->fire = false;
        char *copy = strdup (args->brokers);
        for (char *item = strtok (copy, ","); item && nsetups < S_MAX_BROKERS;
             item = strtok (NULL, ",")) {
            long count = atol (item);
            if (count < 1 || count > S_MAX_BROKERS) {
                fprintf (stderr, "bench_calls: --brokers takes counts 1 to %d\n", S_MAX_BROKERS);
                return -1;
            }
            snprintf (setups [nsetups].name, sizeof setups [nsetups].name, "pg-x%ld", count);
            setups [nsetups++].ndaemons = (size_t) count;
        }
        free (copy);
    }
    else {
        const char *names [] = { "memory", "normal", "full" };
        for (int m = 0; m < 3; m++)
            for (int tool = options->only_tool? 1: 0; tool <= (options->tool? 1: 0); tool++)
                if (s_listed (args->modes, names [m]) && nsetups < S_MAX_BROKERS) {
                    snprintf (setups [nsetups].name, sizeof setups [nsetups].name, "%s%s",
                              names [m], tool? "-tool": "");
                    setups [nsetups].tool = tool;
                    setups [nsetups++].ndaemons = 1;
                }
    }
    return (int) nsetups;
}

//  Print what is run and the table's heading
static void
s_print_heading (const s_options_t *options, const s_args_t *args, const char *actd)
{
    printf ("bench_calls: %zu calls of ~%zu bytes (%s), %zu outstanding at most, "
            "%zu contexts, echo worker of capacity %zu\nactd: %s\n",
            options->calls, options->size,
            options->push? "push onto " BENCH_DAGGER "state.log": "set at distinct paths",
            options->window, options->contexts, options->capacity, actd);
    if (args->postgres)
        printf ("store: PostgreSQL, synchronous FULL, brokers %s (one client and one "
                "worker on all of them; CPU/call summed over the brokers)\n", args->brokers);
    printf ("\n%-16s %8s %17s %19s %17s %8s %7s %7s %6s %6s\n", "", "", "ACCEPTED->DONE ms",
            "send->DONE ms", "send->ACCEPTED ms", "writes/", "", "actd us", "all", "");
    printf ("%-16s %8s %8s %8s %9s %9s %8s %8s %8s %7s %7s %6s %6s\n", "run", "calls/s", "p50",
            "p99", "p50", "p99", "p50", "p99", "commit", "commits", "CPU/call", "CPUs", "errors");
}

//  Start every setup on its store (the database of setup i in dbs [i],
//  for the caller to free)
static void
s_start_all (s_setup_t *setups, size_t nsetups, char **dbs, const char *actd,
             const char *dir, const s_options_t *options, const s_args_t *args)
{
    for (size_t i = 0; i < nsetups; i++) {
        s_setup_t *setup = &setups [i];
        if (args->postgres)
            dbs [i] = strdup (args->postgres);
        else
            dbs [i] = strncmp (setup->name, "memory", 6) == 0? strdup (":memory:")
                    : zsys_sprintf ("%s/actd-%s.db", dir, setup->name);
        s_setup_start (setup, actd, dir, dbs [i],
                       args->postgres || strncmp (setup->name, "full", 4) == 0? "full": "normal",
                       options);
    }
}

//  Run and print every repeat of every setup (the repeats go round the
//  setups), keeping each setup's best durable and fire-and-forget runs
static void
s_measure_all (s_setup_t *setups, size_t nsetups, const s_options_t *options,
               const s_args_t *args)
{
    for (size_t rep = 1; rep <= args->repeats; rep++)
        for (size_t i = 0; i < nsetups; i++) {
            s_setup_t *setup = &setups [i];
            char label [64], tag [16];
            snprintf (tag, sizeof tag, "r%zu", rep);
            s_result_t r = s_run (setup, options, options->calls, true, tag);
            snprintf (label, sizeof label, "%.31s durable #%zu", setup->name, rep);
            s_print (label, &r, true);
            if (r.rate > setup->durable.rate)
                setup->durable = r;
            if (args->fire) {
                snprintf (tag, sizeof tag, "f%zu", rep);
                r = s_run (setup, options, options->calls, false, tag);
                snprintf (label, sizeof label, "%.31s forget #%zu", setup->name, rep);
                s_print (label, &r, false);
                if (r.rate > setup->forget.rate)
                    setup->forget = r;
            }
        }
}

//  Print each setup's best runs, then the ratios to the baseline
static void
s_print_summary (s_setup_t *setups, size_t nsetups, const s_options_t *options,
                 const s_args_t *args)
{
    printf ("\nbest of %zu (highest calls/s) per setup:\n", args->repeats);
    for (size_t i = 0; i < nsetups; i++) {
        char label [64];
        snprintf (label, sizeof label, "%.31s durable", setups [i].name);
        s_print (label, &setups [i].durable, true);
        if (args->fire) {
            snprintf (label, sizeof label, "%.31s forget", setups [i].name);
            s_print (label, &setups [i].forget, false);
        }
    }
    printf ("\n");
    for (size_t i = 1; i < nsetups; i++) {
        //  With --tool, each "-tool" setup against its own mode
        s_setup_t *base = setups [i].tool && !options->only_tool? &setups [i - 1]: &setups [0];
        printf ("ratio %s/%s: durable calls/s %.2f, ACCEPTED->DONE p50 %.2f, CPU/call %.2f",
                setups [i].name, base->name, setups [i].durable.rate / base->durable.rate,
                setups [i].durable.acc_done [0] / base->durable.acc_done [0],
                setups [i].durable.cpu_us / base->durable.cpu_us);
        if (args->fire)
            printf (", fire-and-forget calls/s %.2f", setups [i].forget.rate / base->forget.rate);
        printf ("\n");
    }
    if (nsetups == 1)
        printf ("(one setup: no ratios)\n");
    if (args->fire)
        printf ("(fire-and-forget: completion seen by polling STATS calls.ok; send->DONE is "
                "send to the STATS that counted it)\n");
}

int
main (int argc, char *argv [])
{
    s_options_t options = { 20000, 1000, 64, 8, 200, false, false, false, false };
    s_args_t args = { strdup ("memory,normal,full"), strdup ("1,2,3"), NULL, true, 3 };
    int rc = s_parse (argc, argv, &options, &args);
    if (rc >= 0)
        return rc;
    //  The setups, baseline first
    s_setup_t setups [S_MAX_BROKERS] = { 0 };
    int planned = s_plan_setups (setups, &options, &args);
    if (planned < 0)
        return 2;
    size_t nsetups = (size_t) planned;
    if (nsetups == 0) {
        s_usage (stderr);
        return 2;
    }
    zsys_init ();
    zsys_set_logstream (stderr);
    //  After zsys_init, so it runs before CZMQ's own shutdown at exit
    s_setups = setups;
    s_nsetups = nsetups;
    atexit (s_stop_all);
    char *actd = bench_actd_path ();
    char *dir = bench_tmpdir ("bench_calls");
    s_print_heading (&options, &args, actd);

    //  Every setup runs from the start; the repeats go round the setups,
    //  so a disturbance of the shared machine does not fall on one only
    char *dbs [S_MAX_BROKERS] = { NULL };
    s_start_all (setups, nsetups, dbs, actd, dir, &options, &args);
    s_measure_all (setups, nsetups, &options, &args);
    for (size_t i = 0; i < nsetups; i++) {
        s_setup_stop (&setups [i]);
        free (dbs [i]);
    }
    s_print_summary (setups, nsetups, &options, &args);
    bench_rmdir (dir);
    free (dir);
    free (actd);
    free (args.modes);
    free (args.brokers);
    free (args.postgres);
    return 0;
}
