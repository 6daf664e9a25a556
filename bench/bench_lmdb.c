/*  =========================================================================
    bench_lmdb - what pipelined durable calls cost to commit: actd's SQLite
    store as the committer drives it, against the same records written to
    LMDB (liblmdb, Debian's), on the same disk, in the same run.

    The performance issue allows another well-kept embedded store "if
    measured clearly better". This measures the store alone (no broker):
    batches of --batch calls, each commit holding the accepts of one batch
    (a call's record, as actd writes it) and the ends of the batch before
    (its outcome, and the data message it appended), synchronous FULL on
    both (every commit durable before it returns). It prints the thread's
    CPU and the wall time per call, the syncs per commit, and LMDB's
    figures as ratios of SQLite's. The two alternate round by round, each
    on a fresh file in --dir (default $TMPDIR or /tmp). Nothing asserts.

    The LMDB side is a model, not a store: what actd's SQLite schema keeps
    for such a call, as keys and values (calls and ends by id, big-endian;
    the live calls by id, written at accept and deleted at the end;
    messages by context and sequence; each touched context's counts and
    last sequence, and the counters, rewritten once a commit). It has no
    migrations, no reads and no recovery. LMDB's commit syncs the data,
    then the meta page (two fdatasyncs; MDB_NOMETASYNC would make the last
    commit undoable by a crash, which actd's ACCEPTED does not allow).

    bench_lmdb [--calls N] [--batch B] [--contexts C] [--rounds R] [--dir DIR]
               [--keep]   (--keep: the files stay, to be looked at)
    ========================================================================= */

#include <czmq.h>
#include <getopt.h>
#include <lmdb.h>
#include <sys/stat.h>
#include "act_store.h"
#include "bench_util.h"

//  One run's figures, per call
typedef struct {
    double cpu_us;                  //  The writing thread's CPU
    double wall_us;                 //  Elapsed
} s_result_t;

//  The texts of a benchmark call (about the sizes cmp_client's calls
//  leave in actd's store: a call of 200 bytes, an outcome of 260, a data
//  message of 530)
typedef struct {
    char call [256];
    char outcome [320];
    char message [640];
} s_texts_t;

//  The texts of call number
static void
s_texts_fill (s_texts_t *self, size_t number)
{
    char pad [160];
    memset (pad, 'x', sizeof pad - 1);
    pad [sizeof pad - 1] = 0;
    snprintf (self->call, sizeof self->call,
              "{\"_tool\":\"echo\",\"_outputPath\":\"\xe2\x80\xa0state.b.p%zu\","
              "\"text\":\"%.*s\"}",
              number, 140, pad);
    snprintf (self->outcome, sizeof self->outcome,
              "{\"state\":\"ok\",\"attempts\":1,\"result\":{\"text\":\"%.*s\"},\"branch\":0,"
              "\"seqs\":[%zu]}", 140, pad, number);
    snprintf (self->message, sizeof self->message,
              "{\"type\":\"data\",\"kind\":\"state\","
              "\"data\":{\"b\":{\"p%zu\":{\"text\":\"%.*s\"}}},"
              "\"_call\":%s,\"_seq\":%zu,\"_date\":\"2026-12-05T11:00:00.000Z\"}",
              number, 140, pad, self->call, number);
}

//  The calling thread's CPU so far, in microseconds
static double
s_thread_cpu_us (void)
{
    struct timespec now;
    clock_gettime (CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1e6 + now.tv_nsec / 1e3;
}

//  The context of call number (a fresh string), calls spread evenly
static char *
s_context (size_t number, size_t contexts)
{
    return zsys_sprintf ("bench-%zu", number % contexts);
}

//  Exit saying what failed when rc is not 0: a benchmark that cannot
//  write has nothing to measure
static void
s_check (int rc, const char *what)
{
    if (rc) {
        fprintf (stderr, "bench_lmdb: %s failed (%d)\n", what, rc);
        exit (1);
    }
}

//  actd's SQLite store: calls numbered from 1, batch by batch; returns
//  the figures per call
static s_result_t
s_sqlite (const char *dir, size_t calls, size_t batch, size_t contexts)
{
    char *path = zsys_sprintf ("%s/actd.db", dir);
    act_err_t err = { 0 };
    act_store_t *store = act_store_open (path, ACT_SYNC_FULL, &err);
    if (!store) {
        fprintf (stderr, "bench_lmdb: cannot open %s: %s\n", path, err.message);
        exit (1);
    }
    for (size_t c = 0; c < contexts; c++) {
        char *context = s_context (c, contexts);
        s_check (act_store_put_context (store, context), "put_context");
        zstr_free (&context);
    }
    s_check (act_store_commit (store, &err), "commit");
    s_texts_t texts;
    double wall = bench_now (), cpu = s_thread_cpu_us ();
    for (size_t first = 1; first <= calls + batch; first += batch) {
        //  The ends of the batch before, then this batch's accepts
        for (size_t n = first > batch? first - batch: first; n < first && n <= calls; n++) {
            char *context = s_context (n, contexts);
            s_texts_fill (&texts, n);
            act_call_record_t ended = { n, context, "ok", 1, texts.call, NULL,
                                        texts.outcome, NULL, NULL, NULL };
            s_check (act_store_update_call (store, &ended), "update_call");
            s_check (act_store_put_message (store, context, n / contexts + 1, texts.message,
                                            strlen (texts.message)), "put_message");
            zstr_free (&context);
        }
        for (size_t n = first; n < first + batch && n <= calls; n++) {
            char *context = s_context (n, contexts);
            s_texts_fill (&texts, n);
            act_call_record_t accepted = { n, context, "queued", 0, texts.call, NULL,
                                           NULL, NULL, NULL, NULL };
            s_check (act_store_put_call (store, &accepted), "put_call");
            zstr_free (&context);
        }
        s_check (act_store_commit (store, &err), "commit");
    }
    s_result_t result = { (s_thread_cpu_us () - cpu) / calls,
                          (bench_now () - wall) * 1e6 / calls };
    act_store_destroy (&store);
    zstr_free (&path);
    return result;
}

//  A key of 8 bytes, big-endian, so that ids sort as numbers
static void
s_key_id (unsigned char *key, uint64_t id)
{
    for (int i = 7; i >= 0; i--, id >>= 8)
        key [i] = (unsigned char) id;
}

//  One put into dbi, or exit
static void
s_put (MDB_txn *txn, MDB_dbi dbi, void *key, size_t key_size, const void *value,
       size_t size, unsigned flags)
{
    MDB_val k = { key_size, key }, v = { size, (void *) value };
    s_check (mdb_put (txn, dbi, &k, &v, flags), "mdb_put");
}

//  The same records in LMDB; returns the figures per call
static s_result_t
s_lmdb (const char *dir, size_t calls, size_t batch, size_t contexts)
{
    MDB_env *env;
    s_check (mdb_env_create (&env), "mdb_env_create");
    mdb_env_set_mapsize (env, (size_t) 16 << 30);
    mdb_env_set_maxdbs (env, 8);
    s_check (mdb_env_open (env, dir, MDB_NOTLS | MDB_NORDAHEAD, 0600), "mdb_env_open");
    MDB_txn *txn;
    MDB_dbi calls_db, ends_db, live_db, messages_db, contexts_db, counters_db;
    s_check (mdb_txn_begin (env, NULL, 0, &txn), "mdb_txn_begin");
    s_check (mdb_dbi_open (txn, "calls", MDB_CREATE, &calls_db), "dbi");
    s_check (mdb_dbi_open (txn, "ends", MDB_CREATE, &ends_db), "dbi");
    s_check (mdb_dbi_open (txn, "live", MDB_CREATE, &live_db), "dbi");
    s_check (mdb_dbi_open (txn, "messages", MDB_CREATE, &messages_db), "dbi");
    s_check (mdb_dbi_open (txn, "contexts", MDB_CREATE, &contexts_db), "dbi");
    s_check (mdb_dbi_open (txn, "counters", MDB_CREATE, &counters_db), "dbi");
    s_check (mdb_txn_commit (txn), "mdb_txn_commit");
    s_texts_t texts;
    unsigned char key [8 + 64];
    double wall = bench_now (), cpu = s_thread_cpu_us ();
    for (size_t first = 1; first <= calls + batch; first += batch) {
        s_check (mdb_txn_begin (env, NULL, 0, &txn), "mdb_txn_begin");
        for (size_t n = first > batch? first - batch: first; n < first && n <= calls; n++) {
            char *context = s_context (n, contexts);
            s_texts_fill (&texts, n);
            s_key_id (key, n);
            s_put (txn, ends_db, key, 8, texts.outcome, strlen (texts.outcome), MDB_APPEND);
            MDB_val k = { 8, key };
            s_check (mdb_del (txn, live_db, &k, NULL), "mdb_del");
            size_t length = strlen (context);
            memcpy (key, context, length + 1);
            s_key_id (key + length + 1, n / contexts + 1);
            s_put (txn, messages_db, key, length + 9, texts.message, strlen (texts.message), 0);
            zstr_free (&context);
        }
        for (size_t n = first; n < first + batch && n <= calls; n++) {
            char *context = s_context (n, contexts);
            s_texts_fill (&texts, n);
            s_key_id (key, n);
            char record [512];
            int size = snprintf (record, sizeof record, "%s\n%s", context, texts.call);
            s_put (txn, calls_db, key, 8, record, (size_t) size, MDB_APPEND);
            s_put (txn, live_db, key, 8, context, strlen (context), MDB_APPEND);
            zstr_free (&context);
        }
        //  Each context's counts and last sequence, and the counters
        for (size_t c = 0; c < contexts; c++) {
            char *context = s_context (c, contexts);
            char value [64];
            int size = snprintf (value, sizeof value, "%zu %zu 2026-12-05T11:00:00.000Z",
                                 first, first / contexts);
            s_put (txn, contexts_db, context, strlen (context), value, (size_t) size, 0);
            zstr_free (&context);
        }
        char counts [64];
        int size = snprintf (counts, sizeof counts, "%zu %zu", first, first);
        s_put (txn, counters_db, "counts", 6, counts, (size_t) size, 0);
        s_check (mdb_txn_commit (txn), "mdb_txn_commit");
    }
    s_result_t result = { (s_thread_cpu_us () - cpu) / calls,
                          (bench_now () - wall) * 1e6 / calls };
    mdb_env_close (env);
    return result;
}

//  A fresh directory under dir for one run; removed by s_clean
static char *
s_fresh (const char *dir, const char *name)
{
    char *path = zsys_sprintf ("%s/%s", dir, name);
    mkdir (path, 0700);
    return path;
}

//  Remove a run's directory (or say where it is kept), and free its path
static void
s_clean (char **path_p, bool keep)
{
    if (keep) {
        printf ("kept: %s\n", *path_p);
        zstr_free (path_p);
        return;
    }
    char *command = zsys_sprintf ("rm -rf '%s'", *path_p);
    if (system (command) != 0)
        fprintf (stderr, "bench_lmdb: cannot remove %s\n", *path_p);
    zstr_free (&command);
    zstr_free (path_p);
}

int
main (int argc, char *argv [])
{
    size_t calls = 100000, batch = 200, contexts = 8;
    int rounds = 3;
    bool keep = false;
    const char *dir = getenv ("TMPDIR")? getenv ("TMPDIR"): "/tmp";
    static struct option options [] = {
        { "calls", required_argument, NULL, 'n' }, { "batch", required_argument, NULL, 'b' },
        { "contexts", required_argument, NULL, 'c' }, { "rounds", required_argument, NULL, 'r' },
        { "dir", required_argument, NULL, 'd' }, { "keep", no_argument, NULL, 'k' },
        { NULL, 0, NULL, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        if (option == 'n') calls = strtoul (optarg, NULL, 10);
        else if (option == 'b') batch = strtoul (optarg, NULL, 10);
        else if (option == 'c') contexts = strtoul (optarg, NULL, 10);
        else if (option == 'r') rounds = atoi (optarg);
        else if (option == 'd') dir = optarg;
        else if (option == 'k') keep = true;
        else {
            fprintf (stderr, "usage: bench_lmdb [--calls N] [--batch B] [--contexts C] "
                             "[--rounds R] [--dir DIR] [--keep]\n");
            return 2;
        }
    }
    if (!calls || !batch || !contexts || rounds < 1) {
        fprintf (stderr, "bench_lmdb: --calls, --batch, --contexts and --rounds must be > 0\n");
        return 2;
    }
    char *work = zsys_sprintf ("%s/bench_lmdb-%d", dir, getpid ());
    mkdir (work, 0700);
    printf ("bench_lmdb: %zu durable calls a run in commits of %zu accepts and %zu ends, "
            "%zu contexts, synchronous FULL, in %s\n", calls, batch, batch, contexts, work);
    printf ("%-6s %22s %22s %16s\n", "round", "SQLite cpu/wall us", "LMDB cpu/wall us",
            "LMDB / SQLite");
    for (int round = 1; round <= rounds; round++) {
        char *name = zsys_sprintf ("sqlite-%d", round);
        char *path = s_fresh (work, name);
        s_result_t sqlite = s_sqlite (path, calls, batch, contexts);
        s_clean (&path, keep);
        zstr_free (&name);
        name = zsys_sprintf ("lmdb-%d", round);
        path = s_fresh (work, name);
        s_result_t lmdb = s_lmdb (path, calls, batch, contexts);
        s_clean (&path, keep);
        zstr_free (&name);
        printf ("%-6d %10.2f %10.2f %11.2f %10.2f %7.2f %7.2f\n", round, sqlite.cpu_us,
                sqlite.wall_us, lmdb.cpu_us, lmdb.wall_us, lmdb.cpu_us / sqlite.cpu_us,
                lmdb.wall_us / sqlite.wall_us);
    }
    printf ("(cpu: the writing thread's CPU a call; wall: elapsed a call; ratios: LMDB's "
            "of SQLite's)\n");
    if (!keep)
        rmdir (work);
    zstr_free (&work);
    return 0;
}
