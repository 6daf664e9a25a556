/*  =========================================================================
    actd_exec - what the files of actd-exec share (private to the worker).

    actd_exec.c     the command line: options, usage text, main
    exec_server.c   the worker glue: tasks become jobs, exits are found
    exec_job.c      one job: a running command, its pipes, process group,
                    deadline and kill grace
    exec_answer.c   how a job's end answers its task: RESULT or FAIL

    A job ends in one place (exec_job_finish): timer callbacks only send
    signals and start timers, and whatever ends a job (cancelling its
    timers, unwatching its pipes, answering) runs from a watch: a pipe's
    end of file, or the "kick" self-pipe a timer writes to when it finds
    that a command has exited. (The worker library marks a cancelled
    timer's hook dead and frees it after the pass, so cancelling a timer
    due in the same pass is safe; the single ending keeps the order of a
    job's last steps plain.)
    ========================================================================= */

#ifndef ACTD_EXEC_H_INCLUDED
#define ACTD_EXEC_H_INCLUDED

#include <sys/types.h>
#include "actd/act_json.h"
#include "actd/act_scan.h"
#include "actd/act_worker.h"

#define EXEC_ERR_TAIL          2048        //  Bytes of stderr a failure's message keeps
#define EXEC_POLL_MIN_MS       1           //  First exit check once a job's pipes closed
#define EXEC_POLL_MAX_MS       100         //  Exit checks while any command runs
#define EXEC_DEFAULT_OUTPUT    1048576     //  --max-output: max_message_bytes' default
#define EXEC_DEFAULT_GRACE     2000        //  --kill-grace-ms
#define EXEC_LARGE_OUTPUT      (16 << 20)  //  Stdout that takes a while to answer:
                                           //  a HEARTBEAT goes first

//  Why the worker stopped a command, if it did: this, not the command's
//  exit status, is then the task's answer
typedef enum {
    EXEC_STOP_NONE,                //  Not stopped: its own exit decides
    EXEC_STOP_CANCELLED,           //  The broker sent CANCEL
    EXEC_STOP_TIMEOUT,             //  The meta's deadline_ms passed
    EXEC_STOP_TOO_LARGE            //  Its stdout went over --max-output
} exec_stop_t;

//  The command line, as parsed
typedef struct {
    const char *endpoint;       //  --endpoint: the broker's worker endpoint
    const char *endpoint_source;    //  Where it came from, for messages
    const char *curve_server;   //  --curve-server: the broker's public key, or NULL
    const char *curve_source;   //  Where it came from, for messages
    const char *curve_cert;     //  --curve-cert: this worker's certificate, or NULL
    const char *cert_source;    //  Where it came from, for messages
    const char *name;           //  --name, NULL for actd-exec:ACTIVITY
    long long capacity;         //  --capacity: commands at once
    long long heartbeat;        //  --heartbeat-ms
    long long liveness;         //  --liveness
    long long grace;            //  --kill-grace-ms
    long long max_output;       //  --max-output
    bool verbose;               //  --verbose
    zlistx_t *activities;       //  --activity names (char *, main's argv)
    const char *description;    //  --description of the tool, or NULL
    char *params_schema;        //  --params-schema as JSON text, or NULL; owned
    const char *output_const;   //  --output-path-const, or NULL
    const char *output_pattern; //  --output-path-pattern, or NULL
    char *path;                 //  CMD, found on PATH when it has no slash; owned
    char **argv;                //  CMD and ARGS (main's argv)
} exec_options_t;

typedef struct _exec_server_t exec_server_t;

//  One task being served: a running command
typedef struct {
    exec_server_t *server;      //  Owner
    act_task_t *task;           //  The task it answers (the library frees it)
    char *task_id;              //  Copy of the task id, for logs
    pid_t pid;                  //  The command, leader of its own process group
    int out_fd;                 //  Read end of its stdout, -1 once closed
    int err_fd;                 //  Read end of its stderr, -1 once closed
    char *out;                  //  Its stdout so far
    size_t out_size;            //  Bytes in out
    size_t out_alloc;           //  Bytes allocated for out
    char err [EXEC_ERR_TAIL];      //  The last bytes of its stderr
    size_t err_size;            //  Bytes in err
    char *branch_file;          //  ACTD_BRANCH_FILE of this run
    long long deadline_ms;      //  The meta's deadline_ms (0: none)
    int deadline_timer;         //  Deadline timer id, -1 when none
    int grace_timer;            //  SIGKILL timer id, -1 when none
    exec_stop_t stop;           //  Why the worker stopped it, if it did
    bool stopping;              //  SIGTERM was sent
    bool overflow;              //  Stdout went over --max-output: dropped
    void *handle;               //  Its place in server->jobs
} exec_job_t;

struct _exec_server_t {
    act_worker_t *worker;       //  The worker library: loop, socket, heartbeats
    char *name;                 //  Default worker name (actd-exec:ACTIVITY), owned
    char *path;                 //  CMD, found on PATH when it has no slash
    char **argv;                //  CMD and ARGS (main's argv)
    size_t capacity;            //  --capacity: commands at once
    size_t max_output;          //  --max-output: bytes of stdout and of the result
    int kill_grace_ms;          //  --kill-grace-ms: SIGTERM to SIGKILL
    int max_fd;                 //  Descriptors a child closes when close_range fails
    bool verbose;               //  --verbose: a line per task on stderr
    char *tmpdir;               //  Private directory for params and branch files
    act_scan_t *scan;           //  Checks stdout for JSON without building it
    uint64_t sequence;          //  Names the next job's files
    zlistx_t *jobs;             //  exec_job_t, commands not reaped yet
    int kick [2];               //  Self-pipe: a timer found an exited command
    int poll_timer;             //  Exit-check timer id, -1 when none
    int poll_delay;             //  Its delay, ms (doubles up to EXEC_POLL_MAX_MS)
};

//  Log a line on stderr, after the date and "actd-exec: "
void exec_log (const char *format, ...);

//  A server for options (path and argv stay the caller's), its private
//  directory made and its worker connected to serve every activity. NULL,
//  with the reason on stderr, when it cannot start: *status is then 2 when
//  an option is at fault (a CURVE key or certificate, an endpoint ZeroMQ
//  refuses), else 1.
exec_server_t *exec_server_new (exec_options_t *options, int *status);

//  Stop the commands still running (the tasks are not answered), free the
//  server, remove its private directory and null the pointer; safe on NULL.
void exec_server_destroy (exec_server_t **self_p);

//  Remove path and, when it is a directory, all it holds (symbolic links
//  are removed, never followed). Returns 0, or -1 when something is left.
int exec_remove_tree (const char *path);

//  Check for exits within EXEC_POLL_MIN_MS, then less and less often (from a
//  watch only: it cancels a timer)
void exec_server_poll_soon (exec_server_t *self);

//  Start the command of task, watched by the loop. Returns the job, or
//  NULL after answering the task spawn_failed.
exec_job_t *exec_job_start (exec_server_t *server, act_task_t *task, uint64_t sequence);

//  Signal the command's process group (the command alone if it left it)
void exec_job_signal (exec_job_t *self, int signal_number);

//  True when the command has exited; it stays unreaped
bool exec_job_exited (exec_job_t *self);

//  The command has exited: reap it, answer the task, forget the job
//  (from a watch only)
void exec_job_finish (exec_job_t *self);

//  SIGKILL the command, reap it, close its pipes and free the job without
//  answering (after the loop ended); null the pointer
void exec_job_kill (exec_job_t **self_p);

//  Answer the job's task from how the command ended: status as waitpid
//  gave it, when have_status
void exec_answer (exec_job_t *self, int status, bool have_status);

#endif
