/*  =========================================================================
    bench_wal - what a SQLite commit costs through the store's VFS
    (daemon/store/act_sqlite_vfs.h, a commit's WAL frames in one write)
    against SQLite's own VFS (two writes a frame), on the same disk, in
    the same run: microseconds per commit (median and mean over --commits)
    and WAL writes per commit, for commits of about 6 pages (one call one
    at a time) and about 150 (a pipelined batch), synchronous NORMAL and
    FULL. The two VFSes alternate round by round, each on a fresh file in
    --dir (the stores' disk: default $TMPDIR or /tmp). With --idle-us N
    each commit follows N us asleep, as a commit of calls one at a time
    follows a quiet spell (on a VM a sync after idle costs more than one
    of a busy loop); the sleep is not timed. Nothing asserts.

    bench_wal [--commits N] [--rounds R] [--dir DIR] [--idle-us N]
    ========================================================================= */

#include <czmq.h>
#include <getopt.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include "act_sqlite_vfs.h"
#include "bench_util.h"

#define S_ROW   3000                //  Bytes a row: about a page each

typedef struct {
    double median;                  //  us per commit
    double mean;                    //  us per commit
    double writes;                  //  WAL writes per commit (actd's VFS)
} s_result_t;

//  commits transactions of pages rows each on a fresh file through vfs
//  (in dir/run, removed after), each after idle_us asleep
static s_result_t
s_run (const char *dir, const char *vfs, const char *sync, int pages, int commits, int idle_us)
{
    char *run = zsys_sprintf ("%s/run", dir);
    mkdir (run, 0700);
    char *path = zsys_sprintf ("%s/bench.db", run);
    sqlite3 *db = NULL;
    char *sql = zsys_sprintf ("PRAGMA journal_mode = WAL; PRAGMA synchronous = %s;"
                              "CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB);", sync);
    if (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs)
    ||  sqlite3_exec (db, sql, NULL, NULL, NULL)) {
        fprintf (stderr, "bench_wal: %s: %s\n", path, sqlite3_errmsg (db));
        exit (1);
    }
    sqlite3_stmt *insert;
    sqlite3_prepare_v2 (db, "INSERT INTO t (body) VALUES (zeroblob (?))", -1, &insert, NULL);
    sqlite3_bind_int (insert, 1, S_ROW);
    double *times = calloc ((size_t) commits, sizeof *times);
    uint64_t writes = act_sqlite_vfs_wal_writes ();
    for (int i = 0; i < commits; i++) {
        if (idle_us)
            nanosleep (&(struct timespec) { idle_us / 1000000, idle_us % 1000000 * 1000L }, NULL);
        double started = bench_now ();
        sqlite3_exec (db, "BEGIN", NULL, NULL, NULL);
        for (int row = 0; row < pages; row++) {
            sqlite3_step (insert);
            sqlite3_reset (insert);
        }
        sqlite3_exec (db, "COMMIT", NULL, NULL, NULL);
        times [i] = (bench_now () - started) * 1e6;
    }
    s_result_t result = { 0, 0, (double) (act_sqlite_vfs_wal_writes () - writes) / commits };
    for (int i = 0; i < commits; i++)
        result.mean += times [i] / commits;
    result.median = bench_percentile (times, (size_t) commits, 50);
    free (times);
    sqlite3_finalize (insert);
    sqlite3_close (db);
    zstr_free (&sql);
    zstr_free (&path);
    bench_rmdir (run);              //  The file, its WAL and shared memory
    zstr_free (&run);
    return result;
}

int
main (int argc, char **argv)
{
    int commits = 2000, rounds = 3, idle_us = 0;
    const char *base = getenv ("TMPDIR")? getenv ("TMPDIR"): "/tmp";
    static struct option options [] = {
        { "commits", required_argument, NULL, 'c' }, { "rounds", required_argument, NULL, 'r' },
        { "dir", required_argument, NULL, 'd' }, { "idle-us", required_argument, NULL, 'i' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int option;
    while ((option = getopt_long (argc, argv, "", options, NULL)) != -1) {
        if (option == 'c')
            commits = atoi (optarg);
        else
        if (option == 'r')
            rounds = atoi (optarg);
        else
        if (option == 'd') {
            base = optarg;
            setenv ("TMPDIR", base, 1);     //  Where bench_tmpdir makes its own
        }
        else
        if (option == 'i')
            idle_us = atoi (optarg);
        else {
            printf ("usage: bench_wal [--commits N] [--rounds R] [--dir DIR] [--idle-us N]\n");
            return option == 'h'? 0: 2;
        }
    }
    if (commits < 1 || rounds < 1 || idle_us < 0 || act_sqlite_vfs_register ()) {
        fprintf (stderr, "bench_wal: bad arguments, or the VFS cannot be registered\n");
        return 2;
    }
    char *dir = bench_tmpdir ("actd-bench-wal");
    printf ("SQLite %s, files in %s; us per commit, median / mean of each round",
            sqlite3_libversion (), base);
    printf (idle_us? "; each commit after %d us idle\n": "\n", idle_us);
    printf ("%-7s %6s %5s | %-21s | %-21s %7s | %s\n", "sync", "pages", "round",
            "SQLite's VFS", "actd's VFS", "writes", "actd / SQLite (median)");
    const char *syncs [] = { "NORMAL", "FULL" };
    const int sizes [] = { 6, 150 };
    for (int s = 0; s < 2; s++)
        for (int p = 0; p < 2; p++) {
            int count = sizes [p] > 10? commits / 10 + 1: commits;
            for (int round = 1; round <= rounds; round++) {
                s_result_t own = s_run (dir, NULL, syncs [s], sizes [p], count, idle_us);
                s_result_t ours = s_run (dir, ACT_SQLITE_VFS, syncs [s], sizes [p], count,
                                        idle_us);
                printf ("%-7s %6d %5d | %9.1f / %9.1f | %9.1f / %9.1f %7.1f | %.2f\n",
                        syncs [s], sizes [p], round, own.median, own.mean, ours.median,
                        ours.mean, ours.writes, ours.median / own.median);
            }
        }
    bench_rmdir (dir);
    zstr_free (&dir);
    return 0;
}
