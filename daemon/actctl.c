/*  =========================================================================
    actctl - the actd command line, on the C client library: its options,
    its usage and its command table. The commands are in actctl_calls.c,
    actctl_contexts.c, actctl_broker.c and actctl_tools.c, what they print
    in actctl_print.c (actctl.h joins them).

    Human-readable output by default, --json for scripts. A broker ERROR
    prints its code and message and exits 1; no reply in time exits 3;
    a bad command line exits 2.
    ========================================================================= */

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <unistd.h>
#include "actctl.h"

//  How long to wait for a reply unless --timeout says otherwise. A ping
//  asks only whether a broker is there, so it gives up sooner.
#define S_TIMEOUT_MS        30000
#define S_PING_TIMEOUT_MS   2000

//  How long to wait for a first connection unless --connect-timeout says
//  otherwise: a broker that is not there (or a CURVE key that does not
//  match) is said at once, not after the whole --timeout
#define S_CONNECT_TIMEOUT_MS 5000

static void
s_usage (FILE *stream)
{
    fprintf (stream,
        "usage: actctl [options] COMMAND [ARGS]\n"
        "commands:\n"
        "  call CONTEXT JSON [--wait]      submit a call; --wait: until it ends\n"
        "  plan CONTEXT JSON-ARRAY [--wait]\n"
        "  append CONTEXT JSON [--key K]   append a message (once per key)\n"
        "  resolve CONTEXT EXPR [--instance NAME]\n"
        "  view CONTEXT [--text]           the merged view\n"
        "  history CONTEXT [--from N] [--limit N] [--all]\n"
        "  tail CONTEXT [--from N] [--calls]   follow its messages live (Ctrl-C ends)\n"
        "  contexts [PREFIX]               list the contexts\n"
        "  delete CONTEXT                  delete a context, cancelling its calls\n"
        "  status CALL_ID\n"
        "  cancel CALL_ID\n"
        "  stats\n"
        "  ping\n"
        "  tools [ACTIVITY] [--format F]   the declared tools; F: json, or mcp, openai,\n"
        "                                  anthropic (a model API's tool list)\n"
        "  keygen NAME [--dir DIR] [--force]\n"
        "                                  write a CURVE keypair NAME.key, NAME.key_secret\n"
        "                                  (--force: over one that is there)\n"
        "options:\n"
        "  --endpoint EP     broker's client endpoint ($ACTD_ENDPOINT, else %s)\n"
        "  --json            print JSON, for scripts\n"
        "  --timeout MS      how long to wait for a reply (30000; ping: 2000)\n"
        "  --connect-timeout MS   how long to wait for a connection to the broker\n"
        "                    (5000; 0, or not below --timeout: as long as --timeout)\n"
        "  --curve-server KEY --curve-cert FILE   connect with CURVE\n"
        "                    ($ACTD_SERVER_KEY, $ACTD_CERT)\n"
        "  --version         print actctl's version\n"
        "exit: 0 ok, 1 the broker refused or the call failed, 2 usage, 3 no reply\n",
        ACT_CLIENT_ENDPOINT);
}

//  The commands that talk to the broker: name, how many words follow it
//  (at least, at most), and what runs it
typedef struct {
    const char *name;           //  The command's word
    int min_args;               //  Fewest words after it
    int max_args;               //  Most words after it
    actctl_run_fn *run;         //  What runs it
} s_command_t;

static const s_command_t s_commands [] = {
    { "call",     2, 2, actctl_call },
    { "plan",     2, 2, actctl_plan },
    { "append",   2, 2, actctl_append },
    { "resolve",  2, 2, actctl_resolve },
    { "view",     1, 1, actctl_view },
    { "history",  1, 1, actctl_history },
    { "tail",     1, 1, actctl_tail },
    { "contexts", 0, 1, actctl_contexts },
    { "delete",   1, 1, actctl_delete },
    { "status",   1, 1, actctl_status },
    { "cancel",   1, 1, actctl_cancel },
    { "stats",    0, 0, actctl_stats },
    { "ping",     0, 0, actctl_ping },
    { "tools",    0, 1, actctl_tools },
};

//  Run a command that talks to the broker; -1 for a bad command line
static int
s_command (act_client_t *client, actctl_options_t *options, const char *command,
           char **args, int nargs)
{
    for (size_t index = 0; index < sizeof s_commands / sizeof s_commands [0]; index++) {
        const s_command_t *entry = &s_commands [index];
        if (streq (command, entry->name))
            return nargs < entry->min_args || nargs > entry->max_args
                 ? -1: entry->run (client, options, args, nargs);
    }
    return -1;
}

//  The whole of text as a decimal integer from least to most, into
//  *target: no sign, no blank, no trailing byte, no overflow ("10x", "-1"
//  and "5000000000" for an int are not taken for something else). Returns
//  0, or 2 after naming the option and its bounds
static int
s_number (const char *option, const char *text, long long least, long long most,
          long long *target)
{
    char *end = NULL;
    errno = 0;
    long long value = isdigit ((unsigned char) *text)? strtoll (text, &end, 10): 0;
    if (!end || *end || errno || value < least || value > most) {
        fprintf (stderr, "actctl: %s takes a whole number of %lld to %lld, not '%s'\n",
                 option, least, most, text);
        return 2;
    }
    *target = value;
    return 0;
}

//  Parse the options into options; returns -1 to go on, else the exit code
static int
s_parse (int argc, char *argv [], actctl_options_t *options)
{
    static struct option long_options [] = {
        { "endpoint", required_argument, 0, 'e' }, { "json", no_argument, 0, 'j' },
        { "timeout", required_argument, 0, 't' }, { "wait", no_argument, 0, 'w' },
        { "text", no_argument, 0, 'x' }, { "instance", required_argument, 0, 'i' },
        { "from", required_argument, 0, 'f' }, { "limit", required_argument, 0, 'l' },
        { "all", no_argument, 0, 'a' }, { "dir", required_argument, 0, 'd' },
        { "curve-server", required_argument, 0, 's' },
        { "curve-cert", required_argument, 0, 'c' }, { "help", no_argument, 0, 'h' },
        { "version", no_argument, 0, 'v' }, { "calls", no_argument, 0, 'C' },
        { "key", required_argument, 0, 'k' }, { "format", required_argument, 0, 'F' },
        { "force", no_argument, 0, 'o' }, { "connect-timeout", required_argument, 0, 'T' },
        { 0, 0, 0, 0 }
    };
    int option;
    long long number;
    while ((option = getopt_long (argc, argv, "", long_options, NULL)) != -1) {
        switch (option) {
            case 'e': options->endpoint = optarg; break;
            case 'j': options->json = true; break;
            case 't':
                if (s_number ("--timeout", optarg, 1, INT_MAX, &number))
                    return 2;
                options->timeout = (int) number;
                break;
            case 'T':
                if (s_number ("--connect-timeout", optarg, 0, INT_MAX, &number))
                    return 2;
                options->connect_timeout = (int) number;
                break;
            case 'w': options->wait = true; break;
            case 'x': options->text = true; break;
            case 'i': options->instance = optarg; break;
            case 'f':
                //  The broker's bound of a _seq (a JSON integer)
                if (s_number ("--from", optarg, 0, INT64_MAX, &number))
                    return 2;
                options->from = (uint64_t) number;
                break;
            case 'l':
                if (s_number ("--limit", optarg, 1, 1000, &number))
                    return 2;
                options->limit = (uint64_t) number;
                break;
            case 'a': options->all = true; break;
            case 'd': options->dir = optarg; break;
            case 's':
                options->curve_server = optarg;
                options->curve_source = "--curve-server";
                break;
            case 'c': options->curve_cert = optarg; break;
            case 'C': options->calls = true; break;
            case 'k': options->key = optarg; break;
            case 'F': options->format = optarg; break;
            case 'o': options->force = true; break;
            case 'h': s_usage (stdout); return 0;
            case 'v': printf ("actctl %s\n", ACTD_VERSION); return 0;
            default: s_usage (stderr); return 2;
        }
    }
    if (optind >= argc) {
        s_usage (stderr);
        return 2;
    }
    if (!options->curve_server != !options->curve_cert && !streq (argv [optind], "keygen")) {
        //  Half of CURVE would silently talk in plain text (keygen talks
        //  to nobody, so a half-set environment does not stop it)
        fprintf (stderr, "actctl: --curve-server and --curve-cert go together "
                         "(or $ACTD_SERVER_KEY and $ACTD_CERT)\n");
        return 2;
    }
    if (options->timeout == 0)
        options->timeout = streq (argv [optind], "ping")? S_PING_TIMEOUT_MS: S_TIMEOUT_MS;
    if (options->connect_timeout < 0)
        options->connect_timeout = S_CONNECT_TIMEOUT_MS;
    //  A bound as long as the reply's is none: the reply's own says more
    if (options->connect_timeout >= options->timeout)
        options->connect_timeout = 0;
    //  The live line is for people: never in a pipe or a file, nor in JSON
    options->live = options->wait && !options->json && isatty (STDOUT_FILENO);
    return -1;
}

//  A client for the broker as the options say, or NULL after saying why
static act_client_t *
s_connect (actctl_options_t *options)
{
    act_client_t *client = act_client_new (options->endpoint);
    if (!client) {
        fprintf (stderr, "actctl: bad endpoint %s\n", options->endpoint);
        return NULL;
    }
    act_client_set_timeout (client, options->timeout);
    act_client_set_connect_timeout (client, options->connect_timeout);
    int rc = options->curve_server
           ? act_client_set_curve (client, options->curve_server, options->curve_cert): 0;
    if (rc == -2)
        fprintf (stderr, "actctl: %s: '%s' is not a CURVE public key (40 characters of "
                         "Z85, as actctl keygen prints it)\n", options->curve_source,
                 options->curve_server);
    else
    if (rc == -1 && errno == EINVAL)
        fprintf (stderr, "actctl: cannot read certificate %s: not a certificate with both "
                         "keys (a regular file of at most 64 KiB: actctl keygen makes "
                         "NAME.key and NAME.key_secret, both to be readable)\n", options->curve_cert);
    else
    if (rc)
        fprintf (stderr, "actctl: cannot read certificate %s: %s\n", options->curve_cert,
                 strerror (errno));
    if (rc)
        act_client_destroy (&client);
    return client;
}

int
main (int argc, char *argv [])
{
    actctl_options_t options = { .connect_timeout = -1 };
    options.endpoint = getenv ("ACTD_ENDPOINT")? getenv ("ACTD_ENDPOINT"): ACT_CLIENT_ENDPOINT;
    //  The names the Python and Node libraries read too
    options.curve_server = getenv ("ACTD_SERVER_KEY");
    options.curve_source = "$ACTD_SERVER_KEY";
    options.curve_cert = getenv ("ACTD_CERT");
    options.from = 1;
    options.limit = 1000;
    options.dir = ".";
    int rc = s_parse (argc, argv, &options);
    if (rc >= 0)
        return rc;
    const char *command = argv [optind];
    char **args = argv + optind + 1;
    int nargs = argc - optind - 1;
    if (streq (command, "keygen")) {
        if (nargs != 1) {
            s_usage (stderr);
            return 2;
        }
        return actctl_keygen (&options, args [0]);
    }
    zsys_handler_set (NULL);
    act_client_t *client = s_connect (&options);
    if (!client)
        return 2;
    rc = s_command (client, &options, command, args, nargs);
    act_client_destroy (&client);
    if (rc < 0) {
        s_usage (stderr);
        return 2;
    }
    return rc;
}
