/*  =========================================================================
    bench_util - what the broker benchmarks share (see bench_util.h).
    ========================================================================= */

#include <arpa/inet.h>
#include <ftw.h>
#include <libgen.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "bench_util.h"
#include "cmp_common.h"

char *
bench_actd_path (void)
{
    const char *env = getenv ("ACTD_BIN");
    if (env && *env)
        return strdup (env);
    char self [4096];
    ssize_t size = readlink ("/proc/self/exe", self, sizeof self - 1);
    if (size <= 0) {
        fprintf (stderr, "bench: cannot read /proc/self/exe\n");
        exit (1);
    }
    self [size] = 0;
    char *path = zsys_sprintf ("%s/actd", dirname (self));
    if (access (path, X_OK)) {
        fprintf (stderr, "bench: no actd at %s (build the actd-daemon target, "
                 "or set ACTD_BIN)\n", path);
        exit (1);
    }
    return path;
}

char *
bench_tmpdir (const char *tag)
{
    const char *base = getenv ("TMPDIR");
    char *dir = zsys_sprintf ("%s/%s-XXXXXX", base && *base? base: "/tmp", tag);
    if (!mkdtemp (dir)) {
        fprintf (stderr, "bench: cannot create %s: %s\n", dir, strerror (errno));
        exit (1);
    }
    return dir;
}

static int
s_remove (const char *path, const struct stat *info, int flag, struct FTW *ftw)
{
    return remove (path);
}

void
bench_rmdir (const char *dir)
{
    nftw (dir, s_remove, 16, FTW_DEPTH | FTW_PHYS);
}

//  Port (0: any) on 127.0.0.1 bound and let go at once: the port, or -1
//  when it is taken
static int
s_bind_probe (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    address.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    int rc = fd < 0 || bind (fd, (struct sockaddr *) &address, sizeof address)
          || getsockname (fd, (struct sockaddr *) &address, &length)? -1: ntohs (address.sin_port);
    if (fd >= 0)
        close (fd);
    return rc;
}

//  A TCP port on 127.0.0.1 nothing listens on right now, below the
//  kernel's ephemeral range (ip_local_port_range) when it leaves room: a
//  port from that range may be taken by any outgoing connection (a
//  worker's, a client's) before actd binds it, as tests/integration's
//  harness learnt in CI and bench/compare.sh in a run
static int
s_free_port (void)
{
    int low = 0;
    FILE *range = fopen ("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (range) {
        if (fscanf (range, "%d", &low) != 1)
            low = 0;
        fclose (range);
    }
    for (int attempt = 0; low > 12000 && attempt < 200; attempt++) {
        int port = s_bind_probe (10000 + (int) randof (low - 10000));
        if (port > 0)
            return port;
    }
    int port = s_bind_probe (0);
    if (port < 0) {
        fprintf (stderr, "bench: cannot find a free port: %s\n", strerror (errno));
        exit (1);
    }
    return port;
}

bench_actd_t *
bench_actd_start (const char *actd, const char *dir, const char *db,
                  const char *sync, const char *config_extra)
{
    static int started = 0;
    bench_actd_t *self = calloc (1, sizeof *self);
    int client = s_free_port (), worker = s_free_port ();
    while (worker == client)
        worker = s_free_port ();
    snprintf (self->client, sizeof self->client, "tcp://127.0.0.1:%d", client);
    snprintf (self->worker, sizeof self->worker, "tcp://127.0.0.1:%d", worker);
    snprintf (self->log, sizeof self->log, "%s/actd-%d.log", dir, ++started);
    char *config = zsys_sprintf ("%s/actd-%d.cfg", dir, started);
    FILE *file = fopen (config, "w");
    if (!file) {
        fprintf (stderr, "bench: cannot write %s\n", config);
        exit (1);
    }
    fprintf (file, "server\n    heartbeat_ms = 1000\n    liveness = 5\n%s"
                   "log\n    level = notice\n    syslog = 0\n    stderr = 1\n",
             config_extra? config_extra: "");
    fclose (file);
    self->started = zclock_usecs ();
    self->pid = fork ();
    if (self->pid < 0) {
        fprintf (stderr, "bench: fork: %s\n", strerror (errno));
        exit (1);
    }
    if (self->pid == 0) {
        int fd = open (self->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2 (fd, 1);
            dup2 (fd, 2);
            close (fd);
        }
        execl (actd, actd, "--config", config, "--client-endpoint", self->client,
               "--worker-endpoint", self->worker, "--db", db, "--sync", sync, (char *) NULL);
        fprintf (stderr, "bench: cannot run %s: %s\n", actd, strerror (errno));
        _exit (127);
    }
    free (config);
    return self;
}

int64_t
bench_actd_pong (bench_actd_t *self, int timeout_ms)
{
    zsock_t *socket = zsock_new (ZMQ_DEALER);
    zsock_set_linger (socket, 0);
    zsock_set_reconnect_ivl (socket, 10);
    zsock_set_reconnect_ivl_max (socket, 10);
    zsock_connect (socket, "%s", self->client);
    zstr_sendx (socket, "ACTC01", "PING", "ping", NULL);
    int64_t deadline = zclock_mono () + timeout_ms;
    int64_t answered = -1;
    while (answered < 0 && zclock_mono () < deadline) {
        zsock_set_rcvtimeo (socket, 50);
        zmsg_t *msg = zmsg_recv (socket);
        if (msg) {
            zframe_t *header = zmsg_first (msg);
            zframe_t *verb = zmsg_next (msg);
            if (header && verb && zframe_streq (header, "ACTC01") && zframe_streq (verb, "PONG"))
                answered = zclock_usecs () - self->started;
            zmsg_destroy (&msg);
        }
        else {
            int status;
            if (waitpid (self->pid, &status, WNOHANG) == self->pid) {
                fprintf (stderr, "bench: actd exited before it answered PING\n");
                bench_actd_log_tail (self, 20);
                self->pid = 0;
                exit (1);
            }
        }
    }
    zsock_destroy (&socket);
    return answered;
}

void
bench_actd_log_tail (bench_actd_t *self, int lines)
{
    char *command = zsys_sprintf ("tail -n %d '%s' >&2", lines, self->log);
    if (system (command) != 0)
        fprintf (stderr, "bench: cannot show %s\n", self->log);
    free (command);
}

int
bench_actd_stop (bench_actd_t **self_p)
{
    bench_actd_t *self = *self_p;
    if (!self)
        return -1;
    int result = -1;
    if (self->pid > 0) {
        kill (self->pid, SIGTERM);
        int64_t deadline = zclock_mono () + 30000;
        int status = 0;
        pid_t done = 0;
        while ((done = waitpid (self->pid, &status, WNOHANG)) == 0 && zclock_mono () < deadline)
            zclock_sleep (10);
        if (done == 0) {
            fprintf (stderr, "bench: actd %d did not stop in 30 s; killing it\n", self->pid);
            kill (self->pid, SIGKILL);
            waitpid (self->pid, &status, 0);
        }
        result = WIFEXITED (status)? WEXITSTATUS (status): 128 + WTERMSIG (status);
        if (result != 0) {
            fprintf (stderr, "bench: actd exited %d; its log ends:\n", result);
            bench_actd_log_tail (self, 20);
        }
    }
    free (self);
    *self_p = NULL;
    return result;
}

double
bench_now (void)
{
    return cmp_now ();
}

long
bench_rss_kb (pid_t pid)
{
    char path [64], line [256];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    FILE *file = fopen (path, "r");
    long rss = -1;
    while (file && fgets (line, sizeof line, file))
        if (strncmp (line, "VmRSS:", 6) == 0)
            rss = atol (line + 6);
    if (file)
        fclose (file);
    return rss;
}

double
bench_cpu_ms (pid_t pid)
{
    double ms = cmp_cpu_ms ((int) pid);
    return ms > 0 || kill (pid, 0) == 0? ms: -1;
}

void
bench_machine_jiffies (unsigned long long *busy, unsigned long long *total)
{
    unsigned long long field [8] = { 0 };
    FILE *file = fopen ("/proc/stat", "r");
    if (!file
    ||  fscanf (file, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &field [0], &field [1],
                &field [2], &field [3], &field [4], &field [5], &field [6], &field [7]) != 8)
        memset (field, 0, sizeof field);
    if (file)
        fclose (file);
    //  user nice system idle iowait irq softirq steal
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += field [i];
    *busy = *total - field [3] - field [4];
}

json_t *
bench_stats (act_client_t *client)
{
    act_err_t err = { 0 };
    json_t *stats = act_client_stats (client, &err);
    if (!stats) {
        fprintf (stderr, "bench: STATS failed: %s %s\n", err.code? err.code: "",
                 err.message);
        exit (1);
    }
    return stats;
}

long long
bench_json_int (json_t *object, const char *a, const char *b)
{
    json_t *value = json_object_get (object, a);
    if (b)
        value = json_object_get (value, b);
    return json_integer_value (value);
}


//  --------------------------------------------------------------------------
//  The worker thread

struct _bench_worker_t {
    pthread_t thread;
    act_worker_t *worker;
    int stop [2];               //  A pipe: a byte written asks the worker to stop
};

static void
s_echo (act_task_t *task, void *arg)
{
    act_task_result (task, act_task_params (task), 0);
}

static void
s_step (act_task_t *task, void *arg)
{
    json_t *result = json_pack ("{sO}", "i", json_object_get (act_task_params (task), "i"));
    if (!result)
        result = json_pack ("{si}", "i", 0);
    act_task_result (task, result, 0);
    json_decref (result);
}

//  The stop pipe is readable: end the worker's loop
static int
s_on_stop (act_worker_t *worker, int fd, void *arg)
{
    act_worker_stop (worker);
    return -1;
}

static void *
s_worker_run (void *arg)
{
    bench_worker_t *self = (bench_worker_t *) arg;
    act_worker_run (self->worker);
    return NULL;
}

bench_worker_t *
bench_worker_start (const char *endpoint, size_t capacity)
{
    return bench_worker_start_tool (endpoint, capacity, NULL);
}

bench_worker_t *
bench_worker_start_tool (const char *endpoint, size_t capacity, const char *schema)
{
    bench_worker_t *self = calloc (1, sizeof *self);
    self->worker = act_worker_new (endpoint, "bench");
    act_worker_set_capacity (self->worker, capacity);
    act_worker_set_heartbeat (self->worker, 1000, 5);
    act_worker_serve (self->worker, "echo", s_echo, NULL);
    act_worker_serve (self->worker, "step", s_step, NULL);
    if (schema && act_worker_declare (self->worker, "echo", "Echoes its params", schema,
                                      NULL, NULL)) {
        fprintf (stderr, "bench: the tool's schema is refused\n");
        exit (1);
    }
    if (pipe (self->stop) || act_worker_watch (self->worker, self->stop [0], s_on_stop, self)) {
        fprintf (stderr, "bench: cannot make the worker's stop pipe\n");
        exit (1);
    }
    pthread_create (&self->thread, NULL, s_worker_run, self);
    return self;
}

void
bench_worker_stop (bench_worker_t **self_p)
{
    bench_worker_t *self = *self_p;
    if (!self)
        return;
    if (write (self->stop [1], "x", 1) != 1)
        fprintf (stderr, "bench: cannot stop the worker\n");
    pthread_join (self->thread, NULL);
    act_worker_destroy (&self->worker);
    close (self->stop [0]);
    close (self->stop [1]);
    free (self);
    *self_p = NULL;
}

void
bench_wait_worker (act_client_t *client, const char *activity, int timeout_ms)
{
    int64_t deadline = zclock_mono () + timeout_ms;
    while (zclock_mono () < deadline) {
        json_t *stats = bench_stats (client);
        json_t *entry = json_object_get (json_object_get (stats, "activities"), activity);
        long long workers = json_integer_value (json_object_get (entry, "workers"));
        json_decref (stats);
        if (workers > 0)
            return;
        zclock_sleep (10);
    }
    fprintf (stderr, "bench: no worker for %s registered in %d ms\n", activity, timeout_ms);
    exit (1);
}

double
bench_percentile (double *values, size_t n, double p)
{
    return cmp_percentile (values, n, p);
}

uint64_t
bench_request_number (const char *request)
{
    return request && request [0] == 'c'? strtoull (request + 1, NULL, 10): 0;
}
