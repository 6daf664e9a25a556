/*  =========================================================================
    act_http_config - actd-http's settings (see act_http_config.h).
    ========================================================================= */

#include "act_http_config.h"
#include <arpa/inet.h>
#include <getopt.h>
#include <sys/stat.h>

#ifndef ACTD_HTTP_DASHBOARD_DIR
#   define ACTD_HTTP_DASHBOARD_DIR "/usr/share/actd/dashboard"
#endif
#ifndef ACTD_HTTP_SOURCE_DASHBOARD_DIR
#   define ACTD_HTTP_SOURCE_DASHBOARD_DIR ACTD_HTTP_DASHBOARD_DIR
#endif

//  Replace *target with a copy of value (NULL or empty: none)
static void
s_set (char **target, const char *value)
{
    free (*target);
    *target = value && *value? strdup (value): NULL;
}

//  Parse "ADDRESS:PORT" (IPv6 in brackets) into the config; -1 if bad,
//  the address included: it must be numeric, as the server binds it
//  without a lookup, so that a name is a bad setting (exit 2) and not a
//  failure to listen that systemd would restart for ever
static int
s_listen (act_http_config_t *self, const char *text)
{
    const char *colon = strrchr (text, ':');
    if (!colon || colon == text)
        return -1;
    char *end;
    long port = strtol (colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535 || end == colon + 1)
        return -1;
    size_t length = (size_t) (colon - text);
    if (text [0] == '[' && colon [-1] == ']') {
        text++;
        length -= 2;
    }
    char *address = strndup (text, length);
    struct in6_addr numeric;
    if (inet_pton (AF_INET, address, &numeric) != 1
    &&  inet_pton (AF_INET6, address, &numeric) != 1) {
        free (address);
        return -1;
    }
    free (self->address);
    self->address = address;
    self->port = (int) port;
    return 0;
}

//  A decimal in [least, most], or -1 if value is not one
static long long
s_number (const char *value, long long least, long long most)
{
    char *end;
    errno = 0;
    long long number = value? strtoll (value, &end, 10): -1;
    if (!value || !*value || *end || errno || number < least || number > most)
        return -1;
    return number;
}

//  The tokens section; -1 after printing what is wrong
static int
s_tokens (act_http_config_t *self, zconfig_t *section, const char *file)
{
    for (zconfig_t *item = zconfig_child (section); item; item = zconfig_next (item)) {
        const char *token = zconfig_get (item, "token", NULL);
        const char *certificate = zconfig_get (item, "certificate", NULL);
        for (zconfig_t *field = zconfig_child (item); field; field = zconfig_next (field))
            if (!streq (zconfig_name (field), "token")
            &&  !streq (zconfig_name (field), "certificate")) {
                fprintf (stderr, "actd-http: %s: unknown setting tokens/%s/%s\n", file,
                         zconfig_name (item), zconfig_name (field));
                return -1;
            }
        if (!token || strlen (token) < 16) {
            fprintf (stderr, "actd-http: %s: tokens/%s/token must be at least 16 bytes\n",
                     file, zconfig_name (item));
            return -1;
        }
        self->tokens = realloc (self->tokens, (self->ntokens + 1) * sizeof *self->tokens);
        act_http_token_t *entry = &self->tokens [self->ntokens++];
        entry->name = strdup (zconfig_name (item));
        entry->token = strdup (token);
        entry->certificate = certificate && *certificate? strdup (certificate): NULL;
    }
    return 0;
}

//  Set *target to the comma-separated list value, the blanks around its
//  entries taken out (NULL: none); -1 if an entry is empty, holds a blank
//  or a "/", or, for origins, does not start "http://" or "https://" (an
//  origin is sent as SCHEME://HOST[:PORT], without a path)
static int
s_list (char **target, const char *value, bool origins)
{
    char *list = strdup (value? value: "");     //  Never longer than value
    size_t size = 0;
    const char *entry = value? value: "";
    while (*(entry += strspn (entry, " \t"))) {
        size_t length = strcspn (entry, ",");
        const char *next = entry + length + (entry [length] == ',');
        while (length && (entry [length - 1] == ' ' || entry [length - 1] == '\t'))
            length--;
        size_t scheme = !origins? 0
                      : strncasecmp (entry, "http://", 7) == 0? 7
                      : strncasecmp (entry, "https://", 8) == 0? 8: length;
        if (scheme >= length || strcspn (entry + scheme, " \t/") < length - scheme) {
            free (list);
            return -1;
        }
        if (size)
            list [size++] = ',';
        memcpy (list + size, entry, length);
        size += length;
        entry = next;
    }
    list [size] = 0;
    s_set (target, list);
    free (list);
    return 0;
}

//  One setting of the http section; -1 if it is unknown or bad
static int
s_setting (act_http_config_t *self, const char *name, const char *value)
{
    long long number;
    if (streq (name, "listen"))
        return s_listen (self, value);
    //  What has a default cannot be empty: an empty endpoint once reached
    //  the broker thread as NULL
    if ((streq (name, "broker") || streq (name, "dashboard_dir")) && !(value && *value))
        return -1;
    if (streq (name, "broker"))
        s_set (&self->broker, value);
    else
    if (streq (name, "server_key"))
        s_set (&self->server_key, value);
    else
    if (streq (name, "certificate"))
        s_set (&self->certificate, value);
    else
    if (streq (name, "dashboard_dir"))
        s_set (&self->dashboard_dir, value);
    else
    if (streq (name, "allowed_hosts"))
        return s_list (&self->allowed_hosts, value, false);
    else
    if (streq (name, "allowed_origins"))
        return s_list (&self->allowed_origins, value, true);
    else
    if (streq (name, "request_timeout_ms")) {
        if ((number = s_number (value, 100, 3600000)) < 0)
            return -1;
        self->request_timeout_ms = (int) number;
    }
    else
    if (streq (name, "max_body_bytes")) {
        if ((number = s_number (value, 1024, 1LL << 30)) < 0)
            return -1;
        self->max_body_bytes = (size_t) number;
    }
    else
    if (streq (name, "connection_limit")) {
        if ((number = s_number (value, 1, 100000)) < 0)
            return -1;
        self->connection_limit = (int) number;
    }
    else
    if (streq (name, "max_stream_bytes")) {
        if ((number = s_number (value, 65536, 1LL << 30)) < 0)
            return -1;
        self->max_stream_bytes = (size_t) number;
    }
    else
    if (streq (name, "max_stream_events")) {
        if ((number = s_number (value, 16, 10000000)) < 0)
            return -1;
        self->max_stream_events = (size_t) number;
    }
    else
        return -1;
    return 0;
}

//  The config file parsed, or NULL after printing why: it cannot be read,
//  or it is not ZPL (zconfig has said where; zconfig_load would leak its
//  zfile then, so the text is read here)
static zconfig_t *
s_load (const char *file)
{
    FILE *handle = fopen (file, "r");
    if (!handle) {
        fprintf (stderr, "actd-http: cannot read %s: %s\n", file, strerror (errno));
        return NULL;
    }
    char *text = NULL;
    size_t length = 0;
    FILE *copy = open_memstream (&text, &length);
    char buffer [4096];
    size_t got;
    while ((got = fread (buffer, 1, sizeof buffer, handle)) > 0)
        fwrite (buffer, 1, got, copy);
    int error = ferror (handle)? errno: 0;
    fclose (handle);
    fclose (copy);
    zconfig_t *root = error? NULL: zconfig_str_load (text);
    if (error)
        fprintf (stderr, "actd-http: cannot read %s: %s\n", file, strerror (error));
    else
    if (!root)
        fprintf (stderr, "actd-http: %s: not a valid ZPL file\n", file);
    free (text);
    return root;
}

//  The config file; -1 after printing what is wrong
static int
s_file (act_http_config_t *self, const char *file)
{
    zconfig_t *root = s_load (file);
    if (!root)
        return -1;
    int rc = 0;
    for (zconfig_t *section = zconfig_child (root); section && !rc;
         section = zconfig_next (section)) {
        if (streq (zconfig_name (section), "tokens"))
            rc = s_tokens (self, section, file);
        else
        if (streq (zconfig_name (section), "http")) {
            for (zconfig_t *item = zconfig_child (section); item && !rc;
                 item = zconfig_next (item))
                if (s_setting (self, zconfig_name (item), zconfig_value (item))) {
                    fprintf (stderr, "actd-http: %s: bad or unknown setting http/%s = '%s'\n",
                             file, zconfig_name (item),
                             zconfig_value (item)? zconfig_value (item): "");
                    rc = -1;
                }
        }
        else {
            fprintf (stderr, "actd-http: %s: unknown section '%s'\n", file,
                     zconfig_name (section));
            rc = -1;
        }
    }
    zconfig_destroy (&root);
    return rc;
}

//  --help
static void
s_usage (void)
{
    printf ("usage: actd-http [options]\n"
        "  -c, --config FILE      config file (see actd-http.cfg)\n"
        "  -l, --listen ADDR:PORT where to serve HTTP (127.0.0.1:8480)\n"
        "  -e, --endpoint EP      actd's client endpoint ($ACTD_ENDPOINT, else\n"
        "                         tcp://127.0.0.1:5555)\n"
        "  --server-key KEY       CURVE: actd's public key ($ACTD_SERVER_KEY)\n"
        "  --certificate FILE     CURVE: this client's certificate ($ACTD_CERT)\n"
        "  --dashboard-dir DIR    the dashboard's static files\n"
        "  -v, --verbose          log every request\n"
        "  --version              print the version\n");
}

static const struct option s_options [] = {
    { "config", required_argument, NULL, 'c' },
    { "listen", required_argument, NULL, 'l' },
    { "endpoint", required_argument, NULL, 'e' },
    { "server-key", required_argument, NULL, 'k' },
    { "certificate", required_argument, NULL, 'C' },
    { "dashboard-dir", required_argument, NULL, 'd' },
    { "verbose", no_argument, NULL, 'v' },
    { "version", no_argument, NULL, 'V' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 }
};

//  The config file the command line names (the last -c), or NULL. getopt
//  reads it as the second pass will, so that every spelling it takes
//  counts: -cFILE, -vc FILE, --config=FILE, --conf FILE. Errors are left
//  to the second pass.
static const char *
s_config_file (int argc, char *argv [])
{
    const char *file = NULL;
    int saved = opterr, option;
    opterr = 0;
    optind = 1;
    while ((option = getopt_long (argc, argv, "c:l:e:vh", s_options, NULL)) != -1)
        if (option == 'c')
            file = optarg;
    opterr = saved;
    return file;
}

//  The command line, after the file; -1 (*status set) when the program stops
static int
s_arguments (act_http_config_t *self, int argc, char *argv [], int *status)
{
    optind = 1;
    int option;
    while ((option = getopt_long (argc, argv, "c:l:e:vh", s_options, NULL)) != -1) {
        if (option == 'l' && s_listen (self, optarg)) {
            fprintf (stderr, "actd-http: --listen wants ADDRESS:PORT with a numeric IPv4 or "
                             "IPv6 address, not '%s'\n", optarg);
            return -1;
        }
        if ((option == 'e' || option == 'd') && !*optarg) {
            fprintf (stderr, "actd-http: %s needs a value\n",
                     option == 'e'? "--endpoint": "--dashboard-dir");
            return -1;
        }
        if (option == 'e')
            s_set (&self->broker, optarg);
        if (option == 'k')
            s_set (&self->server_key, optarg);
        if (option == 'C')
            s_set (&self->certificate, optarg);
        if (option == 'd')
            s_set (&self->dashboard_dir, optarg);
        if (option == 'v')
            self->verbose = true;
        if (option == 'V' || option == 'h') {
            if (option == 'V')
                printf ("actd-http %s\n", ACTD_VERSION);
            else
                s_usage ();
            *status = 0;
            return -1;
        }
        if (option == '?')
            return -1;
    }
    if (optind < argc) {
        fprintf (stderr, "actd-http: unexpected argument '%s'\n", argv [optind]);
        return -1;
    }
    return 0;
}

act_http_config_t *
act_http_config_new (int argc, char *argv [], int *status)
{
    act_http_config_t *self = calloc (1, sizeof *self);
    *status = 2;
    self->address = strdup ("127.0.0.1");
    self->port = 8480;
    self->broker = strdup ("tcp://127.0.0.1:5555");
    struct stat info;
    self->dashboard_dir = strdup (stat (ACTD_HTTP_DASHBOARD_DIR, &info) == 0
                                  ? ACTD_HTTP_DASHBOARD_DIR: ACTD_HTTP_SOURCE_DASHBOARD_DIR);
    self->request_timeout_ms = 30000;
    //  actd's default server/max_message_bytes: a body is one frame, and
    //  libzmq cuts the connection (every request in flight on it) that
    //  sends a frame over 4 x max_message_bytes + 64 KiB
    self->max_body_bytes = 1048576;
    self->connection_limit = 256;
    //  An event stream's client that reads slower than events come: what
    //  waits for it is bounded (4 of actd's largest messages by default)
    self->max_stream_bytes = 4194304;
    self->max_stream_events = 16384;
    //  The file first (wherever -c is on the line), the command line last
    const char *file = s_config_file (argc, argv);
    if (file && s_file (self, file)) {
        act_http_config_destroy (&self);
        return NULL;
    }
    if (getenv ("ACTD_ENDPOINT") && *getenv ("ACTD_ENDPOINT"))
        s_set (&self->broker, getenv ("ACTD_ENDPOINT"));
    if (getenv ("ACTD_SERVER_KEY") && *getenv ("ACTD_SERVER_KEY"))
        s_set (&self->server_key, getenv ("ACTD_SERVER_KEY"));
    if (getenv ("ACTD_CERT") && *getenv ("ACTD_CERT"))
        s_set (&self->certificate, getenv ("ACTD_CERT"));
    if (s_arguments (self, argc, argv, status))
        act_http_config_destroy (&self);
    return self;
}

void
act_http_config_destroy (act_http_config_t **self_p)
{
    if (self_p && *self_p) {
        act_http_config_t *self = *self_p;
        for (size_t i = 0; i < self->ntokens; i++) {
            free (self->tokens [i].name);
            free (self->tokens [i].token);
            free (self->tokens [i].certificate);
        }
        free (self->tokens);
        free (self->address);
        free (self->broker);
        free (self->server_key);
        free (self->certificate);
        free (self->dashboard_dir);
        free (self->allowed_hosts);
        free (self->allowed_origins);
        free (self);
        *self_p = NULL;
    }
}
