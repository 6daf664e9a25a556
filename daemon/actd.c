/*  =========================================================================
    actd - the broker daemon. Runs in the foreground (the systemd way);
    SIGTERM or SIGINT stops it cleanly, SIGHUP reloads its config file.
    ========================================================================= */

#include <dirent.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <syslog.h>
#include "act_broker.h"
#include "act_fds.h"
#include "act_notify.h"

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: actd [options]\n"
        "  --config FILE           read settings from FILE (ZPL, see actd.cfg)\n"
        "  --client-endpoint EP    clients' ROUTER endpoint (tcp://127.0.0.1:5555)\n"
        "  --worker-endpoint EP    workers' ROUTER endpoint (tcp://127.0.0.1:5556)\n"
        "  --db PATH               store: SQLite file (actd.db), postgresql://... or :memory:\n"
        "  --sync full|normal      the store's durability: fsync each commit (full)\n"
        "  --heartbeat-ms N        heartbeat interval (1000)\n"
        "  --liveness N            silent intervals before a worker is dead (3)\n"
        "  --log-level LEVEL       error, warning, notice, info (default), debug\n"
        "  -v, --verbose           also log to stderr\n"
        "  --help                  this help\n"
        "  --version               print the version\n"
        "Flags override the config file. Logs go to syslog (facility daemon).\n");
}

static void
s_signal (int signal)
{
    if (signal == SIGHUP)
        act_broker_reload_requested = 1;
    else
        act_broker_stop_requested = 1;
}

//  A flag's integer, from least to most (the config file's bounds) into
//  *target. Returns 0, or 2 after saying what is wrong
static int
s_number (const char *text, const char *flag, long long least, long long most,
          long long *target)
{
    char *end;
    errno = 0;
    long long value = strtoll (text, &end, 10);
    if (!*text || *end || (errno && value != LLONG_MAX) || value < least) {
        fprintf (stderr, "actd: %s needs an integer of at least %lld\n", flag, least);
        return 2;
    }
    if (errno || value > most) {
        fprintf (stderr, "actd: %s: '%s' is above the maximum of %lld\n", flag, text, most);
        return 2;
    }
    *target = value;
    return 0;
}

static void
s_configure_logging (act_settings_t *settings)
{
    act_log_threshold = settings->log_level;
    zsys_set_logident ("actd");
    if (settings->log_syslog) {
        zsys_set_logstream (NULL);
        zsys_set_logsystem (true);
        //  zsys opens syslog with facility user; a daemon logs as daemon
        openlog ("actd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
        act_log_stream = settings->log_stderr? stderr: NULL;
    }
    else {
        //  actd's lines in its own format; CZMQ's own messages, rare, in
        //  CZMQ's format on the same stream
        act_log_stream = settings->log_stderr? stderr: stdout;
        act_log_zsys = false;
        zsys_set_logstream (act_log_stream);
    }
}

//  The flags actd takes; those without a letter get a number above 255
enum { OPT_CONFIG = 256, OPT_CLIENT, OPT_WORKER, OPT_DB, OPT_SYNC, OPT_HEARTBEAT, OPT_LIVENESS,
       OPT_LEVEL, OPT_HELP, OPT_VERSION };
static struct option s_options [] = {
    { "config", required_argument, 0, OPT_CONFIG },
    { "client-endpoint", required_argument, 0, OPT_CLIENT },
    { "worker-endpoint", required_argument, 0, OPT_WORKER },
    { "db", required_argument, 0, OPT_DB },
    { "sync", required_argument, 0, OPT_SYNC },
    { "heartbeat-ms", required_argument, 0, OPT_HEARTBEAT },
    { "liveness", required_argument, 0, OPT_LIVENESS },
    { "log-level", required_argument, 0, OPT_LEVEL },
    { "verbose", no_argument, 0, 'v' },
    { "help", no_argument, 0, OPT_HELP },
    { "version", no_argument, 0, OPT_VERSION },
    { 0, 0, 0, 0 }
};

//  First pass over the flags: find --config (*config; NULL if none) and
//  answer --help, --version and a bad flag. Returns -1 to go on, else the
//  exit code
static int
s_first_pass (int argc, char *argv [], const char **config)
{
    *config = NULL;
    int option;
    while ((option = getopt_long (argc, argv, "v", s_options, NULL)) != -1) {
        if (option == OPT_CONFIG)
            *config = optarg;
        else
        if (option == OPT_HELP) {
            s_usage (stdout);
            return 0;
        }
        else
        if (option == OPT_VERSION) {
            printf ("actd %s\n", ACTD_VERSION);
            return 0;
        }
        else
        if (option == '?') {
            s_usage (stderr);
            return 2;
        }
    }
    return -1;
}

//  Replace what settings holds with a string flag's value
static void
s_replace (char **target, const char *value)
{
    free (*target);
    *target = strdup (value);
}

//  The command line, for a reload (s_reload)
static int s_argc;
static char **s_argv;

//  Second pass: every flag but --config over the settings (the config
//  file's first); at a reload (reload true), all but --log-level (the
//  file's log/level applies then). Returns 0, or 2 after saying what is
//  wrong
static int
s_second_pass (int argc, char *argv [], act_settings_t *settings, bool reload)
{
    optind = 1;
    int option;
    while ((option = getopt_long (argc, argv, "v", s_options, NULL)) != -1) {
        switch (option) {
            case OPT_CLIENT:
                s_replace (&settings->client_endpoint, optarg);
                break;
            case OPT_WORKER:
                s_replace (&settings->worker_endpoint, optarg);
                break;
            case OPT_DB:
                s_replace (&settings->store, optarg);
                break;
            case OPT_SYNC:
                if (streq (optarg, "full") || streq (optarg, "normal"))
                    settings->sync = streq (optarg, "full")? ACT_SYNC_FULL: ACT_SYNC_NORMAL;
                else {
                    fprintf (stderr, "actd: --sync is full or normal\n");
                    return 2;
                }
                break;
            case OPT_HEARTBEAT:
                if (s_number (optarg, "--heartbeat-ms", 10, ACT_SETTINGS_MAX_MS,
                              &settings->heartbeat_ms))
                    return 2;
                break;
            case OPT_LIVENESS:
                if (s_number (optarg, "--liveness", 1, ACT_SETTINGS_MAX_LIVENESS,
                              &settings->liveness))
                    return 2;
                break;
            case OPT_LEVEL:
                if (reload)
                    break;
                settings->log_level = act_log_level_parse (optarg);
                if (settings->log_level < 0) {
                    fprintf (stderr, "actd: --log-level is error, warning, notice, info or debug\n");
                    return 2;
                }
                break;
            case 'v':
                settings->log_stderr = true;
                break;
        }
    }
    if (optind < argc) {
        fprintf (stderr, "actd: unexpected argument '%s'\n", argv [optind]);
        return 2;
    }
    return 0;
}

//  The loop's hook: reload the config file when SIGHUP came
static void
s_reload (act_broker_t *broker, act_settings_t *settings)
{
    act_broker_reload_requested = 0;
    if (!settings->config_file) {
        act_log (LOG_NOTICE, "SIGHUP: no config file to reload");
        return;
    }
    act_settings_t *fresh = act_settings_new ();
    char message [512];
    act_err_t err = { 0 };
    if (act_settings_load (fresh, settings->config_file, message, sizeof message))
        act_log (LOG_ERR, "SIGHUP: config not reloaded: %s", message);
    else
    //  The command line's flags (all restart-only but --log-level) over
    //  the file again, so that only what the file changed is said to need
    //  a restart (act_settings_log_changes)
    if (s_second_pass (s_argc, s_argv, fresh, true))
        act_log (LOG_ERR, "SIGHUP: config not reloaded: bad command line");
    else
    if (act_broker_reload (broker, fresh, &err))
        act_log (LOG_ERR, "SIGHUP: config not reloaded: %s", err.message);
    act_settings_destroy (&fresh);
}

//  Put libzmq's I/O threads (named ZMQbg/IO/N) under SCHED_BATCH
//  (server/io_batch). The loop hands them messages at the end of each
//  pass; under SCHED_OTHER each such wake preempts the loop, on a busy
//  machine once per pass and socket. Under SCHED_BATCH a woken I/O thread
//  waits for a free core or the end of the running thread's slice, and
//  sends more at each wake: fewer context switches, pipelined calls
//  6-15% faster on 2 cores (bench/README.md). Any thread may ask this
//  for itself without privileges; a refusal (a seccomp filter) is logged
//  and changes nothing else. Returns how many I/O threads were found by
//  name, or -1 when the threads cannot be listed.
static int
s_batch_io_threads (void)
{
    DIR *tasks = opendir ("/proc/self/task");
    if (!tasks) {
        act_log (LOG_WARNING, "server/io_batch: cannot list the threads: %s", strerror (errno));
        return -1;
    }
    size_t found = 0, batched = 0;
    struct dirent *entry;
    while ((entry = readdir (tasks))) {
        char path [300], name [32] = "";
        snprintf (path, sizeof path, "/proc/self/task/%s/comm", entry->d_name);
        FILE *file = entry->d_name [0] == '.'? NULL: fopen (path, "r");
        if (!file)
            continue;
        bool io = fgets (name, sizeof name, file) && strncmp (name, "ZMQbg/IO/", 9) == 0;
        fclose (file);
        found += io;
        struct sched_param param = { 0 };
        if (io && sched_setscheduler ((pid_t) atoi (entry->d_name), SCHED_BATCH, &param))
            act_log (LOG_WARNING, "server/io_batch: thread %s stays SCHED_OTHER: %s",
                     entry->d_name, strerror (errno));
        else
        if (io)
            batched++;
    }
    closedir (tasks);
    if (batched)
        act_log (LOG_DEBUG, "server/io_batch: %zu libzmq I/O threads under SCHED_BATCH", batched);
    return (int) found;
}

//  Apply server/io_batch once libzmq's I/O threads have their names.
//  A thread names itself after it starts, so right after the bind the
//  scan often found none (about one start in two, which then ran the
//  whole life of the process without SCHED_BATCH): look again, for at
//  most 200 ms
static void
s_batch_io_threads_named (void)
{
    for (int tries = 0; tries < 100; tries++) {
        int found = s_batch_io_threads ();
        if (found != 0)
            return;
        zclock_sleep (2);
    }
    act_log (LOG_INFO, "server/io_batch: no libzmq I/O thread found (by its name, "
             "ZMQbg/IO/N): they keep their scheduling policy");
}

//  SIGTERM and SIGINT stop the broker, SIGHUP reloads the config file.
//  They are blocked in every thread (all start after this) and read by
//  the loop from a signalfd, returned. A handler would interrupt whatever
//  system call the main thread was in: libzmq's bind failed with EINTR,
//  and CZMQ asserts that the bind of an actor's pipe does not fail (a
//  SIGHUP as actd started made it abort). Without a signalfd (-1), the
//  handlers as before.
static int
s_catch_signals (void)
{
    sigset_t mask;
    act_broker_signals (&mask);
    pthread_sigmask (SIG_BLOCK, &mask, NULL);
    int fd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd >= 0)
        return fd;
    act_log (LOG_WARNING, "no signalfd (%s): signals are caught by handlers", strerror (errno));
    pthread_sigmask (SIG_UNBLOCK, &mask, NULL);
    struct sigaction action = { 0 };
    action.sa_handler = s_signal;
    sigemptyset (&action.sa_mask);
    sigaction (SIGTERM, &action, NULL);
    sigaction (SIGINT, &action, NULL);
    sigaction (SIGHUP, &action, NULL);
    return -1;
}

int
main (int argc, char *argv [])
{
    //  actd handles its own signals (stop, reload), not CZMQ
    zsys_handler_set (NULL);
    signal (SIGPIPE, SIG_IGN);
    //  At a file-size limit (RLIMIT_FSIZE, LimitFSIZE= in a unit) the kernel
    //  would kill actd; ignored, the write fails with EFBIG instead, the
    //  commit fails, and what it would have acknowledged is refused with
    //  internal, as for a full disk
    signal (SIGXFSZ, SIG_IGN);

    //  First the config file, then every other flag over it
    const char *config;
    int rc = s_first_pass (argc, argv, &config);
    if (rc >= 0)
        return rc;
    act_settings_t *settings = act_settings_new ();
    char message [512];
    if (config && act_settings_load (settings, config, message, sizeof message)) {
        fprintf (stderr, "actd: %s\n", message);
        act_settings_destroy (&settings);
        return 2;
    }
    s_argc = argc;
    s_argv = argv;
    rc = s_second_pass (argc, argv, settings, false);
    if (rc) {
        act_settings_destroy (&settings);
        return rc;
    }
    s_configure_logging (settings);
    int signals = s_catch_signals ();
    //  Every connection is a descriptor: as many as the system allows
    act_fds_raise ();

    //  A store migrated to a new schema can take minutes before READY=1:
    //  systemd hears how it goes, and waits past TimeoutStartSec=
    act_store_on_progress (act_notify_progress, NULL, act_notify_progress_ms ());
    act_store_set_lease (settings->lease_ms);
    act_err_t err = { 0 };
    act_broker_t *broker = act_broker_new (settings, true, &err);
    if (!broker) {
        act_log (LOG_ERR, "cannot start: %s", err.message);
        if (!settings->log_stderr)
            fprintf (stderr, "actd: cannot start: %s\n", err.message);
        act_settings_destroy (&settings);
        if (signals >= 0)
            close (signals);
        return 1;
    }
    act_broker_watch_signals (broker, signals);
    //  The sockets are bound: libzmq's I/O threads run
    if (settings->io_batch)
        s_batch_io_threads_named ();
    char *summary = act_broker_summary (broker);
    act_notify_ready (summary);
    free (summary);
    rc = act_broker_run (broker, s_reload, settings);
    act_broker_destroy (&broker);
    act_settings_destroy (&settings);
    if (signals >= 0)
        close (signals);
    return rc;
}
