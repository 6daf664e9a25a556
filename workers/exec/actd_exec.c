/*  =========================================================================
    actd-exec - serves any command as an activity (PROTOCOL.md section 2).

    actd-exec --activity NAME [options] -- CMD [ARGS...]

    Each task runs CMD once, with fork and exec (no shell), in a process
    group of its own: the params JSON on stdin, the meta in ACTD_*
    environment variables. Its stdout is the result, its exit status says
    whether it worked, its stderr's tail is the message of a failure. The
    usage text (s_usage, --help) and README.md say the whole contract.

    This file is the command line: options, usage text, main. The files
    it shares actd_exec.h with are the worker glue (exec_server.c), one
    running command (exec_job.c) and how its end answers the task
    (exec_answer.c).
    ========================================================================= */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "actd_exec.h"
#include "actd/act_ref.h"
#include "actd/act_schema.h"

//  Print what the command gets and answers, the second half of the usage
static void
s_usage_command (FILE *stream)
{
    fputs (
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
"    CMD leads a process group of its own; it gets SIGKILL if the worker\n"
"    dies (PR_SET_PDEATHSIG).\n"
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
"    commands run at once per broker. The message of exit_N and signal_N\n"
"    is the last 2048 bytes of stderr (invalid UTF-8 and NUL replaced by\n"
"    U+FFFD, white space around it removed), or a sentence when stderr is\n"
"    empty.\n"
"\n"
"EXIT STATUS\n"
"    0 after SIGTERM, SIGINT, SIGHUP or SIGQUIT (running commands are\n"
"    stopped as above); 1 when it cannot start; 2 for bad usage, a CMD not\n"
"    found or not an executable file, a tool option actd would refuse, a\n"
"    CURVE key or certificate that is not one, or an endpoint ZeroMQ\n"
"    refuses. If the worker dies otherwise (SIGKILL), each command gets\n"
"    SIGKILL, but not the rest of its process group.\n"
"\n"
"EXAMPLE\n"
"    actd-exec --activity wc --capacity 4 -- sh -c 'wc -c'\n", stream);
}

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
"              [--curve-server KEY --curve-cert FILE]\n"
"              [--description TEXT] [--params-schema JSON|FILE]\n"
"              [--output-path-const PATH | --output-path-pattern REGEX]\n"
"              -- CMD [ARGS...]\n"
"\n"
"DESCRIPTION\n"
"    Connects to actd's worker endpoint as an ACT/1 worker and runs CMD once\n"
"    per task: fork and exec, no shell (CMD is looked up on PATH when it has\n"
"    no slash), in a process group of its own, up to --capacity at once for\n"
"    each broker of --endpoint.\n"
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
"    process meant to outlive its task must have left the group before:\n"
"    setsid -w sh -c 'daemon </dev/null >/dev/null 2>&1 &'\n"
"\n"
"OPTIONS\n"
"    -a, --activity NAME    Activity to serve (repeatable; required).\n"
"    -c, --capacity N       Commands run at once, per broker (default 1).\n"
"    -e, --endpoint EP      Broker's worker endpoint, or a comma-separated list\n"
"                           ($ACTD_WORKER_ENDPOINT, else %s).\n"
"    -n, --name NAME        Worker name in STATS (default actd-exec:ACTIVITY).\n"
"        --heartbeat-ms N   Heartbeat interval, as the broker's (default 1000).\n"
"        --liveness N       Silent intervals before reconnecting (default 3).\n"
"        --kill-grace-ms N  SIGTERM to SIGKILL, when a command is stopped\n"
"                           (default %d; 0: SIGKILL at once).\n"
"        --max-output BYTES Largest stdout, and largest result as JSON\n"
"                           (default %d, actd's max_message_bytes).\n"
"        --curve-server KEY CURVE: the broker's public key ($ACTD_SERVER_KEY).\n"
"        --curve-cert FILE  CURVE: this worker's certificate ($ACTD_CERT).\n"
"        --description TEXT The tool's description for models (PROTOCOL.md 2.1).\n"
"        --params-schema JSON|FILE  The JSON Schema (draft 2020-12) of the\n"
"                           params: the text itself when it starts with {,\n"
"                           else a file holding it. actd refuses calls that\n"
"                           do not match (bad_call, or bad_params once their\n"
"                           references are resolved).\n"
"        --output-path-const PATH  Prescribe _outputPath: a call without one\n"
"                           gets PATH, a call with another is refused.\n"
"        --output-path-pattern REGEX  A regular expression the whole\n"
"                           _outputPath of a call must match.\n"
"                           These four declare the tool of every --activity.\n"
"    -v, --verbose          Log each task on stderr.\n"
"    -h, --help             This text.  --version: the version.\n"
"\n",
             ACT_WORKER_ENDPOINT, EXEC_DEFAULT_GRACE, EXEC_DEFAULT_OUTPUT);
    s_usage_command (stream);
}

//  Log a line on stderr
void
exec_log (const char *format, ...)
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

//  True when path is an executable regular file (a directory passes
//  access's X_OK, and every task would then fail exit_127)
static bool
s_executable (const char *path)
{
    struct stat info;
    return stat (path, &info) == 0 && S_ISREG (info.st_mode) && access (path, X_OK) == 0;
}

//  CMD as execve takes it: itself when it has a slash, else the first
//  executable regular file of that name on PATH. NULL when none.
static char *
s_resolve (const char *command)
{
    if (strchr (command, '/'))
        return s_executable (command)? strdup (command): NULL;
    const char *path = getenv ("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (true) {
        const char *end = strchr (path, ':');
        size_t length = end? (size_t) (end - path): strlen (path);
        char *candidate = length? zsys_sprintf ("%.*s/%s", (int) length, path, command)
                                : zsys_sprintf ("./%s", command);
        if (s_executable (candidate))
            return candidate;
        free (candidate);
        if (!end)
            return NULL;
        path = end + 1;
    }
}

//  An option that takes a number: one row each, as getopt names it
typedef struct {
    int option;                 //  getopt's letter for it
    long long low, high;        //  The range it takes
    size_t offset;              //  Its long long field in exec_options_t
    const char *problem;        //  What to say when the text is not in range
} s_number_option_t;

static const s_number_option_t s_number_options [] = {
    { 'c', 1, 100000, offsetof (exec_options_t, capacity),
      "--capacity takes 1 to 100000" },
    { 'b', 10, 3600000, offsetof (exec_options_t, heartbeat),
      "--heartbeat-ms takes 10 to 3600000" },
    { 'l', 1, 1000, offsetof (exec_options_t, liveness),
      "--liveness takes 1 to 1000" },
    { 'g', 0, 3600000, offsetof (exec_options_t, grace),
      "--kill-grace-ms takes 0 to 3600000" },
    { 'm', 1, INT_MAX, offsetof (exec_options_t, max_output),
      "--max-output takes 1 to 2147483647 bytes" },
};

//  --params-schema: JSON text (it starts with "{"), or a file holding it;
//  checked as the broker will check it. Returns NULL, or what is wrong.
static const char *
s_params_schema (exec_options_t *self, const char *text)
{
    static char problem [320];
    const char *start = text + strspn (text, " \t\r\n");
    char *json = NULL;
    if (*start == '{' || streq (start, "true") || streq (start, "false"))
        json = strdup (text);
    else {
        zfile_t *file = zfile_new (NULL, text);
        zchunk_t *chunk = file && zfile_input (file) == 0? zfile_read (file, zfile_cursize (file), 0)
                                                           : NULL;
        if (chunk)
            json = zchunk_strdup (chunk);
        zchunk_destroy (&chunk);
        zfile_destroy (&file);
        if (!json) {
            snprintf (problem, sizeof problem, "--params-schema: cannot read %.200s", text);
            return problem;
        }
    }
    act_err_t err = { 0 };
    json_t *schema = act_json_parse (json, strlen (json), &err);
    act_schema_t *compiled = schema? act_schema_new (schema, &err): NULL;
    act_schema_destroy (&compiled);
    json_decref (schema);
    free (self->params_schema);
    self->params_schema = json;
    if (err.code) {
        snprintf (problem, sizeof problem, "--params-schema: %s", err.message);
        return problem;
    }
    return NULL;
}

//  --output-path-const and --output-path-pattern, checked as the broker
//  checks them at READY (it would refuse every READY of this worker).
//  Returns NULL, or what is wrong.
static const char *
s_output_path (const char *option, const char *text)
{
    static char problem [400];
    act_err_t err = { 0 };
    if (streq (option, "--output-path-const")) {
        act_expr_t *expr = act_expr_parse (text, true, &err);
        act_expr_destroy (&expr);
    }
    else {
        //  As JSON Schema's "pattern", as actd compiles it
        json_t *schema = json_pack ("{ssss}", "type", "string", "pattern", text);
        act_schema_t *compiled = schema? act_schema_new (schema, &err): NULL;
        if (!schema)
            act_err_set (&err, ACT_E_BAD_ARGUMENT, "not UTF-8");
        act_schema_destroy (&compiled);
        json_decref (schema);
    }
    if (!err.code)
        return NULL;
    snprintf (problem, sizeof problem, "%s: %s: %s", option,
              streq (option, "--output-path-const")? "not an output path"
                                                   : "not a regular expression actd takes",
              err.message);
    return problem;
}

//  Take option (getopt's letter) with optarg into self. Returns NULL, or
//  what is wrong with it (a field out of range is left as it was).
static const char *
s_options_take (exec_options_t *self, int option)
{
    size_t rows = sizeof s_number_options / sizeof s_number_options [0];
    for (size_t row = 0; row < rows; row++) {
        const s_number_option_t *number = &s_number_options [row];
        if (number->option == option) {
            long long *field = (long long *) ((char *) self + number->offset);
            return s_number (optarg, number->low, number->high, field)? number->problem: NULL;
        }
    }
    if (option == 'a') {
        if (!*optarg)
            return "--activity takes a name";
        zlistx_add_end (self->activities, optarg);
    }
    else
    if (option == 'e') {
        self->endpoint = optarg;
        self->endpoint_source = "--endpoint";
    }
    else
    if (option == 'n')
        self->name = optarg;
    else
    if (option == 'v')
        self->verbose = true;
    else
    if (option == 'D')
        self->description = optarg;
    else
    if (option == 'P')
        return s_params_schema (self, optarg);
    else
    if (option == 'O') {
        self->output_const = optarg;
        return s_output_path ("--output-path-const", optarg);
    }
    else
    if (option == 'R') {
        self->output_pattern = optarg;
        return s_output_path ("--output-path-pattern", optarg);
    }
    else
    if (option == 's') {
        self->curve_server = optarg;
        self->curve_source = "--curve-server";
    }
    else
    if (option == 'k') {
        self->curve_cert = optarg;
        self->cert_source = "--curve-cert";
    }
    else
        return "bad option";    //  getopt has said which
    return NULL;
}

//  Parse the command line into self (its defaults set, activities made).
//  Returns -1 to go on and serve, else the status to exit with: 0 after
//  --help or --version, 2 after saying what is wrong on stderr.
static int
s_options_parse (exec_options_t *self, int argc, char *argv [])
{
    static struct option options [] = {
        { "activity", required_argument, 0, 'a' },
        { "capacity", required_argument, 0, 'c' },
        { "endpoint", required_argument, 0, 'e' },
        { "name", required_argument, 0, 'n' },
        { "heartbeat-ms", required_argument, 0, 'b' },
        { "liveness", required_argument, 0, 'l' },
        { "kill-grace-ms", required_argument, 0, 'g' },
        { "max-output", required_argument, 0, 'm' },
        { "description", required_argument, 0, 'D' },
        { "params-schema", required_argument, 0, 'P' },
        { "output-path-const", required_argument, 0, 'O' },
        { "output-path-pattern", required_argument, 0, 'R' },
        { "curve-server", required_argument, 0, 's' },
        { "curve-cert", required_argument, 0, 'k' },
        { "verbose", no_argument, 0, 'v' },
        { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'V' },
        { 0, 0, 0, 0 }
    };
    char problem [320] = "";       //  As s_options_take's messages
    int option;
    //  "+": options end at the first non-option (CMD), as after "--"
    while (!*problem && (option = getopt_long (argc, argv, "+a:c:e:n:vh", options, NULL)) != -1) {
        if (option == 'h' || option == 'V') {
            if (option == 'h')
                s_usage (stdout);
            else
                printf ("actd-exec %s\n", ACTD_VERSION);
            return 0;
        }
        const char *range = s_options_take (self, option);
        if (range)
            snprintf (problem, sizeof problem, "%s", range);
    }
    if (!*problem && self->output_const && self->output_pattern)
        snprintf (problem, sizeof problem,
                  "--output-path-const and --output-path-pattern exclude each other");
    else
    if (!*problem && !self->curve_server != !self->curve_cert)
        //  Half of CURVE would talk in plain text
        snprintf (problem, sizeof problem, "--curve-server and --curve-cert go together "
                  "(or $ACTD_SERVER_KEY and $ACTD_CERT)");
    else
    if (!*problem && zlistx_size (self->activities) == 0)
        snprintf (problem, sizeof problem, "--activity NAME is required");
    else
    if (!*problem && optind >= argc)
        snprintf (problem, sizeof problem, "no command: give it after --");
    else
    if (!*problem && !(self->path = s_resolve (argv [optind])))
        snprintf (problem, sizeof problem, "%s: command not found, or not an executable "
                  "file", argv [optind]);
    if (*problem) {
        fprintf (stderr, "actd-exec: %s\nusage: actd-exec --activity NAME [options] -- "
                         "CMD [ARGS...] (--help for more)\n", problem);
        return 2;
    }
    self->argv = argv + optind;
    return -1;
}

//  SIGHUP or SIGQUIT: stop as on SIGTERM (CZMQ's handler takes SIGINT and
//  SIGTERM). Without it, the worker died at once and left its commands to
//  their PR_SET_PDEATHSIG, their process groups unsignalled
static void
s_on_signal (int signal_number)
{
    zsys_interrupted = 1;
}

//  Serve until SIGTERM, SIGINT, SIGHUP or SIGQUIT with options, then stop
//  the commands still running. Returns 0, 1 when it cannot start, 2 when
//  an option is at fault (CURVE keys, an endpoint ZeroMQ refuses).
static int
s_serve (exec_options_t *options)
{
    //  Descriptors 0-2 must be open, or a pipe could get one of them and
    //  the child's dup2 would clobber it
    for (int fd = 0; fd < 3; fd++)
        if (fcntl (fd, F_GETFD) == -1 && open ("/dev/null", O_RDWR) != fd) {
            fprintf (stderr, "actd-exec: cannot open /dev/null\n");
            return 1;
        }
    //  A SIGCHLD ignored by whoever started us would reap our children
    signal (SIGCHLD, SIG_DFL);
    zsys_init ();               //  CZMQ's SIGINT and SIGTERM handler, then ours
    struct sigaction action;
    memset (&action, 0, sizeof action);
    action.sa_handler = s_on_signal;
    sigemptyset (&action.sa_mask);
    sigaction (SIGHUP, &action, NULL);
    sigaction (SIGQUIT, &action, NULL);

    int status = 0;
    exec_server_t *server = exec_server_new (options, &status);
    if (!server)
        return status;
    exec_log ("serving %s with %s (capacity %lld%s) at %s",
              (char *) zlistx_first (options->activities), options->path,
              options->capacity, strchr (options->endpoint, ',')? " per broker": "",
              options->endpoint);
    act_worker_run (server->worker);
    exec_server_destroy (&server);
    exec_log ("stopped");
    return 0;
}

//  Parse the command line and serve. Exits 0, 1 (cannot start) or 2 (bad
//  usage).
int
main (int argc, char *argv [])
{
    //  The environment gives the defaults, as to actctl (an empty
    //  variable is not set)
    const char *endpoint = getenv ("ACTD_WORKER_ENDPOINT");
    const char *server_key = getenv ("ACTD_SERVER_KEY");
    const char *cert = getenv ("ACTD_CERT");
    exec_options_t options = {
        .endpoint = endpoint && *endpoint? endpoint: ACT_WORKER_ENDPOINT,
        .endpoint_source = endpoint && *endpoint? "$ACTD_WORKER_ENDPOINT": "the default",
        .curve_server = server_key && *server_key? server_key: NULL,
        .curve_source = "$ACTD_SERVER_KEY",
        .curve_cert = cert && *cert? cert: NULL,
        .cert_source = "$ACTD_CERT",
        .capacity = 1, .heartbeat = 1000, .liveness = 3,
        .grace = EXEC_DEFAULT_GRACE, .max_output = EXEC_DEFAULT_OUTPUT, .activities = zlistx_new ()
    };
    int rc = s_options_parse (&options, argc, argv);
    if (rc == -1)
        rc = s_serve (&options);
    free (options.path);
    free (options.params_schema);
    zlistx_destroy (&options.activities);
    return rc;
}
