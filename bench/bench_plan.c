/*  =========================================================================
    bench_plan - a PLAN of N calls must be scheduled in time linear in N.

    Three shapes, each in a fresh context:
      chain    call i reads †state.s<i-1> and writes †state.s<i>
      fanin    N-1 producers write †state.r.k<i>; the last call reads
               †state.r (so it waits for all of them)
      fanout   one producer writes †state.x; N-1 calls read it, each
               writing its own †state.y<i>

    For each shape and size it measures (a) the time from sending PLAN to
    ACCEPTED (acceptance evaluates every call's dependencies) and (b) the
    time until every DONE arrived, with a worker of capacity 64 in a
    thread (activity "step": a small result whatever the parameters), and
    prints both per call and the ratio of time per call at the largest
    size to the smallest. Linear scheduling keeps that ratio near 1; a
    rescan of every waiting call per completion would make it grow with
    the size (about 10x from 1 000 to 10 000).

    The chain is sequential by nature: its time per call is one round trip
    broker -> worker -> broker (plus a commit), whatever the size.

    bench_plan [--sizes 1000,2000,5000,10000] [--shapes chain,fanin,fanout]
               [--modes memory,normal] [--capacity C] [--repeat R] [--help]
    ========================================================================= */

#include <getopt.h>
#include <time.h>
#include "bench_util.h"

//  The PLAN's JSON array for shape with size calls
static char *
s_plan (const char *shape, size_t size)
{
    size_t capacity = size * 128 + 64;
    char *json = malloc (capacity);
    size_t at = 0;
    json [at++] = '[';
    for (size_t i = 0; i < size; i++) {
        if (i)
            json [at++] = ',';
        int n;
        size_t room = capacity - at;
        if (streq (shape, "chain"))
            n = i == 0
              ? snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.s0\",\"i\":0}")
              : snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.s%zu\",\"i\":%zu,\"p\":\"" BENCH_DAGGER
                          "state.s%zu\"}", i, i, i - 1);
        else
        if (streq (shape, "fanin"))
            n = i + 1 < size
              ? snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.r.k%zu\",\"i\":%zu}", i, i)
              : snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.all\",\"i\":%zu,\"r\":\"" BENCH_DAGGER
                          "state.r\"}", i);
        else
            n = i == 0
              ? snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.x\",\"i\":0}")
              : snprintf (json + at, room, "{\"_tool\":\"step\",\"_outputPath\":\""
                          BENCH_DAGGER "state.y%zu\",\"i\":%zu,\"x\":\"" BENCH_DAGGER
                          "state.x\"}", i, i);
        at += (size_t) n;
    }
    json [at++] = ']';
    json [at] = 0;
    return json;
}

typedef struct {
    double accept;              //  Seconds PLAN -> ACCEPTED
    double done;                //  Seconds PLAN -> last DONE
    size_t failed;              //  DONE with a status other than ok
    bool refused;               //  ERROR instead of ACCEPTED
} s_result_t;

static s_result_t
s_run (act_client_t *client, const char *context, const char *shape, size_t size)
{
    s_result_t result = { 0 };
    char *json = s_plan (shape, size);
    char request [24];
    double start = bench_now ();
    if (act_client_send (client, request, "PLAN", context, json, NULL)) {
        fprintf (stderr, "bench_plan: cannot send PLAN\n");
        exit (1);
    }
    free (json);
    act_reply_t *reply = act_client_wait (client, request, NULL);
    result.accept = bench_now () - start;
    if (!reply || !streq (reply->verb, "ACCEPTED")) {
        char *code = reply? act_reply_arg (reply, 0): NULL;
        char *message = reply? act_reply_arg (reply, 1): NULL;
        fprintf (stderr, "bench_plan: %s %zu: PLAN answered %s %s %s\n", shape, size,
                 reply? reply->verb: "nothing in time", code? code: "", message? message: "");
        free (code);
        free (message);
        act_reply_destroy (&reply);
        result.refused = true;
        return result;
    }
    act_reply_destroy (&reply);
    for (size_t i = 0; i < size; i++) {
        reply = act_client_wait (client, request, "DONE");
        if (!reply) {
            fprintf (stderr, "bench_plan: %s %zu: DONE %zu of %zu did not come in time\n",
                     shape, size, i + 1, size);
            exit (1);
        }
        char *text = act_reply_arg (reply, 1);
        json_t *outcome = text? json_loads (text, 0, NULL): NULL;
        const char *status = json_string_value (json_object_get (outcome, "status"));
        if (!status || !streq (status, "ok")) {
            if (result.failed++ == 0)
                fprintf (stderr, "bench_plan: %s %zu: a call ended: %.300s\n", shape, size,
                         text? text: "(no outcome)");
        }
        json_decref (outcome);
        free (text);
        act_reply_destroy (&reply);
    }
    result.done = bench_now () - start;
    return result;
}

static bool
s_listed (const char *list, const char *name)
{
    char *copy = strdup (list);
    bool found = false;
    for (char *item = strtok (copy, ","); item; item = strtok (NULL, ","))
        if (streq (item, name))
            found = true;
    free (copy);
    return found;
}

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: bench_plan [options]\n"
        "  --sizes LIST    calls per PLAN (1000,2000,5000,10000)\n"
        "  --shapes LIST   of chain,fanin,fanout (all three)\n"
        "  --modes LIST    stores, of memory,normal,full (memory,normal)\n"
        "  --capacity C    the worker's capacity (64)\n"
        "  --repeat R      runs of each shape and size, the best kept (3)\n"
        "  --help          this help\n"
        "Starts actd (beside this program, or $ACTD_BIN) per store mode. Prints figures;\n"
        "asserts nothing.\n");
}

//  What the command line asks for
typedef struct {
    char *sizes_text;           //  --sizes as given (split in place into sizes)
    size_t sizes [64];          //  Calls per PLAN
    size_t nsizes;              //  How many sizes
    char *shapes;               //  --shapes: the shapes to run
    char *modes;                //  --modes: the stores to run
    size_t capacity;            //  The worker's capacity
    size_t repeats;             //  Runs of each shape and size
} s_options_t;

//  The store modes and the shapes, in the order they run
static const char *s_mode_names [] = { "memory", "normal", "full" };
static const char *s_shape_names [] = { "chain", "fanin", "fanout" };

//  Parse the command line into options. Returns -1 to go on, else the
//  exit code (0 after --help, 2 with the usage on bad arguments).
static int
s_parse (int argc, char *argv [], s_options_t *options)
{
    static struct option long_options [] = {
        { "sizes", required_argument, 0, 's' }, { "shapes", required_argument, 0, 'S' },
        { "modes", required_argument, 0, 'm' }, { "capacity", required_argument, 0, 'c' },
        { "repeat", required_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
        switch (option) {
            case 's': free (options->sizes_text); options->sizes_text = strdup (optarg); break;
            case 'S': free (options->shapes); options->shapes = strdup (optarg); break;
            case 'm': free (options->modes); options->modes = strdup (optarg); break;
            case 'c': options->capacity = strtoull (optarg, NULL, 10); break;
            case 'r': options->repeats = strtoull (optarg, NULL, 10); break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return 2;
        }
    }
    for (char *item = strtok (options->sizes_text, ","); item && options->nsizes < 64;
         item = strtok (NULL, ","))
        if (strtoull (item, NULL, 10) >= 2)
            options->sizes [options->nsizes++] = strtoull (item, NULL, 10);
    if (options->nsizes == 0 || options->capacity < 1 || options->repeats < 1) {
        s_usage (stderr);
        return 2;
    }
    return -1;
}

//  Run every listed shape at every size, options->repeats times (the
//  repeats go round the shapes and sizes), keeping in best (zeroed) the
//  least times of each and the failures summed
static void
s_measure (act_client_t *client, const s_options_t *options, s_result_t best [3][64])
{
    for (size_t rep = 1; rep <= options->repeats; rep++)
        for (int s = 0; s < 3; s++) {
            if (!s_listed (options->shapes, s_shape_names [s]))
                continue;
            for (size_t i = 0; i < options->nsizes; i++) {
                char context [64];
                snprintf (context, sizeof context, "plan-%s-%zu-r%zu", s_shape_names [s],
                          options->sizes [i], rep);
                s_result_t r = s_run (client, context, s_shape_names [s], options->sizes [i]);
                s_result_t *b = &best [s][i];
                if (r.refused) {
                    b->refused = true;
                    continue;
                }
                if (b->accept == 0 || r.accept < b->accept)
                    b->accept = r.accept;
                if (b->done == 0 || r.done < b->done)
                    b->done = r.done;
                b->failed += r.failed;
            }
        }
}

//  Print the table of store mode m: the best times per shape and size,
//  and per shape the ratio of time per call, largest size to smallest
static void
s_print_best (int m, const s_options_t *options, s_result_t best [3][64])
{
    const size_t *sizes = options->sizes;
    size_t nsizes = options->nsizes;
    printf ("\nstore: %s (best of %zu runs each)\n%-8s %7s %11s %13s %11s %13s %7s\n",
            s_mode_names [m], options->repeats, "shape", "calls", "ACCEPTED ms", "us/call",
            "all DONE ms", "us/call", "failed");
    for (int s = 0; s < 3; s++) {
        if (!s_listed (options->shapes, s_shape_names [s]))
            continue;
        for (size_t i = 0; i < nsizes; i++) {
            s_result_t *r = &best [s][i];
            if (r->refused && r->done == 0) {
                printf ("%-8s %7zu refused (see above)\n", s_shape_names [s], sizes [i]);
                continue;
            }
            printf ("%-8s %7zu %11.1f %13.2f %11.1f %13.2f %7zu\n", s_shape_names [s],
                    sizes [i], r->accept * 1000, r->accept * 1e6 / sizes [i],
                    r->done * 1000, r->done * 1e6 / sizes [i], r->failed);
        }
        s_result_t *first = &best [s][0], *last = &best [s][nsizes - 1];
        if (nsizes > 1 && first->done > 0 && last->done > 0)
            printf ("%-8s ratio of time per call, %zu vs %zu: ACCEPTED %.2f, all DONE %.2f "
                    "(linear: near 1)\n", s_shape_names [s], sizes [nsizes - 1], sizes [0],
                    (last->accept / sizes [nsizes - 1]) / (first->accept / sizes [0]),
                    (last->done / sizes [nsizes - 1]) / (first->done / sizes [0]));
    }
    fflush (stdout);
}

//  Measure store mode m on its own actd (its store in dir) and print its
//  table and commits. Returns 0, or 1 (after a message) when actd does
//  not answer PING.
static int
s_mode (int m, const char *actd, const char *dir, const s_options_t *options)
{
    char *db = m == 0? strdup (":memory:")
                     : zsys_sprintf ("%s/plan-%s.db", dir, s_mode_names [m]);
    //  A PLAN of 10 000 calls is close to the default 1 MiB frame limit
    bench_actd_t *daemon = bench_actd_start (actd, dir, db, m == 2? "full": "normal",
                                             "    max_message_bytes = 16777216\n");
    if (bench_actd_pong (daemon, 30000) < 0) {
        fprintf (stderr, "bench_plan: actd did not answer PING in 30 s\n");
        bench_actd_log_tail (daemon, 20);
        return 1;
    }
    bench_worker_t *worker = bench_worker_start (daemon->worker, options->capacity);
    act_client_t *client = act_client_new (daemon->client);
    act_client_set_timeout (client, 120000);
    bench_wait_worker (client, "step", 30000);
    //  Warm up
    for (int s = 0; s < 3; s++) {
        char context [64];
        snprintf (context, sizeof context, "warm-%s", s_shape_names [s]);
        s_run (client, context, s_shape_names [s], 500);
    }
    //  The repeats go round the shapes and sizes; the best (least)
    //  time of each is kept
    s_result_t best [3][64];
    memset (best, 0, sizeof best);
    s_measure (client, options, best);
    s_print_best (m, options, best);
    json_t *stats = bench_stats (client);
    json_t *store = json_object_get (stats, "store");
    long long commits = bench_json_int (store, "commits", NULL);
    printf ("store %s: %lld commits, %.1f writes per commit over the whole run\n",
            s_mode_names [m], commits,
            commits? (double) bench_json_int (store, "writes", NULL) / commits: 0);
    json_decref (stats);
    act_client_destroy (&client);
    bench_worker_stop (&worker);
    bench_actd_stop (&daemon);
    free (db);
    return 0;
}

int
main (int argc, char *argv [])
{
    s_options_t options = { .sizes_text = strdup ("1000,2000,5000,10000"),
                            .shapes = strdup ("chain,fanin,fanout"),
                            .modes = strdup ("memory,normal"), .capacity = 64, .repeats = 3 };
    int rc = s_parse (argc, argv, &options);
    if (rc >= 0)
        return rc;
    zsys_init ();
    zsys_set_logstream (stderr);
    char *actd = bench_actd_path ();
    char *dir = bench_tmpdir ("bench_plan");
    printf ("bench_plan: PLAN of N calls, worker capacity %zu; actd: %s\n", options.capacity,
            actd);
    for (int m = 0; m < 3; m++) {
        if (!s_listed (options.modes, s_mode_names [m]))
            continue;
        if (s_mode (m, actd, dir, &options))
            return 1;
    }
    bench_rmdir (dir);
    free (dir);
    free (actd);
    free (options.sizes_text);
    free (options.shapes);
    free (options.modes);
    return 0;
}
