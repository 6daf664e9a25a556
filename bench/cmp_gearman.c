/*  =========================================================================
    cmp_gearman - the Gearman side of bench/compare.sh (libgearman): an
    echo worker and the clients, with the payload of the actd runs.

    Modes:
      worker    --threads T connections to gearmand, each serving "echo"
                (one job at a time per connection, as Gearman workers
                work): T is the worker's capacity. Publishes the number of
                jobs done in --slot of the --counter file.
      do        foreground, one job at a time: gearman_client_do.
      fg        foreground, pipelined: gearman_client_add_task with at
                most --window jobs outstanding (a finished job's complete
                callback adds the next), gearman_client_run_tasks.
      dobg      background, one submission at a time:
                gearman_client_do_background; done when the workers have
                done every job (the counter file).
      bg        background, pipelined: gearman_client_add_task_background
                in batches, at most --window jobs submitted and not yet
                done by a worker; done when the workers have done them all.

    Client modes print one line:
      RESULT mode=.. calls=N seconds=S rate=JOBS_PER_S p50_ms=.. p99_ms=..
             errors=E cpu_us=GEARMAND_CPU_US_PER_JOB
    (p50/p99: do, fg: send -> result; dobg: the submission round trip;
    bg: none, 0.)

    cmp_gearman MODE --port P [--threads T] [--counter FILE] [--slot N]
                [--calls N] [--window W] [--size BYTES] [--warmup N] [--pid PID]
    ========================================================================= */

#include <libgearman/gearman.h>
#include <pthread.h>
#include "cmp_common.h"

typedef struct {
    const char *mode;
    in_port_t port;
    size_t threads, slot, calls, window, size, warmup;
    const char *counter_path;
    int pid;
} s_options_t;

static s_options_t s_options = { NULL, 0, 64, 0, 20000, 1000, 200, SIZE_MAX, NULL, 0 };
static _Atomic uint64_t *s_counter = NULL;


//  --------------------------------------------------------------------------
//  Worker

static void *
s_echo (gearman_job_st *job, void *context, size_t *result_size, gearman_return_t *ret_ptr)
{
    size_t size = gearman_job_workload_size (job);
    void *result = malloc (size? size: 1);
    memcpy (result, gearman_job_workload (job), size);
    *result_size = size;
    *ret_ptr = GEARMAN_SUCCESS;
    if (s_counter)
        atomic_fetch_add_explicit (&s_counter [s_options.slot], 1, memory_order_relaxed);
    return result;
}

static void *
s_worker_thread (void *arg)
{
    gearman_worker_st *worker = gearman_worker_create (NULL);
    if (!worker || gearman_worker_add_server (worker, "127.0.0.1", s_options.port)
                   != GEARMAN_SUCCESS
    ||  gearman_worker_add_function (worker, "echo", 0, s_echo, NULL) != GEARMAN_SUCCESS) {
        fprintf (stderr, "cmp_gearman: cannot set up a worker\n");
        exit (1);
    }
    while (true) {
        gearman_return_t rc = gearman_worker_work (worker);
        if (rc != GEARMAN_SUCCESS && rc != GEARMAN_IO_WAIT && rc != GEARMAN_TIMEOUT) {
            fprintf (stderr, "cmp_gearman: worker: %s\n", gearman_worker_error (worker));
            usleep (100000);
        }
    }
    return NULL;
}

static int
s_worker (void)
{
    pthread_t *threads = calloc (s_options.threads, sizeof (pthread_t));
    for (size_t t = 0; t < s_options.threads; t++)
        pthread_create (&threads [t], NULL, s_worker_thread, NULL);
    //  Until killed
    for (size_t t = 0; t < s_options.threads; t++)
        pthread_join (threads [t], NULL);
    return 0;
}


//  --------------------------------------------------------------------------
//  Clients

typedef struct {
    double seconds, rate, p50, p99;
    size_t errors;
} s_result_t;

static gearman_client_st *
s_client (void)
{
    gearman_client_st *client = gearman_client_create (NULL);
    if (!client || gearman_client_add_server (client, "127.0.0.1", s_options.port)
                   != GEARMAN_SUCCESS) {
        fprintf (stderr, "cmp_gearman: cannot set up a client\n");
        exit (1);
    }
    gearman_client_set_timeout (client, 60000);
    return client;
}

//  State of a pipelined foreground run (the complete callback adds the next)
static struct {
    gearman_client_st *client;
    size_t calls, sent, done;
    double *sent_at, *took;
    size_t measured, errors;
    char *payload;
} s_fg;

static void
s_fg_add (void)
{
    size_t size = cmp_payload (s_fg.payload, s_options.size, s_fg.sent, true, "g");
    gearman_return_t rc;
    s_fg.sent_at [s_fg.sent] = cmp_now ();
    gearman_client_add_task (s_fg.client, NULL, (void *) (uintptr_t) s_fg.sent, "echo", NULL,
                             s_fg.payload, size, &rc);
    if (rc != GEARMAN_SUCCESS) {
        fprintf (stderr, "cmp_gearman: add_task: %s\n", gearman_client_error (s_fg.client));
        exit (1);
    }
    s_fg.sent++;
}

static gearman_return_t
s_fg_complete (gearman_task_st *task)
{
    size_t index = (size_t) (uintptr_t) gearman_task_context (task);
    s_fg.took [s_fg.measured++] = (cmp_now () - s_fg.sent_at [index]) * 1000;
    if (gearman_task_data_size (task) < 10)
        s_fg.errors++;
    s_fg.done++;
    if (s_fg.sent < s_fg.calls)
        s_fg_add ();
    return GEARMAN_SUCCESS;
}

static gearman_return_t
s_fg_fail (gearman_task_st *task)
{
    s_fg.errors++;
    s_fg.done++;
    if (s_fg.sent < s_fg.calls)
        s_fg_add ();
    return GEARMAN_SUCCESS;
}

//  Wait until the workers have done target jobs (counter sum)
static void
s_wait_counter (uint64_t target)
{
    double deadline = cmp_now () + 60;
    uint64_t last = 0;
    while (cmp_counter_sum (s_counter) < target) {
        uint64_t now = cmp_counter_sum (s_counter);
        if (now != last) {
            last = now;
            deadline = cmp_now () + 60;
        }
        if (cmp_now () > deadline) {
            fprintf (stderr, "cmp_gearman: workers stuck at %llu of %llu jobs\n",
                     (unsigned long long) now, (unsigned long long) target);
            exit (1);
        }
        usleep (200);
    }
}

//  What one client run works with, shared by the helpers of its modes
typedef struct {
    gearman_client_st *client;  //  Its client
    char *payload;              //  Room for a job's payload
    double *sent_at;            //  Per job: when it was sent (fg)
    double *took;               //  The latencies measured (ms)
    size_t measured;            //  Values in took
    size_t errors;              //  Jobs that failed
    uint64_t counter_start;     //  The workers' counter sum before the run
} s_state_t;

//  do: calls jobs, one at a time, with gearman_client_do
static void
s_run_do (s_state_t *self, size_t calls)
{
    for (size_t i = 0; i < calls; i++) {
        size_t size = cmp_payload (self->payload, s_options.size, i, true, "g");
        size_t result_size = 0;
        gearman_return_t rc;
        double sent = cmp_now ();
        void *value = gearman_client_do (self->client, "echo", NULL, self->payload, size,
                                         &result_size, &rc);
        self->took [self->measured++] = (cmp_now () - sent) * 1000;
        if (rc != GEARMAN_SUCCESS || result_size != size)
            self->errors++;
        free (value);
    }
}

//  fg: calls jobs pipelined, at most --window outstanding, until every
//  one has completed or failed; exits when run_tasks fails
static void
s_run_fg (s_state_t *self, size_t calls)
{
    gearman_client_st *client = self->client;
    gearman_client_add_options (client, GEARMAN_CLIENT_FREE_TASKS);
    gearman_client_set_complete_fn (client, s_fg_complete);
    gearman_client_set_fail_fn (client, s_fg_fail);
    memset (&s_fg, 0, sizeof s_fg);
    s_fg.client = client;
    s_fg.calls = calls;
    s_fg.sent_at = self->sent_at;
    s_fg.took = self->took;
    s_fg.payload = self->payload;
    while (s_fg.sent < calls && s_fg.sent < s_options.window)
        s_fg_add ();
    while (s_fg.done < calls) {
        gearman_return_t rc = gearman_client_run_tasks (client);
        if (rc != GEARMAN_SUCCESS) {
            fprintf (stderr, "cmp_gearman: run_tasks: %s\n", gearman_client_error (client));
            exit (1);
        }
    }
    self->measured = s_fg.measured;
    self->errors = s_fg.errors;
}

//  dobg: calls background jobs, one submission at a time, then wait until
//  the workers have done them
static void
s_run_dobg (s_state_t *self, size_t calls)
{
    for (size_t i = 0; i < calls; i++) {
        size_t size = cmp_payload (self->payload, s_options.size, i, false, "g");
        double sent = cmp_now ();
        gearman_return_t rc = gearman_client_do_background (self->client, "echo", NULL,
                                                            self->payload, size, NULL);
        self->took [self->measured++] = (cmp_now () - sent) * 1000;
        if (rc != GEARMAN_SUCCESS) {
            if (self->errors++ == 0)
                fprintf (stderr, "cmp_gearman: do_background: %s\n",
                         gearman_client_error (self->client));
        }
    }
    s_wait_counter (self->counter_start + calls - self->errors);
}

//  bg: calls background jobs in batches, at most --window submitted and
//  not yet done by a worker, then wait until the workers have done them;
//  exits when run_tasks fails
static void
s_run_bg (s_state_t *self, size_t calls)
{
    gearman_client_st *client = self->client;
    gearman_client_add_options (client, GEARMAN_CLIENT_FREE_TASKS);
    size_t sent = 0;
    while (sent < calls) {
        uint64_t done = cmp_counter_sum (s_counter) - self->counter_start + self->errors;
        size_t room = sent - done < s_options.window? s_options.window - (sent - done): 0;
        if (room == 0) {
            usleep (200);
            continue;
        }
        for (size_t i = 0; i < room && sent < calls; i++, sent++) {
            size_t size = cmp_payload (self->payload, s_options.size, sent, false, "g");
            gearman_return_t rc;
            gearman_client_add_task_background (client, NULL, NULL, "echo", NULL,
                                                self->payload, size, &rc);
            if (rc != GEARMAN_SUCCESS && self->errors++ == 0)
                fprintf (stderr, "cmp_gearman: add_task_background: %s\n",
                         gearman_client_error (client));
        }
        gearman_return_t rc = gearman_client_run_tasks (client);
        if (rc != GEARMAN_SUCCESS) {
            fprintf (stderr, "cmp_gearman: run_tasks: %s\n", gearman_client_error (client));
            exit (1);
        }
    }
    s_wait_counter (self->counter_start + calls - self->errors);
}

//  One run of calls jobs in the mode of s_options
static s_result_t
s_run (size_t calls)
{
    s_result_t result = { 0 };
    const char *mode = s_options.mode;
    s_state_t run = { 0 };
    run.client = s_client ();
    run.payload = malloc (s_options.size + 512);
    run.sent_at = calloc (calls, sizeof (double));
    run.took = calloc (calls, sizeof (double));
    run.counter_start = s_counter? cmp_counter_sum (s_counter): 0;
    double start = cmp_now ();
    if (!strcmp (mode, "do"))
        s_run_do (&run, calls);
    else
    if (!strcmp (mode, "fg"))
        s_run_fg (&run, calls);
    else
    if (!strcmp (mode, "dobg"))
        s_run_dobg (&run, calls);
    else
        //  bg: batches of background submissions, at most window not done
        s_run_bg (&run, calls);
    result.seconds = cmp_now () - start;
    result.errors = run.errors;
    result.rate = calls / result.seconds;
    result.p50 = cmp_percentile (run.took, run.measured, 50);
    result.p99 = cmp_percentile (run.took, run.measured, 99);
    gearman_client_free (run.client);
    free (run.payload);
    free (run.sent_at);
    free (run.took);
    return result;
}

int
main (int argc, char *argv [])
{
    if (argc < 2) {
        fprintf (stderr, "usage: cmp_gearman worker|do|fg|dobg|bg --port P [options]\n");
        return 2;
    }
    s_options.mode = argv [1];
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *name = argv [i], *value = argv [i + 1];
        if (!strcmp (name, "--port"))
            s_options.port = (in_port_t) atoi (value);
        else if (!strcmp (name, "--threads"))
            s_options.threads = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--slot"))
            s_options.slot = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--calls"))
            s_options.calls = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--window"))
            s_options.window = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--size"))
            s_options.size = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--warmup"))
            s_options.warmup = strtoul (value, NULL, 10);
        else if (!strcmp (name, "--counter"))
            s_options.counter_path = value;
        else if (!strcmp (name, "--pid"))
            s_options.pid = atoi (value);
        else {
            fprintf (stderr, "cmp_gearman: unknown option %s\n", name);
            return 2;
        }
    }
    const char *mode = s_options.mode;
    bool known = !strcmp (mode, "worker") || !strcmp (mode, "do") || !strcmp (mode, "fg")
              || !strcmp (mode, "dobg") || !strcmp (mode, "bg");
    bool background = !strcmp (mode, "dobg") || !strcmp (mode, "bg");
    if (!known || !s_options.port || s_options.slot >= CMP_SLOTS || s_options.threads < 1
    ||  s_options.calls < 1 || s_options.window < 1
    ||  ((background || !strcmp (mode, "worker")) && !s_options.counter_path)) {
        fprintf (stderr, "cmp_gearman: bad arguments (background modes and the worker need "
                 "--counter)\n");
        return 2;
    }
    if (s_options.counter_path)
        s_counter = cmp_counter_map (s_options.counter_path);
    if (!strcmp (mode, "worker"))
        return s_worker ();
    if (s_options.warmup == SIZE_MAX)
        s_options.warmup = s_options.calls / 10 > 0? s_options.calls / 10: 1;
    if (s_options.warmup)
        s_run (s_options.warmup);
    double cpu_start = cmp_cpu_ms (s_options.pid);
    s_result_t r = s_run (s_options.calls);
    double cpu_us = s_options.pid? (cmp_cpu_ms (s_options.pid) - cpu_start) * 1000
                                   / s_options.calls: 0;
    printf ("RESULT mode=%s calls=%zu seconds=%.3f rate=%.1f p50_ms=%.3f p99_ms=%.3f "
            "errors=%zu cpu_us=%.1f\n", mode, s_options.calls, r.seconds, r.rate, r.p50,
            r.p99, r.errors, cpu_us);
    return 0;
}
