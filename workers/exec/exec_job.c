/*  =========================================================================
    exec_job - one task being served: its command, run with fork and exec
    in a process group of its own, the params on stdin and the meta in
    ACTD_* variables; its stdout and stderr read as they come; its deadline
    and the grace between SIGTERM and SIGKILL as timers.

    Nothing here blocks the worker's loop. A job ends in one place,
    exec_job_finish, from a watch (see actd_exec.h).
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "actd_exec.h"

extern char **environ;

#define S_READ_CHUNK        65536       //  Bytes read from a pipe at a time
#define S_READ_CHUNKS       16          //  Chunks read per wakeup: 1 MiB, the
                                        //  largest pipe buffer by default

//  The environment variables a task sets (removed from the inherited ones)
static const char *s_task_variables [] = {
    "ACTD_CONTEXT", "ACTD_CALL_ID", "ACTD_TASK_ID", "ACTD_ATTEMPT",
    "ACTD_DEADLINE_MS", "ACTD_INSTANCE", "ACTD_BRANCHES", "ACTD_DISCARD",
    "ACTD_ACTIVITY", "ACTD_META", "ACTD_BRANCH_FILE", "TRACEPARENT", NULL
};

//  Signal the command's process group (the command alone if it left it).
//  Only called while the command is not reaped, so its pid, which is also
//  the group's id, cannot belong to anyone else.
void
exec_job_signal (exec_job_t *self, int signal_number)
{
    if (kill (-self->pid, signal_number) == -1 && errno == ESRCH)
        kill (self->pid, signal_number);
}

//  True when the command has exited. It stays a zombie (unreaped) so its
//  group can still be signalled safely.
bool
exec_job_exited (exec_job_t *self)
{
    siginfo_t info;
    memset (&info, 0, sizeof info);
    if (waitid (P_PID, (id_t) self->pid, &info, WEXITED | WNOHANG | WNOWAIT) == -1)
        return errno == ECHILD;     //  Reaped by someone else: nothing to wait for
    return info.si_pid == self->pid;
}

//  The grace after SIGTERM is over: SIGKILL (timer callback)
static void
s_on_grace (act_worker_t *worker, void *arg)
{
    exec_job_t *self = (exec_job_t *) arg;
    self->grace_timer = -1;
    exec_job_signal (self, SIGKILL);
}

//  Stop the command for reason: SIGTERM to its group now, SIGKILL after the
//  grace. The first reason is the one the task is answered with. Safe from
//  any callback (it only signals and starts a timer).
static void
s_job_stop (exec_job_t *self, exec_stop_t reason)
{
    if (self->stop == EXEC_STOP_NONE)
        self->stop = reason;
    if (self->stopping)
        return;
    self->stopping = true;
    if (self->server->kill_grace_ms == 0)
        exec_job_signal (self, SIGKILL);
    else {
        exec_job_signal (self, SIGTERM);
        self->grace_timer = act_worker_timer (self->server->worker, self->server->kill_grace_ms,
                                              s_on_grace, self);
    }
}

//  The meta's deadline passed (timer callback)
static void
s_on_deadline (act_worker_t *worker, void *arg)
{
    exec_job_t *self = (exec_job_t *) arg;
    self->deadline_timer = -1;
    if (self->server->verbose)
        exec_log ("task %s: deadline of %lld ms passed, stopping it", self->task_id,
                  self->deadline_ms);
    s_job_stop (self, EXEC_STOP_TIMEOUT);
}

//  The broker cancelled the task (from the socket's callback)
static void
s_on_cancel (act_task_t *task, void *arg)
{
    exec_job_t *self = (exec_job_t *) arg;
    if (self->server->verbose)
        exec_log ("task %s: cancelled by the broker, stopping it", self->task_id);
    s_job_stop (self, EXEC_STOP_CANCELLED);
}

//  Keep size bytes of stdout, or, over --max-output, drop them all and stop
//  the command
static void
s_job_out (exec_job_t *self, const char *data, size_t size)
{
    if (self->overflow)
        return;                 //  Read and dropped until the command is gone
    if (self->out_size + size > self->server->max_output) {
        free (self->out);
        self->out = NULL;
        self->out_size = self->out_alloc = 0;
        self->overflow = true;
        s_job_stop (self, EXEC_STOP_TOO_LARGE);
        return;
    }
    if (self->out_size + size > self->out_alloc) {
        size_t alloc = self->out_alloc? self->out_alloc: 4096;
        while (alloc < self->out_size + size)
            alloc *= 2;
        self->out = realloc (self->out, alloc);
        self->out_alloc = alloc;
    }
    memcpy (self->out + self->out_size, data, size);
    self->out_size += size;
}

//  Keep the last EXEC_ERR_TAIL bytes of stderr
static void
s_job_err (exec_job_t *self, const char *data, size_t size)
{
    if (size >= EXEC_ERR_TAIL) {
        memcpy (self->err, data + size - EXEC_ERR_TAIL, EXEC_ERR_TAIL);
        self->err_size = EXEC_ERR_TAIL;
        return;
    }
    size_t keep = EXEC_ERR_TAIL - size;
    if (self->err_size > keep) {
        memmove (self->err, self->err + self->err_size - keep, keep);
        self->err_size = keep;
    }
    memcpy (self->err + self->err_size, data, size);
    self->err_size += size;
}

//  Read what fd (stdout or stderr) holds now, at most S_READ_CHUNKS chunks
//  so a command that writes without end cannot starve the loop. Returns 1
//  at end of file (or on an error), 0 when there may be more later.
static int
s_job_read (exec_job_t *self, int fd)
{
    static char buffer [S_READ_CHUNK];
    for (int chunk = 0; chunk < S_READ_CHUNKS; chunk++) {
        ssize_t size = read (fd, buffer, sizeof buffer);
        if (size > 0) {
            if (fd == self->out_fd)
                s_job_out (self, buffer, (size_t) size);
            else
                s_job_err (self, buffer, (size_t) size);
        }
        else
        if (size == 0)
            return 1;
        else
        if (errno == EINTR)
            chunk--;
        else
            return errno == EAGAIN || errno == EWOULDBLOCK? 0: 1;
    }
    return 0;
}

//  Stop watching *fd_p and close it (from a watch only)
static void
s_job_close (exec_job_t *self, int *fd_p)
{
    if (*fd_p != -1) {
        act_worker_unwatch (self->server->worker, *fd_p);
        close (*fd_p);
        *fd_p = -1;
    }
}

//  stdout or stderr is readable
static int
s_on_output (act_worker_t *worker, int fd, void *arg)
{
    exec_job_t *self = (exec_job_t *) arg;
    if (s_job_read (self, fd) == 0)
        return 0;
    s_job_close (self, fd == self->out_fd? &self->out_fd: &self->err_fd);
    if (self->out_fd == -1 && self->err_fd == -1) {
        //  Both closed: the command is exiting, or has closed them and
        //  goes on; its exit comes a moment after the end of file
        if (exec_job_exited (self))
            exec_job_finish (self);
        else
            exec_server_poll_soon (self->server);
    }
    return 0;
}

//  Free the job (its pipes are closed already) and remove its branch
//  file (a directory the command made there too, with all it holds);
//  null the pointer
static void
s_job_destroy (exec_job_t **self_p)
{
    exec_job_t *self = *self_p;
    if (self) {
        if (self->branch_file) {
            exec_remove_tree (self->branch_file);
            free (self->branch_file);
        }
        free (self->out);
        free (self->task_id);
        free (self);
        *self_p = NULL;
    }
}

//  The command has exited (it is a zombie): kill what it left in its group,
//  read what its pipes still hold, reap it, answer the task, forget the
//  job. From a watch only (it unwatches and cancels timers).
void
exec_job_finish (exec_job_t *self)
{
    exec_server_t *server = self->server;
    exec_job_signal (self, SIGKILL);
    if (self->out_fd != -1)
        s_job_read (self, self->out_fd);
    if (self->err_fd != -1)
        s_job_read (self, self->err_fd);
    s_job_close (self, &self->out_fd);
    s_job_close (self, &self->err_fd);
    int status = 0;
    pid_t reaped;
    while ((reaped = waitpid (self->pid, &status, 0)) == -1 && errno == EINTR)
        ;
    if (self->deadline_timer != -1)
        act_worker_cancel_timer (server->worker, self->deadline_timer);
    if (self->grace_timer != -1)
        act_worker_cancel_timer (server->worker, self->grace_timer);
    if (server->verbose) {
        if (reaped == self->pid && WIFEXITED (status))
            exec_log ("task %s: pid %d exited with status %d", self->task_id,
                      (int) self->pid, WEXITSTATUS (status));
        else
        if (reaped == self->pid && WIFSIGNALED (status))
            exec_log ("task %s: pid %d killed by signal %d", self->task_id,
                      (int) self->pid, WTERMSIG (status));
    }
    exec_answer (self, status, reaped == self->pid);
    zlistx_delete (server->jobs, self->handle);
    s_job_destroy (&self);
}

//  Write text (a NUL-terminated string) to a new private file, opened at
//  its start and already unlinked: the command's stdin. Returns the fd or -1.
static int
s_params_file (exec_server_t *server, uint64_t sequence, const char *text)
{
    char path [PATH_MAX];
    snprintf (path, sizeof path, "%s/%" PRIu64 ".params", server->tmpdir, sequence);
    int fd = open (path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd == -1)
        return -1;
    unlink (path);
    size_t size = strlen (text);
    for (size_t done = 0; done < size;) {
        ssize_t wrote = write (fd, text + done, size - done);
        if (wrote < 0 && errno == EINTR)
            continue;
        if (wrote <= 0) {
            close (fd);
            return -1;
        }
        done += (size_t) wrote;
    }
    if (lseek (fd, 0, SEEK_SET) == -1) {
        close (fd);
        return -1;
    }
    return fd;
}

//  The command's environment: the worker's own without the task variables,
//  then the task's. A NULL-terminated array of new strings.
static char **
s_environment (exec_job_t *self)
{
    act_task_t *task = self->task;
    json_t *meta = act_task_meta (task);
    size_t inherited = 0;
    while (environ [inherited])
        inherited++;
    char **env = calloc (inherited + 16, sizeof (char *));
    size_t count = 0;
    for (size_t index = 0; index < inherited; index++) {
        const char *entry = environ [index];
        bool ours = false;
        for (const char **name = s_task_variables; *name && !ours; name++) {
            size_t length = strlen (*name);
            ours = strncmp (entry, *name, length) == 0 && entry [length] == '=';
        }
        if (!ours)
            env [count++] = strdup (entry);
    }
    const char *context = act_task_context (task);
    const char *call_id = act_task_call_id (task);
    const char *instance = act_task_instance (task);
    const char *trace = act_task_trace (task);
    char *meta_text = act_json_dump (meta);
    env [count++] = zsys_sprintf ("ACTD_CONTEXT=%s", context? context: "");
    env [count++] = zsys_sprintf ("ACTD_CALL_ID=%s", call_id? call_id: "");
    env [count++] = zsys_sprintf ("ACTD_TASK_ID=%s", act_task_id (task));
    env [count++] = zsys_sprintf ("ACTD_ATTEMPT=%lld", act_task_attempt (task));
    env [count++] = zsys_sprintf ("ACTD_DEADLINE_MS=%lld", act_task_deadline_ms (task));
    if (instance)
        env [count++] = zsys_sprintf ("ACTD_INSTANCE=%s", instance);
    env [count++] = zsys_sprintf ("ACTD_BRANCHES=%lld", act_task_branches (task));
    env [count++] = zsys_sprintf ("ACTD_DISCARD=%d", act_task_discard (task)? 1: 0);
    env [count++] = zsys_sprintf ("ACTD_ACTIVITY=%s", act_task_activity (task));
    env [count++] = zsys_sprintf ("ACTD_META=%s", meta_text);
    env [count++] = zsys_sprintf ("ACTD_BRANCH_FILE=%s", self->branch_file);
    //  The call's trace context, where OpenTelemetry's environment
    //  carrier looks for it
    if (trace)
        env [count++] = zsys_sprintf ("TRACEPARENT=%s", trace);
    env [count] = NULL;
    free (meta_text);
    return env;
}

//  Free what s_environment made
static void
s_environment_free (char **env)
{
    for (size_t index = 0; env [index]; index++)
        free (env [index]);
    free (env);
}

//  Write number in decimal to fd (async-signal-safe, for the child)
static void
s_child_write_number (int fd, int number)
{
    char digits [16];
    size_t at = sizeof digits;
    unsigned value = number < 0? 0u: (unsigned) number;
    do {
        digits [--at] = (char) ('0' + value % 10);
        value /= 10;
    } while (value && at);
    if (write (fd, digits + at, sizeof digits - at) < 0)
        return;
}

//  In the forked child: die with the worker, become the leader of a new
//  process group, take the pipes as stdin, stdout and stderr, close every
//  other descriptor, exec. Only async-signal-safe calls: the worker has
//  other threads (ZeroMQ's).
static void
s_child (exec_server_t *server, int in, int out, int err, char **env, pid_t worker)
{
    //  SIGKILL when the worker dies, however it dies (SIGKILL, a crash): the
    //  broker gives the task to another worker, so the command must not go
    //  on. The kernel sends it when the thread that forked ends, the
    //  worker's main thread, which ends only with the process. Checked
    //  after setting it: the worker may have died before
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != worker)
        _exit (127);
    setpgid (0, 0);
    if (dup2 (in, 0) == -1 || dup2 (out, 1) == -1 || dup2 (err, 2) == -1)
        _exit (127);
    struct sigaction action;
    memset (&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset (&action.sa_mask);
    sigaction (SIGPIPE, &action, NULL);
    sigset_t none;
    sigemptyset (&none);
    sigprocmask (SIG_SETMASK, &none, NULL);
    bool closed = false;
#ifdef SYS_close_range
    closed = syscall (SYS_close_range, 3u, ~0u, 0u) == 0;
#endif
    for (int fd = 3; !closed && fd < server->max_fd; fd++)
        close (fd);
    execve (server->path, server->argv, env);
    int error = errno;
    const char *prefix = "actd-exec: cannot execute ";
    if (write (2, prefix, strlen (prefix)) < 0
    ||  write (2, server->path, strlen (server->path)) < 0
    ||  write (2, " (errno ", 8) < 0)
        _exit (127);
    s_child_write_number (2, error);
    if (write (2, ")\n", 2) < 0)
        _exit (127);
    _exit (127);
}

//  A new job for task, its files named by sequence; nothing started yet
static exec_job_t *
s_job_new (exec_server_t *server, act_task_t *task, uint64_t sequence)
{
    exec_job_t *self = calloc (1, sizeof *self);
    self->server = server;
    self->task = task;
    self->task_id = strdup (act_task_id (task));
    self->out_fd = self->err_fd = -1;
    self->deadline_timer = self->grace_timer = -1;
    self->deadline_ms = act_task_deadline_ms (task);
    self->branch_file = zsys_sprintf ("%s/%" PRIu64 ".branch", server->tmpdir, sequence);
    return self;
}

//  Fork the command with the params file as stdin and new pipes as stdout
//  and stderr, and keep the pipes' read ends. Returns the pid, or -1 with
//  message (size bytes) set and every descriptor closed.
static pid_t
s_job_spawn (exec_job_t *self, uint64_t sequence, char *message, size_t size)
{
    exec_server_t *server = self->server;
    char *params = act_json_dump (act_task_params (self->task));
    char *text = zsys_sprintf ("%s\n", params);
    free (params);
    int in = s_params_file (server, sequence, text);
    free (text);
    int out [2] = { -1, -1 };
    int err [2] = { -1, -1 };
    const char *problem = NULL;
    int error = 0;
    if (in == -1)
        problem = "cannot write the params file";
    else
    if (pipe2 (out, O_CLOEXEC) || pipe2 (err, O_CLOEXEC))
        problem = "cannot make pipes";
    if (problem)
        error = errno;
    pid_t pid = -1;
    if (!problem) {
        char **env = s_environment (self);
        pid_t worker = getpid ();
        pid = fork ();
        if (pid == 0)
            s_child (server, in, out [1], err [1], env, worker);
        error = errno;
        s_environment_free (env);
        if (pid == -1)
            problem = "cannot fork";
    }
    if (in != -1)
        close (in);
    if (out [1] != -1)
        close (out [1]);
    if (err [1] != -1)
        close (err [1]);
    if (problem) {
        snprintf (message, size, "%s: %s", problem, strerror (error));
        if (out [0] != -1)
            close (out [0]);
        if (err [0] != -1)
            close (err [0]);
        return -1;
    }
    self->out_fd = out [0];
    self->err_fd = err [0];
    return pid;
}

//  Start the command of task and return; the loop does the rest
exec_job_t *
exec_job_start (exec_server_t *server, act_task_t *task, uint64_t sequence)
{
    exec_job_t *self = s_job_new (server, task, sequence);
    char message [256];
    pid_t pid = s_job_spawn (self, sequence, message, sizeof message);
    if (pid == -1) {
        exec_log ("task %s: %s", self->task_id, message);
        act_task_fail (task, "spawn_failed", message, true);
        s_job_destroy (&self);
        return NULL;
    }
    setpgid (pid, pid);         //  Also here: signals may come before the child runs
    self->pid = pid;
    fcntl (self->out_fd, F_SETFL, fcntl (self->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl (self->err_fd, F_SETFL, fcntl (self->err_fd, F_GETFL) | O_NONBLOCK);
    self->handle = zlistx_add_end (server->jobs, self);
    act_worker_watch (server->worker, self->out_fd, s_on_output, self);
    act_worker_watch (server->worker, self->err_fd, s_on_output, self);
    if (self->deadline_ms > 0)
        self->deadline_timer = act_worker_timer (server->worker,
            self->deadline_ms > INT_MAX? INT_MAX: (int) self->deadline_ms, s_on_deadline, self);
    act_task_on_cancel (task, s_on_cancel, self);
    return self;
}

//  After the loop ended: SIGKILL what is left of the command, reap it,
//  close its pipes and free the job. Its task is not answered: the worker
//  has said DISCONNECT, and the broker gives it to another worker.
void
exec_job_kill (exec_job_t **self_p)
{
    exec_job_t *self = *self_p;
    exec_job_signal (self, SIGKILL);
    while (waitpid (self->pid, NULL, 0) == -1 && errno == EINTR)
        ;
    if (self->out_fd != -1)
        close (self->out_fd);
    if (self->err_fd != -1)
        close (self->err_fd);
    s_job_destroy (self_p);
}
