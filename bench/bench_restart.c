/*  =========================================================================
    bench_restart - how fast actd starts on a big store, and what it holds
    in memory: contexts are loaded lazily, on first use.

    The program writes a SQLite store of M messages (default 1 000 000)
    in K contexts (default 10 000) directly with the library, as actd would
    have written it (act_ctx_append builds each stored message, then
    act_store_put_context / put_message, committed in large batches), plus
    P pending calls (queued, for an activity no worker serves) in P of the
    contexts. Then, R times, it starts actd on that store and measures:

      - the time from starting the process to its first PONG (the target
        from the issue: within 1 s; reported, not asserted),
      - VmRSS right after that PONG,
      - a RESOLVE in each of 100 random contexts not yet loaded: the first
        use loads the context from the store; the time of each, against a
        second RESOLVE of the same context (loaded) as the baseline,
      - VmRSS after those loads.

    The same is measured on an empty store (best of R starts) as the
    baseline for start time and memory. The store's file sizes are printed.

    bench_restart [--messages M] [--contexts K] [--pending P] [--probes N]
                  [--runs R] [--help]
    ========================================================================= */

#include <getopt.h>
#include <sys/stat.h>
#include <time.h>
#include "bench_util.h"
#include "act_store.h"

static void
s_check (int rc, const char *what, act_err_t *err)
{
    if (rc) {
        fprintf (stderr, "bench_restart: %s failed: %s\n", what,
                 err && err->message [0]? err->message: "(see above)");
        exit (1);
    }
}

static char *
s_context_name (size_t index)
{
    return zsys_sprintf ("ctx-%05zu", index);
}

//  Context c holds a pending call when c % every == 0 (every = K / P)
static bool
s_has_pending (size_t c, size_t every)
{
    return every && c % every == 0;
}

//  Write the store: messages spread evenly over contexts, then pending
//  calls. Returns the seconds it took.
static double
s_build (const char *path, size_t messages, size_t contexts, size_t pending)
{
    double start = bench_now ();
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_NORMAL, &err);
    if (!store) {
        fprintf (stderr, "bench_restart: cannot open %s: %s\n", path, err.message);
        exit (1);
    }
    const char *text = "the quick brown fox jumps over the lazy dog, "
                       "then writes a note about it in the context";
    size_t written = 0, since_commit = 0;
    for (size_t c = 0; c < contexts; c++) {
        char *id = s_context_name (c);
        act_ctx_t *ctx = act_ctx_new (id);
        s_check (act_store_put_context (store, id), "put_context", NULL);
        //  This context's share, so the total is exact
        size_t share = messages / contexts + (c < messages % contexts? 1: 0);
        for (size_t j = 0; j < share; j++) {
            char key [32];
            snprintf (key, sizeof key, "k%zu", j % 20);
            //  Mostly merges into kind state (keys k0..k19 rewritten),
            //  one in ten a note of another kind
            json_t *message = json_pack ("{sssssss{s{sIss}}}", "type", "data",
                "kind", j % 10 == 9? "notes": "state", "description", "bench message",
                "data", key, "j", (json_int_t) j, "text", text);
            json_t *stored = act_ctx_append (ctx, message, &err);
            if (!stored) {
                fprintf (stderr, "bench_restart: append refused: %s\n", err.message);
                exit (1);
            }
            uint64_t seq = (uint64_t) json_integer_value (json_object_get (stored, "_seq"));
            char *stored_text = act_json_dump (stored);
            s_check (act_store_put_message (store, id, seq, stored_text, strlen (stored_text)),
                     "put_message", NULL);
            free (stored_text);
            json_decref (stored);
            json_decref (message);
            written++;
            if (++since_commit >= 100000) {
                s_check (act_store_commit (store, &err), "commit", &err);
                since_commit = 0;
            }
        }
        act_ctx_destroy (&ctx);
        free (id);
    }
    //  Pending calls: queued, never run (no worker serves "idle")
    size_t every = pending? contexts / pending: 0;
    size_t number = 0;
    for (size_t c = 0; c < contexts && number < pending; c++) {
        if (!s_has_pending (c, every))
            continue;
        char *id = s_context_name (c);
        char path_text [64];
        snprintf (path_text, sizeof path_text, BENCH_DAGGER "state.pending.p%zu", number);
        json_t *call = number % 2
            ? json_pack ("{sssI}", "_tool", "idle", "x", (json_int_t) number)
            : json_pack ("{sssssI}", "_tool", "idle", "_outputPath", path_text,
                         "x", (json_int_t) number);
        number++;
        char *call_text = act_json_dump (call);
        act_call_record_t record = { number, id, "queued", 0, call_text, NULL,
                                     NULL, NULL, NULL, NULL };
        s_check (act_store_put_call (store, &record), "put_call", NULL);
        free (call_text);
        json_decref (call);
        free (id);
    }
    s_check (act_store_commit (store, &err), "commit", &err);
    act_store_destroy (&store);
    if (written != messages)
        fprintf (stderr, "bench_restart: wrote %zu messages, not %zu\n", written, messages);
    return bench_now () - start;
}

static long long
s_file_size (const char *path)
{
    struct stat info;
    return stat (path, &info) == 0? (long long) info.st_size: 0;
}

static void
s_print_size (const char *what, const char *db)
{
    char *wal = zsys_sprintf ("%s-wal", db);
    long long main_size = s_file_size (db), wal_size = s_file_size (wal);
    printf ("%s: %s %.1f MB, -wal %.1f MB (total %.1f MB)\n", what, db,
            main_size / 1e6, wal_size / 1e6, (main_size + wal_size) / 1e6);
    free (wal);
}

typedef struct {
    double pong_ms;             //  Process start to first PONG
    long rss_start;             //  kB after the PONG
    long rss_loaded;            //  kB after the probes
    double first_ms [3];        //  First RESOLVE: mean, p50, max
    double again_ms [3];        //  Second RESOLVE: mean, p50, max
    size_t absent;              //  Probes answered anything but a value
    long long pending;          //  Calls queued per STATS after start
} s_run_t;

static void
s_summary (double *values, size_t n, double out [3])
{
    double sum = 0, max = 0;
    for (size_t i = 0; i < n; i++) {
        sum += values [i];
        if (values [i] > max)
            max = values [i];
    }
    out [0] = n? sum / (double) n: 0;
    out [2] = max;
    out [1] = bench_percentile (values, n, 50);
}

//  One start of actd on db; probes contexts (none for the empty store)
static s_run_t
s_start (const char *actd, const char *dir, const char *db, size_t *probes, size_t nprobes)
{
    s_run_t run = { 0 };
    bench_actd_t *daemon = bench_actd_start (actd, dir, db, "normal",
        "defaults\n    schedule_timeout_ms = 3600000\n");
    int64_t pong = bench_actd_pong (daemon, 120000);
    if (pong < 0) {
        fprintf (stderr, "bench_restart: actd did not answer PING in 120 s\n");
        bench_actd_log_tail (daemon, 20);
        exit (1);
    }
    run.pong_ms = pong / 1000.0;
    run.rss_start = bench_rss_kb (daemon->pid);
    act_client_t *client = act_client_new (daemon->client);
    act_client_set_timeout (client, 60000);
    json_t *stats = bench_stats (client);
    run.pending = bench_json_int (stats, "calls", "queued");
    json_decref (stats);
    double *first = calloc (nprobes + 1, sizeof (double));
    double *again = calloc (nprobes + 1, sizeof (double));
    for (size_t i = 0; i < nprobes; i++) {
        char *id = s_context_name (probes [i]);
        for (int round = 0; round < 2; round++) {
            act_err_t err = { 0 };
            double start = bench_now ();
            json_t *value = act_client_resolve (client, id, BENCH_DAGGER "state.k3", NULL, &err);
            double took = (bench_now () - start) * 1000;
            if (!value) {
                if (run.absent++ == 0)
                    fprintf (stderr, "bench_restart: RESOLVE %s " BENCH_DAGGER "state.k3: "
                             "%s %s\n", id, err.code? err.code: "", err.message);
            }
            json_decref (value);
            (round == 0? first: again) [i] = took;
        }
        free (id);
    }
    s_summary (first, nprobes, run.first_ms);
    s_summary (again, nprobes, run.again_ms);
    run.rss_loaded = bench_rss_kb (daemon->pid);
    free (first);
    free (again);
    act_client_destroy (&client);
    bench_actd_stop (&daemon);
    return run;
}

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: bench_restart [options]\n"
        "  --messages M   messages in the store (1000000)\n"
        "  --contexts K   contexts they are spread over (10000)\n"
        "  --pending P    pending calls in the store (100)\n"
        "  --probes N     random contexts resolved after the start (100)\n"
        "  --runs R       starts of actd on the big store (3)\n"
        "  --help         this help\n"
        "Starts actd (beside this program, or $ACTD_BIN). Prints figures; asserts nothing.\n");
}

//  What the command line asks for
typedef struct {
    size_t messages;            //  Messages in the store
    size_t contexts;            //  Contexts they are spread over
    size_t pending;             //  Pending calls in the store
    size_t nprobes;             //  Random contexts resolved after the start
    size_t runs;                //  Starts of actd on the big store
} s_options_t;

//  Parse the command line into options. Returns -1 to go on, else the
//  exit code (0 after --help, 2 with the usage on bad arguments).
static int
s_parse (int argc, char *argv [], s_options_t *options)
{
    static struct option long_options [] = {
        { "messages", required_argument, 0, 'm' }, { "contexts", required_argument, 0, 'k' },
        { "pending", required_argument, 0, 'p' }, { "probes", required_argument, 0, 'n' },
        { "runs", required_argument, 0, 'r' }, { "help", no_argument, 0, 'h' },
        { 0, 0, 0, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
        switch (option) {
            case 'm': options->messages = strtoull (optarg, NULL, 10); break;
            case 'k': options->contexts = strtoull (optarg, NULL, 10); break;
            case 'p': options->pending = strtoull (optarg, NULL, 10); break;
            case 'n': options->nprobes = strtoull (optarg, NULL, 10); break;
            case 'r': options->runs = strtoull (optarg, NULL, 10); break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return 2;
        }
    }
    if (options->contexts < 1 || options->runs < 1 || options->pending > options->contexts) {
        s_usage (stderr);
        return 2;
    }
    return -1;
}

//  Up to nprobes random contexts without a pending call (those are loaded
//  at the start by recovery), each once; their number in *found. The
//  caller frees.
static size_t *
s_pick_probes (const s_options_t *options, size_t *found)
{
    size_t contexts = options->contexts;
    size_t every = options->pending? contexts / options->pending: 0;
    size_t *probes = calloc (options->nprobes + 1, sizeof (size_t));
    *found = 0;
    srand (12345);
    bool *taken = calloc (contexts, sizeof (bool));
    for (size_t tries = 0; *found < options->nprobes && tries < contexts * 10; tries++) {
        size_t c = ((size_t) rand () * (RAND_MAX + 1ull) + (size_t) rand ()) % contexts;
        if (taken [c] || s_has_pending (c, every))
            continue;
        taken [c] = true;
        probes [(*found)++] = c;
    }
    free (taken);
    return probes;
}

//  Start actd runs times on the store at db (no probes), print the table's
//  heading and the best start's line; returns that start
static s_run_t
s_baseline (const char *actd, const char *dir, const char *db, size_t runs)
{
    s_run_t base = s_start (actd, dir, db, NULL, 0);
    for (size_t r = 1; r < runs; r++) {
        s_run_t again = s_start (actd, dir, db, NULL, 0);
        if (again.pong_ms < base.pong_ms)
            base = again;
    }
    printf ("\n%-14s %12s %12s %14s %14s %14s %12s\n", "store", "start->PONG", "RSS start",
            "first RESOLVE", "again RESOLVE", "first p50/max", "RSS after");
    printf ("%-14s %9.1f ms %9ld kB %14s %14s %14s %12s\n", "empty (best)", base.pong_ms,
            base.rss_start, "-", "-", "-", "-");
    fflush (stdout);
    return base;
}

//  Start actd options->runs times on the big store at db, probing the
//  found contexts of probes, and print a line per start. Returns the
//  last start; its best start->PONG in *best.
static s_run_t
s_big_runs (const char *actd, const char *dir, const char *db, const s_options_t *options,
            size_t *probes, size_t found, double *best)
{
    *best = 0;
    s_run_t last = { 0 };
    for (size_t r = 0; r < options->runs; r++) {
        s_run_t run = s_start (actd, dir, db, probes, found);
        char label [32];
        snprintf (label, sizeof label, "big, run %zu", r + 1);
        printf ("%-14s %9.1f ms %9ld kB %11.3f ms %11.3f ms %6.2f/%.2f ms %9ld kB\n", label,
                run.pong_ms, run.rss_start, run.first_ms [0], run.again_ms [0],
                run.first_ms [1], run.first_ms [2], run.rss_loaded);
        if (run.absent)
            printf ("    %zu of %zu probes were not answered with a value\n", run.absent, found);
        if (run.pending != (long long) options->pending)
            printf ("    STATS calls.queued after the start: %lld (stored pending: %zu)\n",
                    run.pending, options->pending);
        fflush (stdout);
        if (r == 0 || run.pong_ms < *best)
            *best = run.pong_ms;
        last = run;
    }
    return last;
}

//  Print the summing up: start time, memory and first-use loads of the
//  big store (best start, last start) against the empty store's (base)
static void
s_print_summary (const s_options_t *options, s_run_t *base, s_run_t *last, double best,
                 size_t found)
{
    printf ("\nstart->PONG on the big store: best %.1f ms (target from the issue: 1000 ms), "
            "%.2fx the empty store's %.1f ms\n", best, best / base->pong_ms, base->pong_ms);
    printf ("RSS: %ld kB after the start (%.2fx the empty store's %ld kB), %ld kB after %zu "
            "first-use loads (%.1f kB per loaded context of %zu messages)\n",
            last->rss_start, (double) last->rss_start / base->rss_start, base->rss_start,
            last->rss_loaded, found,
            found? (double) (last->rss_loaded - last->rss_start) / found: 0,
            options->messages / options->contexts);
    printf ("first-use load: %.3f ms per context (RESOLVE of a loaded context: %.3f ms; "
            "ratio %.1fx)\n", last->first_ms [0], last->again_ms [0],
            last->again_ms [0] > 0? last->first_ms [0] / last->again_ms [0]: 0);
}

int
main (int argc, char *argv [])
{
    s_options_t options = { 1000000, 10000, 100, 100, 3 };
    int rc = s_parse (argc, argv, &options);
    if (rc >= 0)
        return rc;
    zsys_init ();
    zsys_set_logstream (stderr);
    char *actd = bench_actd_path ();
    char *dir = bench_tmpdir ("bench_restart");
    char *db = zsys_sprintf ("%s/big.db", dir);
    char *empty = zsys_sprintf ("%s/empty.db", dir);
    printf ("bench_restart: %zu messages in %zu contexts, %zu pending calls; actd: %s\n",
            options.messages, options.contexts, options.pending, actd);
    fflush (stdout);
    double build = s_build (db, options.messages, options.contexts, options.pending);
    printf ("store written in %.1f s (%.0f messages/s)\n", build, options.messages / build);
    s_print_size ("store", db);
    size_t found;
    size_t *probes = s_pick_probes (&options, &found);

    //  Baseline: an empty store
    //  (best of the runs, as for the big store)
    s_run_t base = s_baseline (actd, dir, empty, options.runs);
    double best;
    s_run_t last = s_big_runs (actd, dir, db, &options, probes, found, &best);
    s_print_summary (&options, &base, &last, best, found);
    s_print_size ("store after the runs", db);
    bench_rmdir (dir);
    free (probes);
    free (db);
    free (empty);
    free (dir);
    free (actd);
    return 0;
}
