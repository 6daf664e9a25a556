/*  =========================================================================
    exec_server - the worker glue of actd-exec: the worker library's loop
    serves each task by starting a job, and the exits of the commands are
    found without blocking that loop.

    There is no SIGCHLD handler: a signal makes the loop's zmq_poll fail
    with EINTR, which ends zloop_start. An exit is found by a job when its
    pipes reach end of file, and by a check every EXEC_POLL_MAX_MS for a
    command that exits while a process it started still holds its pipes;
    that check kicks a self-pipe so the job ends from a watch.
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include "actd_exec.h"

//  Wake s_on_kick: a timer found an exited command
static void
s_kick (exec_server_t *self)
{
    char byte = 1;
    if (write (self->kick [1], &byte, 1) < 0)
        return;                 //  Full: a wakeup is pending anyway
}

//  Check the commands for exits (timer callback). A command may exit while
//  a process it started holds its pipes, so this runs while any command
//  does: every EXEC_POLL_MAX_MS, sooner after a job's pipes closed.
static void
s_on_poll (act_worker_t *worker, void *arg)
{
    exec_server_t *self = (exec_server_t *) arg;
    self->poll_timer = -1;
    bool exited = false;
    for (exec_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
        if (exec_job_exited (job))
            exited = true;
    if (exited)
        s_kick (self);
    if (zlistx_size (self->jobs)) {
        self->poll_delay = self->poll_delay * 2 < EXEC_POLL_MAX_MS? self->poll_delay * 2
                                                                   : EXEC_POLL_MAX_MS;
        self->poll_timer = act_worker_timer (worker, self->poll_delay, s_on_poll, self);
    }
}

//  Check for exits within EXEC_POLL_MIN_MS, then less and less often (from a
//  watch only: it cancels a timer)
void
exec_server_poll_soon (exec_server_t *self)
{
    if (self->poll_timer != -1)
        act_worker_cancel_timer (self->worker, self->poll_timer);
    self->poll_delay = EXEC_POLL_MIN_MS;
    self->poll_timer = act_worker_timer (self->worker, self->poll_delay, s_on_poll, self);
}

//  A timer found an exited command: finish every job whose command exited
static int
s_on_kick (act_worker_t *worker, int fd, void *arg)
{
    exec_server_t *self = (exec_server_t *) arg;
    char buffer [64];
    while (read (fd, buffer, sizeof buffer) > 0)
        ;
    exec_job_t *job = zlistx_first (self->jobs);
    while (job) {
        exec_job_t *next = zlistx_next (self->jobs);
        if (exec_job_exited (job))
            exec_job_finish (job);
        job = next;
    }
    return 0;
}

//  Serve a task: start its command and return; the loop does the rest
static void
s_on_task (act_task_t *task, void *arg)
{
    exec_server_t *server = (exec_server_t *) arg;
    uint64_t sequence = ++server->sequence;
    //  Each broker of the list gives up to --capacity tasks. More commands
    //  than that are running when the library reconnected (DISCONNECT, or
    //  a silent broker): the broker gave the older tasks to others, their
    //  commands are being stopped and their answers will be dropped
    size_t brokers = act_worker_brokers (server->worker);
    if (zlistx_size (server->jobs) >= server->capacity * brokers)
        exec_log ("task %s: %zu commands running already (--capacity %zu, %zu broker%s): "
                  "some are of a connection before a reconnect, stopped but not exited "
                  "yet; running this one too", act_task_id (task), zlistx_size (server->jobs),
                  server->capacity, brokers, brokers == 1? "": "s");
    exec_job_t *job = exec_job_start (server, task, sequence);
    if (!job)
        return;                 //  Answered spawn_failed
    if (server->poll_timer == -1) {
        server->poll_delay = EXEC_POLL_MAX_MS;
        server->poll_timer = act_worker_timer (server->worker, server->poll_delay,
                                               s_on_poll, server);
    }
    if (server->verbose)
        exec_log ("task %s (%s, attempt %lld): started pid %d", job->task_id,
                  act_task_activity (task), act_task_attempt (task), (int) job->pid);
}

//  After the loop ended (SIGTERM, SIGINT): stop every command as a timeout
//  would (SIGTERM, SIGKILL after the grace), reap them, free the jobs. The
//  tasks are not answered: the worker has said DISCONNECT, and the broker
//  gives them to another worker.
static void
s_server_stop_jobs (exec_server_t *self)
{
    if (zlistx_size (self->jobs) == 0)
        return;
    exec_log ("stopping %zu running command(s)", zlistx_size (self->jobs));
    for (exec_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
        exec_job_signal (job, SIGTERM);
    int64_t deadline = zclock_mono () + self->kill_grace_ms;
    while (zclock_mono () < deadline) {
        bool running = false;
        for (exec_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
            if (!exec_job_exited (job))
                running = true;
        if (!running)
            break;
        zclock_sleep (10);
    }
    exec_job_t *job;
    while ((job = zlistx_detach (self->jobs, NULL)))
        exec_job_kill (&job);
}

//  Make the private directory and the kick pipe. Returns 0, or -1 with the
//  reason on stderr (the directory removed again).
static int
s_server_open (exec_server_t *self)
{
    const char *tmp = getenv ("TMPDIR");
    self->tmpdir = zsys_sprintf ("%s/actd-exec.XXXXXX", tmp && *tmp? tmp: "/tmp");
    if (!mkdtemp (self->tmpdir)) {
        fprintf (stderr, "actd-exec: cannot make a directory %s: %s\n", self->tmpdir,
                 strerror (errno));
        return -1;
    }
    if (pipe2 (self->kick, O_CLOEXEC | O_NONBLOCK)) {
        fprintf (stderr, "actd-exec: cannot make a pipe: %s\n", strerror (errno));
        rmdir (self->tmpdir);
        return -1;
    }
    return 0;
}

//  Set the server's worker up as options say: CURVE, capacity, the
//  activities and their tool. Returns 0, or -1 with the reason on stderr.
static int
s_server_worker (exec_server_t *self, exec_options_t *options)
{
    zlistx_t *activities = options->activities;
    //  Within the 256 bytes READY takes, however long the activity's name
    self->name = zsys_sprintf ("actd-exec:%.246s", (char *) zlistx_first (activities));
    self->worker = act_worker_new (options->endpoint, options->name? options->name: self->name);
    if (!self->worker) {
        fprintf (stderr, "actd-exec: --name takes 1 to %d bytes\n", ACT_WORKER_MAX_NAME);
        return -1;
    }
    //  On SIGTERM, actd-exec stops its commands at once and says
    //  DISCONNECT (its README): no grace for them to finish
    act_worker_set_grace (self->worker, 0);
    //  A result up to --max-output as JSON is sent (s_job_succeed checks
    //  it): the library's own limit, actd's default, must not refuse it
    //  when both were raised, nor cut a failure when --max-output is small
    size_t most = (size_t) options->max_output;
    act_worker_set_max_message_bytes (self->worker, most > ACT_WORKER_MAX_MESSAGE_BYTES
                                                    ? most: ACT_WORKER_MAX_MESSAGE_BYTES);
    int rc = options->curve_server? act_worker_set_curve (self->worker, options->curve_server,
                                                          options->curve_cert): 0;
    if (rc == -2)
        fprintf (stderr, "actd-exec: %s: '%s' is not a CURVE public key (40 characters of "
                 "Z85, as actctl keygen prints it)\n", options->curve_source,
                 options->curve_server);
    else
    if (rc)
        fprintf (stderr, "actd-exec: %s: cannot load the certificate %s\n",
                 options->cert_source, options->curve_cert);
    if (rc)
        return -1;
    act_worker_set_capacity (self->worker, (size_t) options->capacity);
    act_worker_set_heartbeat (self->worker, (int) options->heartbeat, (int) options->liveness);
    act_worker_set_lang (self->worker, "exec");
    bool tool = options->description || options->params_schema || options->output_const
             || options->output_pattern;
    for (char *activity = zlistx_first (activities); activity; activity = zlistx_next (activities)) {
        act_worker_serve (self->worker, activity, s_on_task, self);
        //  Checked by the command line as the broker checks them (what
        //  fails here is a mistake of that check)
        if (tool && act_worker_declare (self->worker, activity, options->description,
                                        options->params_schema, options->output_const,
                                        options->output_pattern)) {
            fprintf (stderr, "actd-exec: the tool options are not what actd takes\n");
            return -1;
        }
    }
    act_worker_watch (self->worker, self->kick [0], s_on_kick, self);
    if (act_worker_connect (self->worker)) {
        fprintf (stderr, "actd-exec: %s: ZeroMQ refuses the endpoint '%s' (%s)\n",
                 options->endpoint_source, options->endpoint, zmq_strerror (errno));
        return -1;
    }
    return 0;
}

//  A server for options, its worker connected
exec_server_t *
exec_server_new (exec_options_t *options, int *status)
{
    exec_server_t *self = calloc (1, sizeof *self);
    self->path = options->path;
    self->argv = options->argv;
    self->capacity = (size_t) options->capacity;
    self->max_output = (size_t) options->max_output;
    self->kill_grace_ms = (int) options->grace;
    self->verbose = options->verbose;
    self->poll_timer = -1;
    self->kick [0] = self->kick [1] = -1;
    long open_max = sysconf (_SC_OPEN_MAX);
    self->max_fd = open_max > 0 && open_max < 65536? (int) open_max: 65536;
    self->jobs = zlistx_new ();
    self->scan = act_scan_new ();
    *status = 1;
    if (s_server_open (self)) {
        free (self->tmpdir);
        self->tmpdir = NULL;
        exec_server_destroy (&self);
        return NULL;
    }
    if (s_server_worker (self, options)) {
        *status = 2;
        exec_server_destroy (&self);
    }
    return self;
}

//  Remove one entry of a tree, deepest first (nftw callback)
static int
s_remove_entry (const char *path, const struct stat *info, int type, struct FTW *where)
{
    if (remove (path))
        exec_log ("cannot remove %s: %s", path, strerror (errno));
    return 0;                   //  Go on: remove what can be
}

//  Remove path and, when it is a directory, all it holds
int
exec_remove_tree (const char *path)
{
    if (remove (path) == 0 || errno == ENOENT)
        return 0;
    if (errno != ENOTEMPTY && errno != EEXIST)
        return -1;
    //  FTW_PHYS: a symbolic link is removed, never followed
    nftw (path, s_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return access (path, F_OK) == 0? -1: 0;
}

//  Stop the commands still running, then free the worker and the rest
void
exec_server_destroy (exec_server_t **self_p)
{
    exec_server_t *self = *self_p;
    if (self) {
        s_server_stop_jobs (self);
        act_worker_destroy (&self->worker);
        if (self->kick [0] != -1) {
            close (self->kick [0]);
            close (self->kick [1]);
        }
        //  Whatever a command left there (it may write beside its
        //  ACTD_BRANCH_FILE)
        if (self->tmpdir)
            exec_remove_tree (self->tmpdir);
        free (self->tmpdir);
        act_scan_destroy (&self->scan);
        free (self->name);
        zlistx_destroy (&self->jobs);
        free (self);
        *self_p = NULL;
    }
}
