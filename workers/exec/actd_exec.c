/*  =========================================================================
    actd-exec - serves any command as an activity (PROTOCOL.md section 2).

    actd-exec --activity NAME [options] -- CMD [ARGS...]

    Each task runs CMD once, with fork and exec (no shell), in a process
    group of its own: the params JSON on stdin, the meta in ACTD_*
    environment variables. Its stdout is the result, its exit status says
    whether it worked, its stderr's tail is the message of a failure. The
    usage text (s_usage, --help) and README.md say the whole contract.

    Nothing here blocks the worker's loop, so it heartbeats however long a
    command runs: the child's pipes are watched, its exit is found by
    polling (no SIGCHLD handler: a signal makes the loop's zmq_poll fail
    with EINTR, which ends zloop_start), the deadline and the kill grace
    are timers, CANCEL comes through act_task_on_cancel.

    A job ends in one place: timer callbacks only send signals and start
    timers, and whatever ends a job (cancelling its timers, unwatching its
    pipes, answering) runs from a watch: a pipe's end of file, or the
    "kick" self-pipe a timer writes to when it finds that a command has
    exited. (The worker library marks a cancelled timer's hook dead and
    frees it after the pass, so cancelling a timer due in the same pass is
    safe; the single ending keeps the order of a job's last steps plain.)
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "actd/act_json.h"
#include "actd/act_worker.h"

extern char **environ;

#define S_ERR_TAIL          2048        //  Bytes of stderr a failure's message keeps
#define S_READ_CHUNK        65536       //  Bytes read from a pipe at a time
#define S_READ_CHUNKS       16          //  Chunks read per wakeup: 1 MiB, the
                                        //  largest pipe buffer by default
#define S_POLL_MIN_MS       1           //  First exit check once a job's pipes closed
#define S_POLL_MAX_MS       100         //  Exit checks while any command runs
#define S_MAX_BRANCH        1000000     //  Largest branch number the broker takes
#define S_DEFAULT_OUTPUT    1048576     //  --max-output: max_message_bytes' default
#define S_DEFAULT_GRACE     2000        //  --kill-grace-ms

//  Why the worker stopped a command, if it did: this, not the command's
//  exit status, is then the task's answer
typedef enum {
    S_STOP_NONE,                //  Not stopped: its own exit decides
    S_STOP_CANCELLED,           //  The broker sent CANCEL
    S_STOP_TIMEOUT,             //  The meta's deadline_ms passed
    S_STOP_TOO_LARGE            //  Its stdout went over --max-output
} s_stop_t;

typedef struct _s_server_t s_server_t;

//  One task being served: a running command
typedef struct {
    s_server_t *server;         //  Owner
    act_task_t *task;           //  The task it answers (the library frees it)
    char *task_id;              //  Copy of the task id, for logs
    pid_t pid;                  //  The command, leader of its own process group
    int out_fd;                 //  Read end of its stdout, -1 once closed
    int err_fd;                 //  Read end of its stderr, -1 once closed
    char *out;                  //  Its stdout so far
    size_t out_size;            //  Bytes in out
    size_t out_alloc;           //  Bytes allocated for out
    char err [S_ERR_TAIL];      //  The last bytes of its stderr
    size_t err_size;            //  Bytes in err
    char *branch_file;          //  ACTD_BRANCH_FILE of this run
    long long deadline_ms;      //  The meta's deadline_ms (0: none)
    int deadline_timer;         //  Deadline timer id, -1 when none
    int grace_timer;            //  SIGKILL timer id, -1 when none
    s_stop_t stop;              //  Why the worker stopped it, if it did
    bool stopping;              //  SIGTERM was sent
    bool overflow;              //  Stdout went over --max-output: dropped
    void *handle;               //  Its place in server->jobs
} s_job_t;

struct _s_server_t {
    act_worker_t *worker;       //  The worker library: loop, socket, heartbeats
    char *path;                 //  CMD, found on PATH when it has no slash
    char **argv;                //  CMD and ARGS (main's argv)
    size_t capacity;            //  --capacity: commands at once
    size_t max_output;          //  --max-output: bytes of stdout and of the result
    int kill_grace_ms;          //  --kill-grace-ms: SIGTERM to SIGKILL
    int max_fd;                 //  Descriptors a child closes when close_range fails
    bool verbose;               //  --verbose: a line per task on stderr
    char *tmpdir;               //  Private directory for params and branch files
    uint64_t sequence;          //  Names the next job's files
    zlistx_t *jobs;             //  s_job_t, commands not reaped yet
    int kick [2];               //  Self-pipe: a timer found an exited command
    int poll_timer;             //  Exit-check timer id, -1 when none
    int poll_delay;             //  Its delay, ms (doubles up to S_POLL_MAX_MS)
};

//  The environment variables a task sets (removed from the inherited ones)
static const char *s_task_variables [] = {
    "ACTD_CONTEXT", "ACTD_CALL_ID", "ACTD_TASK_ID", "ACTD_ATTEMPT",
    "ACTD_DEADLINE_MS", "ACTD_INSTANCE", "ACTD_BRANCHES", "ACTD_DISCARD",
    "ACTD_ACTIVITY", "ACTD_META", "ACTD_BRANCH_FILE", NULL
};

//  Print the usage text, a short man page, on stream
static void
s_usage (FILE *stream)
{
    fprintf (stream,
"NAME\n"
"    actd-exec - serve any command as an actd activity\n"
"\n"
"SYNOPSIS\n"
"    actd-exec --activity NAME [--activity NAME...] [--capacity N]\n"
"              [--endpoint EP] [--name NAME] [--heartbeat-ms N] [--liveness N]\n"
"              [--kill-grace-ms N] [--max-output BYTES] [--verbose]\n"
"              -- CMD [ARGS...]\n"
"\n"
"DESCRIPTION\n"
"    Connects to actd's worker endpoint as an ACT/1 worker and runs CMD once\n"
"    per task: fork and exec, no shell (CMD is looked up on PATH when it has\n"
"    no slash), in a process group of its own, up to --capacity at once.\n"
"    The worker keeps heartbeating however long a command runs.\n"
"\n"
"    stdin   The task's params as one JSON text and a newline, then end of\n"
"            file (stdin is a private, already unlinked file).\n"
"    stdout  The result. When it parses as one JSON text (white space around\n"
"            it allowed; actd's rules: UTF-8, no duplicate keys, no \\u0000,\n"
"            64-bit integers, nesting up to 64), that value is the result;\n"
"            otherwise the result is stdout itself as a JSON string, byte for\n"
"            byte (a trailing newline included).\n"
"    stderr  Read as it comes; its last 2 KiB are a failure's message.\n"
"    exit    0 answers RESULT; anything else answers FAIL (see FAILURES).\n"
"\n"
"    To choose a branch of an output path with alternatives (\"†a || †b\"),\n"
"    the command writes the branch number in decimal to the file named by\n"
"    ACTD_BRANCH_FILE, e.g.  echo 1 > \"$ACTD_BRANCH_FILE\".  No file, or an\n"
"    empty one, means branch 0.\n"
"\n"
"    When the command exits, whatever it left running in its process group\n"
"    is killed (SIGKILL) and output written after that exit is not read. A\n"
"    process meant to outlive its task must leave the group (setsid).\n"
"\n"
"OPTIONS\n"
"    -a, --activity NAME    Activity to serve (repeatable; required).\n"
"    -c, --capacity N       Commands run at once (default 1).\n"
"    -e, --endpoint EP      Broker's worker endpoint ($ACTD_WORKER_ENDPOINT, else %s).\n"
"    -n, --name NAME        Worker name in STATS (default actd-exec:ACTIVITY).\n"
"        --heartbeat-ms N   Heartbeat interval, as the broker's (default 1000).\n"
"        --liveness N       Silent intervals before reconnecting (default 3).\n"
"        --kill-grace-ms N  SIGTERM to SIGKILL, when a command is stopped\n"
"                           (default %d; 0: SIGKILL at once).\n"
"        --max-output BYTES Largest stdout, and largest result as JSON\n"
"                           (default %d, actd's max_message_bytes).\n"
"    -v, --verbose          Log each task on stderr.\n"
"    -h, --help             This text.  --version: the version.\n"
"\n"
"ENVIRONMENT OF CMD\n"
"    The worker's own environment, plus:\n"
"    ACTD_CONTEXT       the context id        ACTD_CALL_ID   the call id\n"
"    ACTD_TASK_ID       the task id           ACTD_ATTEMPT   1, 2, ...\n"
"    ACTD_DEADLINE_MS   ms this attempt may run, from when the worker got it\n"
"    ACTD_INSTANCE      the call's _instance (unset for a global call)\n"
"    ACTD_BRANCHES      alternatives in the output path (0: fire-and-forget)\n"
"    ACTD_DISCARD       1 when the result will be thrown away, else 0\n"
"    ACTD_ACTIVITY      the activity of the task\n"
"    ACTD_META          the whole meta, as JSON\n"
"    ACTD_BRANCH_FILE   where the command may write the branch it chose\n"
"    SIGPIPE is reset to its default action; the signal mask is empty.\n"
"\n"
"FAILURES                                                        retryable\n"
"    exit_N            exit status N (1-255); message: stderr's tail   yes\n"
"    signal_N          killed by signal N; message: stderr's tail      yes\n"
"    timeout           ran past the meta's deadline_ms                 yes\n"
"    cancelled         the broker sent CANCEL                          no\n"
"    output_too_large  stdout, or the result as JSON, over --max-output no\n"
"    bad_output        stdout neither JSON nor UTF-8, or has a NUL     no\n"
"    bad_branch        ACTD_BRANCH_FILE holds no valid branch          no\n"
"    spawn_failed      the command could not be started                yes\n"
"    A stopped command (timeout, cancelled, output_too_large) gets SIGTERM,\n"
"    then SIGKILL after --kill-grace-ms, its whole process group included;\n"
"    the task is answered once it has exited, so at most --capacity\n"
"    commands run at once. The message of exit_N and signal_N is the last\n"
"    2048 bytes of stderr (invalid UTF-8 and NUL replaced by U+FFFD,\n"
"    white space around it removed), or a sentence when stderr is empty.\n"
"\n"
"EXIT STATUS\n"
"    0 after SIGTERM or SIGINT (running commands are stopped as above);\n"
"    1 when it cannot start; 2 for bad usage or a CMD not found.\n"
"\n"
"EXAMPLE\n"
"    actd-exec --activity wc --capacity 4 -- sh -c 'wc -c'\n",
             ACT_WORKER_ENDPOINT, S_DEFAULT_GRACE, S_DEFAULT_OUTPUT);
}

//  Log a line on stderr
static void
s_log (const char *format, ...)
{
    char date [32];
    act_date_now (date);
    va_list args;
    va_start (args, format);
    fprintf (stderr, "%s actd-exec: ", date);
    vfprintf (stderr, format, args);
    fprintf (stderr, "\n");
    va_end (args);
}


//  --------------------------------------------------------------------------
//  Text helpers

//  A copy of size bytes at data that is valid UTF-8 for a JSON string in
//  actd: each invalid byte and each NUL becomes U+FFFD. Caller frees.
static char *
s_utf8_clean (const char *data, size_t size)
{
    char *clean = malloc (size * 3 + 1);
    size_t length = 0;
    for (size_t at = 0; at < size;) {
        unsigned char lead = (unsigned char) data [at];
        size_t width = lead < 0x80? 1: (lead & 0xE0) == 0xC0? 2:
                       (lead & 0xF0) == 0xE0? 3: (lead & 0xF8) == 0xF0? 4: 0;
        if (lead && width && at + width <= size && act_utf8_valid (data + at, width, NULL)) {
            memcpy (clean + length, data + at, width);
            length += width;
            at += width;
        }
        else {
            memcpy (clean + length, "\xEF\xBF\xBD", 3);
            length += 3;
            at++;
        }
    }
    clean [length] = 0;
    return clean;
}

//  The message of a failure from the tail of stderr: the last S_ERR_TAIL
//  bytes, a character cut at the start dropped, white space around it
//  removed, made valid UTF-8. NULL when nothing is left. Caller frees.
static char *
s_tail_message (const char *data, size_t size)
{
    size_t skip = 0;
    while (skip < 3 && skip < size && ((unsigned char) data [skip] & 0xC0) == 0x80)
        skip++;
    while (skip < size && strchr (" \t\r\n\v\f", data [skip]) && data [skip])
        skip++;
    char *message = s_utf8_clean (data + skip, size - skip);
    size_t length = strlen (message);
    while (length && strchr (" \t\r\n\v\f", message [length - 1]))
        message [--length] = 0;
    if (!length)
        zstr_free (&message);
    return message;
}

//  Parse a non-negative decimal from --option text. Returns 0, or -1.
static int
s_number (const char *text, long long low, long long high, long long *value)
{
    char *end;
    errno = 0;
    long long number = strtoll (text, &end, 10);
    if (errno || end == text || *end || number < low || number > high)
        return -1;
    *value = number;
    return 0;
}


//  --------------------------------------------------------------------------
//  Jobs: one command each

static void s_job_finish (s_job_t *self);
static void s_poll_soon (s_server_t *server);
static void s_on_poll (act_worker_t *worker, void *arg);

//  Signal the command's process group (the command alone if it left it).
//  Only called while the command is not reaped, so its pid, which is also
//  the group's id, cannot belong to anyone else.
static void
s_job_signal (s_job_t *self, int signal_number)
{
    if (kill (-self->pid, signal_number) == -1 && errno == ESRCH)
        kill (self->pid, signal_number);
}

//  True when the command has exited. It stays a zombie (unreaped) so its
//  group can still be signalled safely.
static bool
s_job_exited (s_job_t *self)
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
    s_job_t *self = (s_job_t *) arg;
    self->grace_timer = -1;
    s_job_signal (self, SIGKILL);
}

//  Stop the command for reason: SIGTERM to its group now, SIGKILL after the
//  grace. The first reason is the one the task is answered with. Safe from
//  any callback (it only signals and starts a timer).
static void
s_job_stop (s_job_t *self, s_stop_t reason)
{
    if (self->stop == S_STOP_NONE)
        self->stop = reason;
    if (self->stopping)
        return;
    self->stopping = true;
    if (self->server->kill_grace_ms == 0)
        s_job_signal (self, SIGKILL);
    else {
        s_job_signal (self, SIGTERM);
        self->grace_timer = act_worker_timer (self->server->worker, self->server->kill_grace_ms,
                                              s_on_grace, self);
    }
}

//  The meta's deadline passed (timer callback)
static void
s_on_deadline (act_worker_t *worker, void *arg)
{
    s_job_t *self = (s_job_t *) arg;
    self->deadline_timer = -1;
    if (self->server->verbose)
        s_log ("task %s: deadline of %lld ms passed, stopping it", self->task_id,
               self->deadline_ms);
    s_job_stop (self, S_STOP_TIMEOUT);
}

//  The broker cancelled the task (from the socket's callback)
static void
s_on_cancel (act_task_t *task, void *arg)
{
    s_job_t *self = (s_job_t *) arg;
    if (self->server->verbose)
        s_log ("task %s: cancelled by the broker, stopping it", self->task_id);
    s_job_stop (self, S_STOP_CANCELLED);
}

//  Keep size bytes of stdout, or, over --max-output, drop them all and stop
//  the command
static void
s_job_out (s_job_t *self, const char *data, size_t size)
{
    if (self->overflow)
        return;                 //  Read and dropped until the command is gone
    if (self->out_size + size > self->server->max_output) {
        free (self->out);
        self->out = NULL;
        self->out_size = self->out_alloc = 0;
        self->overflow = true;
        s_job_stop (self, S_STOP_TOO_LARGE);
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

//  Keep the last S_ERR_TAIL bytes of stderr
static void
s_job_err (s_job_t *self, const char *data, size_t size)
{
    if (size >= S_ERR_TAIL) {
        memcpy (self->err, data + size - S_ERR_TAIL, S_ERR_TAIL);
        self->err_size = S_ERR_TAIL;
        return;
    }
    size_t keep = S_ERR_TAIL - size;
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
s_job_read (s_job_t *self, int fd)
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
s_job_close (s_job_t *self, int *fd_p)
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
    s_job_t *self = (s_job_t *) arg;
    if (s_job_read (self, fd) == 0)
        return 0;
    s_job_close (self, fd == self->out_fd? &self->out_fd: &self->err_fd);
    if (self->out_fd == -1 && self->err_fd == -1) {
        //  Both closed: the command is exiting, or has closed them and
        //  goes on; its exit comes a moment after the end of file
        if (s_job_exited (self))
            s_job_finish (self);
        else
            s_poll_soon (self->server);
    }
    return 0;
}

//  The branch the command wrote to ACTD_BRANCH_FILE: 0 when it wrote none.
//  Returns -1 with message (size bytes) set when the file holds anything
//  but a branch number the output path has.
static long long
s_job_branch (s_job_t *self, char *message, size_t size)
{
    int fd = open (self->branch_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd == -1) {
        if (errno == ENOENT)
            return 0;
        snprintf (message, size, "cannot read ACTD_BRANCH_FILE: %s", strerror (errno));
        return -1;
    }
    char text [40];
    ssize_t length = read (fd, text, sizeof text - 1);
    close (fd);
    if (length < 0) {
        snprintf (message, size, "cannot read ACTD_BRANCH_FILE: %s", strerror (errno));
        return -1;
    }
    text [length] = 0;
    const char *at = text;
    while (*at && strchr (" \t\r\n", *at))
        at++;
    if (!*at)
        return 0;               //  Empty: no branch chosen
    long long branch = 0;
    const char *digits = at;
    while (*at >= '0' && *at <= '9' && branch <= S_MAX_BRANCH)
        branch = branch * 10 + (*at++ - '0');
    while (*at && strchr (" \t\r\n", *at))
        at++;
    if (at == digits || *at || (size_t) length == sizeof text - 1 || branch > S_MAX_BRANCH) {
        //  Shown without the white space around it
        size_t end = (size_t) length;
        while (end && strchr (" \t\r\n", text [end - 1]))
            end--;
        char *shown = s_utf8_clean (digits, end - (size_t) (digits - text));
        snprintf (message, size, "ACTD_BRANCH_FILE holds \"%.40s\", not a branch number", shown);
        free (shown);
        return -1;
    }
    long long branches = act_task_branches (self->task);
    if (branches > 0 && branch >= branches) {
        snprintf (message, size, "the command chose branch %lld; the output path has %lld "
                  "alternative%s", branch, branches, branches == 1? "": "s");
        return -1;
    }
    return branch;
}

//  Answer the task of a command that exited with status 0: RESULT, or FAIL
//  when its stdout or branch is unfit
static void
s_job_succeed (s_job_t *self)
{
    char message [256];
    long long branch = s_job_branch (self, message, sizeof message);
    if (branch < 0) {
        act_task_fail (self->task, "bad_branch", message, false);
        return;
    }
    act_err_t err = { 0 };
    const char *out = self->out? self->out: "";
    json_t *result = act_json_parse (out, self->out_size, &err);
    if (!result) {
        size_t offset = 0;
        const char *nul = memchr (out, 0, self->out_size);
        if (!act_utf8_valid (out, self->out_size, &offset)) {
            snprintf (message, sizeof message, "stdout is neither JSON nor UTF-8 text "
                      "(bad UTF-8 at byte %zu)", offset);
            act_task_fail (self->task, "bad_output", message, false);
            return;
        }
        if (nul) {
            snprintf (message, sizeof message, "stdout is not JSON and holds a NUL byte "
                      "(at byte %zu), which no result string may carry",
                      (size_t) (nul - out));
            act_task_fail (self->task, "bad_output", message, false);
            return;
        }
        result = json_stringn (out, self->out_size);
    }
    char *text = act_json_dump (result);
    size_t length = strlen (text);
    free (text);
    if (length > self->server->max_output) {
        snprintf (message, sizeof message, "the result is %zu bytes as JSON, over "
                  "--max-output (%zu)", length, self->server->max_output);
        act_task_fail (self->task, "output_too_large", message, false);
    }
    else
    if (act_task_result (self->task, result, (int) branch))
        s_log ("task %s: could not send RESULT", self->task_id);
    json_decref (result);
}

//  Answer the task from how the command ended
static void
s_job_answer (s_job_t *self, int status, bool have_status)
{
    char text [256];
    char code [32];
    if (self->stop == S_STOP_CANCELLED)
        act_task_fail (self->task, "cancelled",
                       "the broker cancelled the task; the command was stopped", false);
    else
    if (self->stop == S_STOP_TIMEOUT) {
        snprintf (text, sizeof text, "the command ran past its deadline of %lld ms "
                  "and was stopped", self->deadline_ms);
        act_task_fail (self->task, "timeout", text, true);
    }
    else
    if (self->stop == S_STOP_TOO_LARGE) {
        snprintf (text, sizeof text, "stdout went over --max-output (%zu bytes); "
                  "the command was stopped", self->server->max_output);
        act_task_fail (self->task, "output_too_large", text, false);
    }
    else
    if (!have_status)
        act_task_fail (self->task, "spawn_failed", "the command's exit status was lost", true);
    else
    if (WIFEXITED (status) && WEXITSTATUS (status) == 0)
        s_job_succeed (self);
    else {
        char *message = s_tail_message (self->err, self->err_size);
        if (WIFEXITED (status)) {
            snprintf (code, sizeof code, "exit_%d", WEXITSTATUS (status));
            snprintf (text, sizeof text, "the command exited with status %d",
                      WEXITSTATUS (status));
        }
        else {
            int number = WIFSIGNALED (status)? WTERMSIG (status): 0;
            snprintf (code, sizeof code, "signal_%d", number);
            snprintf (text, sizeof text, "the command was killed by signal %d (%s)",
                      number, strsignal (number));
        }
        act_task_fail (self->task, code, message? message: text, true);
        free (message);
    }
}

//  Free the job (its pipes are closed already) and remove its branch
//  file; null the pointer
static void
s_job_destroy (s_job_t **self_p)
{
    s_job_t *self = *self_p;
    if (self) {
        if (self->branch_file) {
            remove (self->branch_file);
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
static void
s_job_finish (s_job_t *self)
{
    s_server_t *server = self->server;
    s_job_signal (self, SIGKILL);
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
            s_log ("task %s: pid %d exited with status %d", self->task_id,
                   (int) self->pid, WEXITSTATUS (status));
        else
        if (reaped == self->pid && WIFSIGNALED (status))
            s_log ("task %s: pid %d killed by signal %d", self->task_id,
                   (int) self->pid, WTERMSIG (status));
    }
    s_job_answer (self, status, reaped == self->pid);
    zlistx_delete (server->jobs, self->handle);
    s_job_destroy (&self);
}

//  Write text (a NUL-terminated string) to a new private file, opened at
//  its start and already unlinked: the command's stdin. Returns the fd or -1.
static int
s_params_file (s_server_t *server, uint64_t sequence, const char *text)
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
s_environment (s_job_t *self)
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

//  In the forked child: become the leader of a new process group, take the
//  pipes as stdin, stdout and stderr, close every other descriptor, exec.
//  Only async-signal-safe calls: the worker has other threads (ZeroMQ's).
static void
s_child (s_server_t *server, int in, int out, int err, char **env)
{
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

//  Serve a task: start its command and return; the loop does the rest
static void
s_on_task (act_task_t *task, void *arg)
{
    s_server_t *server = (s_server_t *) arg;
    s_job_t *self = calloc (1, sizeof *self);
    self->server = server;
    self->task = task;
    self->task_id = strdup (act_task_id (task));
    self->out_fd = self->err_fd = -1;
    self->deadline_timer = self->grace_timer = -1;
    self->deadline_ms = act_task_deadline_ms (task);
    uint64_t sequence = ++server->sequence;
    self->branch_file = zsys_sprintf ("%s/%" PRIu64 ".branch", server->tmpdir, sequence);
    if (zlistx_size (server->jobs) >= server->capacity)
        //  The library reconnected (DISCONNECT, or a silent broker): the
        //  broker gave the older tasks to others and their answers will
        //  be dropped, but nothing tells us which they are
        s_log ("task %s: %zu commands still running from before a reconnect; "
               "running this one too", self->task_id, zlistx_size (server->jobs));

    char *params = act_json_dump (act_task_params (task));
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
        pid = fork ();
        if (pid == 0)
            s_child (server, in, out [1], err [1], env);
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
        char message [256];
        snprintf (message, sizeof message, "%s: %s", problem, strerror (error));
        s_log ("task %s: %s", self->task_id, message);
        if (out [0] != -1)
            close (out [0]);
        if (err [0] != -1)
            close (err [0]);
        act_task_fail (task, "spawn_failed", message, true);
        s_job_destroy (&self);
        return;
    }
    setpgid (pid, pid);         //  Also here: signals may come before the child runs
    self->pid = pid;
    self->out_fd = out [0];
    self->err_fd = err [0];
    fcntl (self->out_fd, F_SETFL, fcntl (self->out_fd, F_GETFL) | O_NONBLOCK);
    fcntl (self->err_fd, F_SETFL, fcntl (self->err_fd, F_GETFL) | O_NONBLOCK);
    self->handle = zlistx_add_end (server->jobs, self);
    act_worker_watch (server->worker, self->out_fd, s_on_output, self);
    act_worker_watch (server->worker, self->err_fd, s_on_output, self);
    if (self->deadline_ms > 0)
        self->deadline_timer = act_worker_timer (server->worker,
            self->deadline_ms > INT_MAX? INT_MAX: (int) self->deadline_ms, s_on_deadline, self);
    act_task_on_cancel (task, s_on_cancel, self);
    if (server->poll_timer == -1) {
        server->poll_delay = S_POLL_MAX_MS;
        server->poll_timer = act_worker_timer (server->worker, server->poll_delay,
                                               s_on_poll, server);
    }
    if (server->verbose)
        s_log ("task %s (%s, attempt %lld): started pid %d", self->task_id,
               act_task_activity (task), act_task_attempt (task), (int) pid);
}


//  --------------------------------------------------------------------------
//  Finding exits

//  Wake s_on_kick: a timer found an exited command
static void
s_kick (s_server_t *self)
{
    char byte = 1;
    if (write (self->kick [1], &byte, 1) < 0)
        return;                 //  Full: a wakeup is pending anyway
}

//  Check the commands for exits (timer callback). A command may exit while
//  a process it started holds its pipes, so this runs while any command
//  does: every S_POLL_MAX_MS, sooner after a job's pipes closed.
static void
s_on_poll (act_worker_t *worker, void *arg)
{
    s_server_t *self = (s_server_t *) arg;
    self->poll_timer = -1;
    bool exited = false;
    for (s_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
        if (s_job_exited (job))
            exited = true;
    if (exited)
        s_kick (self);
    if (zlistx_size (self->jobs)) {
        self->poll_delay = self->poll_delay * 2 < S_POLL_MAX_MS? self->poll_delay * 2
                                                                : S_POLL_MAX_MS;
        self->poll_timer = act_worker_timer (worker, self->poll_delay, s_on_poll, self);
    }
}

//  Check for exits within S_POLL_MIN_MS, then less and less often (from a
//  watch only: it cancels a timer)
static void
s_poll_soon (s_server_t *self)
{
    if (self->poll_timer != -1)
        act_worker_cancel_timer (self->worker, self->poll_timer);
    self->poll_delay = S_POLL_MIN_MS;
    self->poll_timer = act_worker_timer (self->worker, self->poll_delay, s_on_poll, self);
}

//  A timer found an exited command: finish every job whose command exited
static int
s_on_kick (act_worker_t *worker, int fd, void *arg)
{
    s_server_t *self = (s_server_t *) arg;
    char buffer [64];
    while (read (fd, buffer, sizeof buffer) > 0)
        ;
    s_job_t *job = zlistx_first (self->jobs);
    while (job) {
        s_job_t *next = zlistx_next (self->jobs);
        if (s_job_exited (job))
            s_job_finish (job);
        job = next;
    }
    return 0;
}


//  --------------------------------------------------------------------------
//  Start and stop

//  CMD as execve takes it: itself when it has a slash, else the first
//  executable regular file of that name on PATH. NULL when none.
static char *
s_resolve (const char *command)
{
    if (strchr (command, '/'))
        return access (command, X_OK) == 0? strdup (command): NULL;
    const char *path = getenv ("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (true) {
        const char *end = strchr (path, ':');
        size_t length = end? (size_t) (end - path): strlen (path);
        char *candidate = length? zsys_sprintf ("%.*s/%s", (int) length, path, command)
                                : zsys_sprintf ("./%s", command);
        struct stat info;
        if (stat (candidate, &info) == 0 && S_ISREG (info.st_mode)
        &&  access (candidate, X_OK) == 0)
            return candidate;
        free (candidate);
        if (!end)
            return NULL;
        path = end + 1;
    }
}

//  After the loop ended (SIGTERM, SIGINT): stop every command as a timeout
//  would (SIGTERM, SIGKILL after the grace), reap them, free the jobs. The
//  tasks are not answered: the worker has said DISCONNECT, and the broker
//  gives them to another worker.
static void
s_server_stop_jobs (s_server_t *self)
{
    if (zlistx_size (self->jobs) == 0)
        return;
    s_log ("stopping %zu running command(s)", zlistx_size (self->jobs));
    for (s_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
        s_job_signal (job, SIGTERM);
    int64_t deadline = zclock_mono () + self->kill_grace_ms;
    while (zclock_mono () < deadline) {
        bool running = false;
        for (s_job_t *job = zlistx_first (self->jobs); job; job = zlistx_next (self->jobs))
            if (!s_job_exited (job))
                running = true;
        if (!running)
            break;
        zclock_sleep (10);
    }
    s_job_t *job;
    while ((job = zlistx_detach (self->jobs, NULL))) {
        s_job_signal (job, SIGKILL);
        while (waitpid (job->pid, NULL, 0) == -1 && errno == EINTR)
            ;
        if (job->out_fd != -1)
            close (job->out_fd);
        if (job->err_fd != -1)
            close (job->err_fd);
        s_job_destroy (&job);
    }
}

//  Parse the command line, serve until SIGTERM or SIGINT, stop the
//  commands still running. Exits 0, 1 (cannot start) or 2 (bad usage).
int
main (int argc, char *argv [])
{
    const char *endpoint = getenv ("ACTD_WORKER_ENDPOINT")? getenv ("ACTD_WORKER_ENDPOINT"): ACT_WORKER_ENDPOINT;
    const char *name = NULL;
    long long capacity = 1, heartbeat = 1000, liveness = 3;
    long long grace = S_DEFAULT_GRACE, max_output = S_DEFAULT_OUTPUT;
    bool verbose = false;
    zlistx_t *activities = zlistx_new ();
    static struct option options [] = {
        { "activity", required_argument, 0, 'a' },
        { "capacity", required_argument, 0, 'c' },
        { "endpoint", required_argument, 0, 'e' },
        { "name", required_argument, 0, 'n' },
        { "heartbeat-ms", required_argument, 0, 'b' },
        { "liveness", required_argument, 0, 'l' },
        { "kill-grace-ms", required_argument, 0, 'g' },
        { "max-output", required_argument, 0, 'm' },
        { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 }
    };
    char problem [256] = "";
    int option;
    //  "+": options end at the first non-option (CMD), as after "--"
    while (!*problem && (option = getopt_long (argc, argv, "+a:c:e:n:vh", options, NULL)) != -1) {
        const char *range = NULL;
        long long value;
        if (option == 'a') {
            if (*optarg)
                zlistx_add_end (activities, optarg);
            else
                range = "--activity takes a name";
        }
        else
        if (option == 'c') {
            if (s_number (optarg, 1, 100000, &capacity))
                range = "--capacity takes 1 to 100000";
        }
        else
        if (option == 'e')
            endpoint = optarg;
        else
        if (option == 'n')
            name = optarg;
        else
        if (option == 'b') {
            if (s_number (optarg, 10, 3600000, &heartbeat))
                range = "--heartbeat-ms takes 10 to 3600000";
        }
        else
        if (option == 'l') {
            if (s_number (optarg, 1, 1000, &liveness))
                range = "--liveness takes 1 to 1000";
        }
        else
        if (option == 'g') {
            if (s_number (optarg, 0, 3600000, &grace))
                range = "--kill-grace-ms takes 0 to 3600000";
        }
        else
        if (option == 'm') {
            if (s_number (optarg, 1, INT_MAX, &value))
                range = "--max-output takes 1 to 2147483647 bytes";
            else
                max_output = value;
        }
        else
        if (option == 'v')
            verbose = true;
        else
        if (option == 'h' || option == 'V') {
            if (option == 'h')
                s_usage (stdout);
            else
                printf ("actd-exec %s\n", ACTD_VERSION);
            zlistx_destroy (&activities);
            return 0;
        }
        else
            range = "bad option";   //  getopt has said which
        if (range)
            snprintf (problem, sizeof problem, "%s", range);
    }
    char *path = NULL;
    if (!*problem && zlistx_size (activities) == 0)
        snprintf (problem, sizeof problem, "--activity NAME is required");
    else
    if (!*problem && optind >= argc)
        snprintf (problem, sizeof problem, "no command: give it after --");
    else
    if (!*problem && !(path = s_resolve (argv [optind])))
        snprintf (problem, sizeof problem, "%s: command not found or not executable",
                  argv [optind]);
    if (*problem) {
        fprintf (stderr, "actd-exec: %s\nusage: actd-exec --activity NAME [options] -- "
                         "CMD [ARGS...] (--help for more)\n", problem);
        zlistx_destroy (&activities);
        return 2;
    }

    //  Descriptors 0-2 must be open, or a pipe could get one of them and
    //  the child's dup2 would clobber it
    for (int fd = 0; fd < 3; fd++)
        if (fcntl (fd, F_GETFD) == -1 && open ("/dev/null", O_RDWR) != fd) {
            fprintf (stderr, "actd-exec: cannot open /dev/null\n");
            return 1;
        }
    //  A SIGCHLD ignored by whoever started us would reap our children
    signal (SIGCHLD, SIG_DFL);

    s_server_t server = { 0 };
    server.path = path;
    server.argv = argv + optind;
    server.capacity = (size_t) capacity;
    server.max_output = (size_t) max_output;
    server.kill_grace_ms = (int) grace;
    server.verbose = verbose;
    server.poll_timer = -1;
    long open_max = sysconf (_SC_OPEN_MAX);
    server.max_fd = open_max > 0 && open_max < 65536? (int) open_max: 65536;
    server.jobs = zlistx_new ();
    const char *tmp = getenv ("TMPDIR");
    server.tmpdir = zsys_sprintf ("%s/actd-exec.XXXXXX", tmp && *tmp? tmp: "/tmp");
    int rc = 0;
    if (!mkdtemp (server.tmpdir)) {
        fprintf (stderr, "actd-exec: cannot make a directory %s: %s\n", server.tmpdir,
                 strerror (errno));
        rc = 1;
    }
    else
    if (pipe2 (server.kick, O_CLOEXEC | O_NONBLOCK)) {
        fprintf (stderr, "actd-exec: cannot make a pipe: %s\n", strerror (errno));
        rmdir (server.tmpdir);
        rc = 1;
    }
    if (rc) {
        free (server.tmpdir);
        free (path);
        zlistx_destroy (&server.jobs);
        zlistx_destroy (&activities);
        return rc;
    }
    char *default_name = zsys_sprintf ("actd-exec:%s", (char *) zlistx_first (activities));
    server.worker = act_worker_new (endpoint, name? name: default_name);
    act_worker_set_capacity (server.worker, (size_t) capacity);
    act_worker_set_heartbeat (server.worker, (int) heartbeat, (int) liveness);
    act_worker_set_lang (server.worker, "exec");
    for (char *activity = zlistx_first (activities); activity; activity = zlistx_next (activities))
        act_worker_serve (server.worker, activity, s_on_task, &server);
    act_worker_watch (server.worker, server.kick [0], s_on_kick, &server);
    s_log ("serving %s with %s (capacity %lld) at %s", (char *) zlistx_first (activities),
           path, capacity, endpoint);

    act_worker_run (server.worker);

    s_server_stop_jobs (&server);
    act_worker_destroy (&server.worker);
    close (server.kick [0]);
    close (server.kick [1]);
    rmdir (server.tmpdir);
    free (server.tmpdir);
    free (default_name);
    free (path);
    zlistx_destroy (&server.jobs);
    zlistx_destroy (&activities);
    s_log ("stopped");
    return 0;
}
