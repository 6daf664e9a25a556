/*  =========================================================================
    bench_util - what the broker benchmarks share: a real actd started on
    free ports with its store in a temporary directory, a fast C worker in
    a thread, STATS, RSS and percentiles.

    Benchmarks print figures; nothing here asserts a timing.
    ========================================================================= */

#ifndef BENCH_UTIL_H_INCLUDED
#define BENCH_UTIL_H_INCLUDED

#include <czmq.h>
#include <jansson.h>
#include <sys/types.h>
#include "actd/act.h"
#include "actd/act_client.h"
#include "actd/act_worker.h"

//  The UTF-8 dagger that starts a reference
#define BENCH_DAGGER "\xE2\x80\xA0"

//  A running actd
typedef struct {
    pid_t pid;                  //  Its process
    char client [64];           //  Client endpoint
    char worker [64];           //  Worker endpoint
    char log [512];             //  Its stderr and stdout
    int64_t started;            //  zclock_usecs () just before fork
} bench_actd_t;

//  The actd next to this program (same bin/ folder), or $ACTD_BIN. Exits
//  with a message when there is none. The caller frees.
char *bench_actd_path (void);

//  A new temporary directory (the caller frees the name); exits on failure.
char *bench_tmpdir (const char *tag);

//  Remove a directory and what it holds.
void bench_rmdir (const char *dir);

//  Start actd (path actd) with its store at db (a file or ":memory:"),
//  sync "full" or "normal", on free ports, logging to dir/actd-N.log.
//  config_extra: more ZPL lines (each ending with a newline), or NULL:
//  4-space indented lines go to the "server" section; a line at the
//  margin starts another section ("defaults"). Does not wait.
bench_actd_t *bench_actd_start (const char *actd, const char *dir, const char *db,
                                const char *sync, const char *config_extra);

//  Microseconds from the actd's start to its first PONG (a DEALER that
//  reconnects every 10 ms sends one PING), or -1 after timeout_ms.
int64_t bench_actd_pong (bench_actd_t *self, int timeout_ms);

//  SIGTERM, wait (SIGKILL after 30 s), print the log tail when it did not
//  exit 0, null the pointer. Returns the exit status (or -1).
int bench_actd_stop (bench_actd_t **self_p);

//  Print the last lines of the actd's log to stderr.
void bench_actd_log_tail (bench_actd_t *self, int lines);

//  Seconds on the monotonic clock.
double bench_now (void);

//  VmRSS of process pid in kB, or -1.
long bench_rss_kb (pid_t pid);

//  CPU time (user + system) process pid has used, in ms, or -1.
double bench_cpu_ms (pid_t pid);

//  Jiffies the machine has spent, all CPUs: busy (not idle nor iowait) and
//  in total, from /proc/stat. Two readings give how busy it was between.
void bench_machine_jiffies (unsigned long long *busy, unsigned long long *total);

//  STATS, or exits with a message. A new reference.
json_t *bench_stats (act_client_t *client);

//  An integer at a path of a JSON object, such as "calls", "ok".
long long bench_json_int (json_t *object, const char *a, const char *b);

//  A C worker in a thread with capacity tasks at once, serving:
//      echo  params -> params
//      step  params -> {"i": params.i}   (a small result, whatever the params)
typedef struct _bench_worker_t bench_worker_t;
bench_worker_t *bench_worker_start (const char *endpoint, size_t capacity);
//  The same, declaring schema (JSON text) as the params of echo's tool.
bench_worker_t *bench_worker_start_tool (const char *endpoint, size_t capacity,
                                         const char *schema);
void bench_worker_stop (bench_worker_t **self_p);

//  Poll STATS until the worker's READY has been seen (a worker serving
//  activity is listed), or exit after timeout_ms.
void bench_wait_worker (act_client_t *client, const char *activity, int timeout_ms);

//  The p-th percentile (0..100) of n values (sorts them in place).
double bench_percentile (double *values, size_t n, double p);

//  A request id "c<N>" as N, or 0.
uint64_t bench_request_number (const char *request);

#endif
