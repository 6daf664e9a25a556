/*  =========================================================================
    test_sqlite_vfs - the store's SQLite VFS (daemon/store/act_sqlite_vfs.h):
    a commit's WAL frames go to the file in one write, before the commit
    ends, and the files stay SQLite's own. Each check that a commit
    survives runs the writer in a child process that ends with _exit
    (nothing closed, nothing flushed by a destructor: as kill -9 after the
    commit) and reads the file back in the parent through SQLite's own VFS.
    ========================================================================= */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <czmq.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "act_sqlite_vfs.h"
#include "unit_support.h"

#define S_FRAME     (4096 + 24)     //  Bytes of a WAL frame (4 KiB pages)

static char s_dir [] = "/tmp/actd-vfs-XXXXXX";
static char *s_path;                //  The database file of the test

static int
s_setup (void **state)
{
    (void) state;
    unit_remove_sqlite (s_path);
    return 0;
}

//  Open the test's file through vfs (NULL: SQLite's own) in WAL mode
static sqlite3 *
s_open (const char *vfs, const char *sync)
{
    sqlite3 *db = NULL;
    assert_int_equal (sqlite3_open_v2 (s_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                                       vfs), SQLITE_OK);
    char *sql = zsys_sprintf ("PRAGMA journal_mode = WAL; PRAGMA synchronous = %s;"
                              "CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body TEXT);",
                              sync);
    assert_int_equal (sqlite3_exec (db, sql, NULL, NULL, NULL), SQLITE_OK);
    zstr_free (&sql);
    return db;
}

//  Insert rows from first on, each of size bytes (a transaction each,
//  unless the caller opened one); SQLite's result code
static int
s_insert (sqlite3 *db, int first, int rows, int size)
{
    sqlite3_stmt *query;
    assert_int_equal (sqlite3_prepare_v2 (db, "INSERT OR REPLACE INTO t VALUES (?, ?)", -1,
                                          &query, NULL), SQLITE_OK);
    char *body = malloc ((size_t) size);
    int rc = SQLITE_DONE;
    for (int i = first; i < first + rows && rc == SQLITE_DONE; i++) {
        memset (body, 'a' + i % 26, (size_t) size);
        sqlite3_bind_int (query, 1, i);
        sqlite3_bind_text (query, 2, body, size, SQLITE_TRANSIENT);
        rc = sqlite3_step (query);
        sqlite3_reset (query);
    }
    free (body);
    sqlite3_finalize (query);
    return rc == SQLITE_DONE? SQLITE_OK: rc;
}

static int
s_exec (sqlite3 *db, const char *sql)
{
    return sqlite3_exec (db, sql, NULL, NULL, NULL);
}

//  One integer a query returns
static long long
s_number (sqlite3 *db, const char *sql)
{
    sqlite3_stmt *query;
    assert_int_equal (sqlite3_prepare_v2 (db, sql, -1, &query, NULL), SQLITE_OK);
    assert_int_equal (sqlite3_step (query), SQLITE_ROW);
    long long value = sqlite3_column_int64 (query, 0);
    sqlite3_finalize (query);
    return value;
}

//  The file as SQLite's own VFS reads it: rows, and whether every row of
//  the first `rows` holds its letter; the integrity check passes
static void
s_assert_file (int rows, int size)
{
    sqlite3 *db = s_open (NULL, "NORMAL");
    sqlite3_stmt *query;
    assert_int_equal (sqlite3_prepare_v2 (db, "PRAGMA integrity_check", -1, &query, NULL),
                      SQLITE_OK);
    assert_int_equal (sqlite3_step (query), SQLITE_ROW);
    assert_string_equal ((const char *) sqlite3_column_text (query, 0), "ok");
    sqlite3_finalize (query);
    assert_int_equal (s_number (db, "SELECT COUNT(*) FROM t"), rows);
    char *sql = zsys_sprintf ("SELECT COUNT(*) FROM t WHERE length (body) = %d"
                              " AND substr (body, 1, 1) = char (97 + id %% 26)", size);
    assert_int_equal (s_number (db, sql), rows);
    zstr_free (&sql);
    sqlite3_close (db);
}

//  Run writer (arg) in a child process that ends with _exit, so that
//  nothing is written at the connection's close; true when the child
//  exited and writer returned true
typedef bool (s_writer_fn) (const void *arg);

static bool
s_in_child (s_writer_fn *writer, const void *arg)
{
    pid_t pid = fork ();
    assert_true (pid >= 0);
    if (pid == 0)
        _exit (writer (arg)? 0: 1);
    int status = 0;
    assert_int_equal (waitpid (pid, &status, 0), pid);
    return WIFEXITED (status) && WEXITSTATUS (status) == 0;
}

//  A commit of n frames is ceil (bytes / 124 KiB) writes, not 2n: 6
//  frames one write, ~60 frames two
static void
test_a_commit_is_one_write_of_its_frames (void **state)
{
    (void) state;
    sqlite3 *db = s_open (ACT_SQLITE_VFS, "NORMAL");
    //  The WAL's header is written with the first commit: start after it
    assert_int_equal (s_insert (db, 0, 1, 3000), SQLITE_OK);
    struct stat before, after;
    char *wal = zsys_sprintf ("%s-wal", s_path);
    assert_int_equal (stat (wal, &before), 0);
    uint64_t writes = act_sqlite_vfs_wal_writes ();
    assert_int_equal (s_exec (db, "BEGIN"), SQLITE_OK);
    assert_int_equal (s_insert (db, 1, 5, 3000), SQLITE_OK);
    assert_int_equal (s_exec (db, "COMMIT"), SQLITE_OK);
    assert_int_equal (stat (wal, &after), 0);
    long long frames = (after.st_size - before.st_size) / S_FRAME;
    assert_true (frames >= 5);
    assert_int_equal (act_sqlite_vfs_wal_writes () - writes, 1);

    writes = act_sqlite_vfs_wal_writes ();
    assert_int_equal (s_exec (db, "BEGIN"), SQLITE_OK);
    assert_int_equal (s_insert (db, 100, 50, 3000), SQLITE_OK);
    assert_int_equal (s_exec (db, "COMMIT"), SQLITE_OK);
    before = after;
    assert_int_equal (stat (wal, &after), 0);
    frames = (after.st_size - before.st_size) / S_FRAME;
    long long bytes = frames * S_FRAME;
    assert_true (frames >= 50);
    assert_int_equal (act_sqlite_vfs_wal_writes () - writes,
                      (uint64_t) ((bytes + 124 * 1024 - 1) / (124 * 1024)));
    //  Nothing is left held after a commit
    writes = act_sqlite_vfs_wal_writes ();
    assert_int_equal (act_sqlite_vfs_flush (db), 0);
    assert_int_equal (act_sqlite_vfs_wal_writes (), writes);
    zstr_free (&wal);
    sqlite3_close (db);
    s_assert_file (56, 3000);
}

//  Two commits on synchronous sync (the text): 50 rows of 500 bytes
static bool
s_two_commits (const void *sync)
{
    sqlite3 *db = s_open (ACT_SQLITE_VFS, (const char *) sync);
    int rc = s_exec (db, "BEGIN");
    rc |= s_insert (db, 0, 40, 500);
    rc |= s_exec (db, "COMMIT");
    rc |= s_insert (db, 40, 10, 500);
    return rc == SQLITE_OK;
}

//  A committed transaction is in the file when the commit returns, with
//  synchronous NORMAL (no sync to flush what the VFS holds) and FULL
static void
s_commit_survives (const char *sync)
{
    assert_true (s_in_child (s_two_commits, sync));
    s_assert_file (50, 500);
}

static void
test_a_commit_is_in_the_file_when_it_returns_normal (void **state)
{
    (void) state;
    s_commit_survives ("NORMAL");
}

static void
test_a_commit_is_in_the_file_when_it_returns_full (void **state)
{
    (void) state;
    s_commit_survives ("FULL");
}

//  A transaction that spills (cache of 10 pages) and writes its rows
//  twice; true when it commits and nothing is held after
static bool
s_spilled_commit (const void *unused)
{
    (void) unused;
    sqlite3 *db = s_open (ACT_SQLITE_VFS, "NORMAL");
    int rc = s_exec (db, "PRAGMA cache_size = 10");
    rc |= s_exec (db, "BEGIN");
    rc |= s_insert (db, 0, 400, 300);
    //  The same rows again: pages spilled already are written twice
    rc |= s_insert (db, 0, 400, 300);
    rc |= s_insert (db, 0, 20, 300);
    rc |= s_exec (db, "COMMIT");
    uint64_t writes = act_sqlite_vfs_wal_writes ();
    rc |= act_sqlite_vfs_flush (db);
    return rc == SQLITE_OK && act_sqlite_vfs_wal_writes () == writes;
}

//  A transaction larger than the page cache writes frames before its
//  commit, and a page it writes again is rewritten in place, its frame
//  headers after it rewritten at the commit (the commit frame's too):
//  all of it is in the file when the commit returns
static void
test_a_spilled_transaction_rewritten_in_place_is_in_the_file (void **state)
{
    (void) state;
    assert_true (s_in_child (s_spilled_commit, NULL));
    s_assert_file (400, 300);
}

//  10 rows committed, then a commit the file may not grow for; true
//  when that commit fails and the connection still reads the 10 rows
static bool
s_commit_past_the_limit (const void *unused)
{
    (void) unused;
    signal (SIGXFSZ, SIG_IGN);
    sqlite3 *db = s_open (ACT_SQLITE_VFS, "FULL");
    int rc = s_exec (db, "PRAGMA wal_autocheckpoint = 0");
    rc |= s_insert (db, 0, 10, 200);
    struct stat wal;
    char *name = zsys_sprintf ("%s-wal", s_path);
    rc |= stat (name, &wal);
    zstr_free (&name);
    struct rlimit limit = { (rlim_t) wal.st_size + 3 * S_FRAME, RLIM_INFINITY };
    rc |= setrlimit (RLIMIT_FSIZE, &limit);
    rc |= s_exec (db, "BEGIN");
    rc |= s_insert (db, 10, 60, 2000);
    int commit = s_exec (db, "COMMIT");
    s_exec (db, "ROLLBACK");
    //  The connection reads what was committed before
    long long rows = s_number (db, "SELECT COUNT(*) FROM t");
    return rc == 0 && commit != SQLITE_OK && rows == 10;
}

//  A write that fails (the file may not grow: RLIMIT_FSIZE) fails the
//  commit; the connection goes on with what was committed before, and the
//  file holds exactly that
static void
test_a_failed_write_fails_the_commit_and_keeps_the_file (void **state)
{
    (void) state;
    assert_true (s_in_child (s_commit_past_the_limit, NULL));
    s_assert_file (10, 200);
}

//  10 rows committed and synced (FULL), then, when unsynced (the text
//  "unsynced"), 30 rows more committed without a sync (NORMAL: the
//  frames are in the file, as when a commit's sync fails), and
//  act_sqlite_vfs_forget; true when each step returned what it should
static bool
s_commit_then_forget (const void *unsynced)
{
    sqlite3 *db = s_open (ACT_SQLITE_VFS, "FULL");
    int rc = s_exec (db, "BEGIN");
    rc |= s_insert (db, 0, 10, 200);
    rc |= s_exec (db, "COMMIT");
    if (unsynced) {
        rc |= s_exec (db, "PRAGMA synchronous = NORMAL");
        rc |= s_exec (db, "BEGIN");
        rc |= s_insert (db, 10, 30, 200);
        rc |= s_exec (db, "COMMIT");
    }
    rc |= act_sqlite_vfs_forget (db);
    //  Once is enough: a second call finds nothing more to forget
    rc |= act_sqlite_vfs_forget (db);
    return rc == SQLITE_OK;
}

//  The frames of a commit whose sync failed are not recovered when the
//  file is opened again (after a crash: the child's _exit); a commit that
//  was synced is never touched
static void
test_forget_drops_the_frames_written_since_the_sync (void **state)
{
    (void) state;
    assert_true (s_in_child (s_commit_then_forget, "unsynced"));
    s_assert_file (10, 200);
    unit_remove_sqlite (s_path);
    assert_true (s_in_child (s_commit_then_forget, NULL));
    s_assert_file (10, 200);
}

int
main (void)
{
    const struct CMUnitTest tests [] = {
        cmocka_unit_test_setup (test_a_commit_is_one_write_of_its_frames, s_setup),
        cmocka_unit_test_setup (test_a_commit_is_in_the_file_when_it_returns_normal, s_setup),
        cmocka_unit_test_setup (test_a_commit_is_in_the_file_when_it_returns_full, s_setup),
        cmocka_unit_test_setup (test_a_spilled_transaction_rewritten_in_place_is_in_the_file,
                                s_setup),
        cmocka_unit_test_setup (test_a_failed_write_fails_the_commit_and_keeps_the_file,
                                s_setup),
        cmocka_unit_test_setup (test_forget_drops_the_frames_written_since_the_sync, s_setup),
    };
    if (!mkdtemp (s_dir))
        return 1;
    s_path = zsys_sprintf ("%s/vfs.db", s_dir);
    if (act_sqlite_vfs_register ()) {
        fprintf (stderr, "cannot register the VFS\n");
        return 1;
    }
    int failed = cmocka_run_group_tests_name ("sqlite_vfs", tests, NULL, NULL);
    unit_remove_sqlite (s_path);
    rmdir (s_dir);
    zstr_free (&s_path);
    return failed;
}
