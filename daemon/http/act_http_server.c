/*  =========================================================================
    act_http_server - actd-http's HTTP side (see act_http_server.h).
    ========================================================================= */

#include "act_http_server.h"
#include "act_http_api.h"
#include "act_http_metrics.h"
#include "act_http_req.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>

#define S_IDLE_SECONDS  120     //  Idle connections are closed after this
#define S_STOP_GRACE_MS 2000    //  Stopping waits this long for answers to go out
#define S_LIMIT_SPARE   16      //  libmicrohttpd's own limit is connection_limit + this

struct _act_http_server_t {
    const act_http_config_t *config;    //  Settings
    act_http_auth_t *auth;      //  Tokens and their connections to actd
    struct MHD_Daemon *daemon;  //  libmicrohttpd
    atomic_int connections;     //  HTTP connections open now
};

//  Paths are decoded by the routes, segment by segment (a context id may
//  hold "/", sent as %2F): libmicrohttpd must leave them as sent. Query
//  arguments are decoded by act_http_req_arg.
static size_t
s_unescape (void *cls, struct MHD_Connection *connection, char *text)
{
    return strlen (text);
}

//  The content type of a static file, by its extension
static const char *
s_content_type (const char *path)
{
    const char *dot = strrchr (path, '.');
    const struct { const char *extension, *type; } types [] = {
        { ".html", "text/html; charset=utf-8" }, { ".js", "text/javascript; charset=utf-8" },
        { ".css", "text/css; charset=utf-8" }, { ".svg", "image/svg+xml" },
        { ".png", "image/png" }, { ".json", "application/json" },
        { ".ico", "image/x-icon" }, { ".txt", "text/plain; charset=utf-8" },
        { ".woff2", "font/woff2" }
    };
    for (size_t i = 0; dot && i < sizeof types / sizeof types [0]; i++)
        if (streq (dot, types [i].extension))
            return types [i].type;
    return "application/octet-stream";
}

//  GET / and /ui/...: a file of dashboard_dir (never outside it)
static enum MHD_Result
s_static (act_http_req_t *req)
{
    const char *rest = streq (req->path, "/")? "": req->path + 3;
    while (*rest == '/')
        rest++;
    char *name = act_http_req_decode (rest, strlen (rest));
    if (!name || strstr (name, "..") || strchr (name, '\\')) {
        free (name);
        return act_http_req_error (req, ACT_E_NOT_FOUND, "no such file");
    }
    char *file = zsys_sprintf ("%s/%s", req->config->dashboard_dir,
                               *name? name: "index.html");
    free (name);
    int fd = open (file, O_RDONLY | O_CLOEXEC);
    struct stat info;
    if (fd >= 0 && (fstat (fd, &info) || !S_ISREG (info.st_mode))) {
        close (fd);
        fd = -1;
    }
    enum MHD_Result rc;
    if (fd < 0)
        rc = act_http_req_error (req, ACT_E_NOT_FOUND, "no such file");
    else {
        struct MHD_Response *response = MHD_create_response_from_fd ((uint64_t) info.st_size,
                                                                     fd);
        MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE,
                                 s_content_type (file));
        MHD_add_response_header (response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        act_http_req_headers (response, true);
        rc = MHD_queue_response (req->connection, 200, response);
        MHD_destroy_response (response);
        req->status = 200;
    }
    zstr_free (&file);
    return rc;
}

//  GET /healthz: ok when actd answers PING; 503 unreachable at once (a
//  second at most) while actd-http has no connection to actd
static enum MHD_Result
s_healthz (act_http_req_t *req)
{
    act_reply_t *reply = act_http_broker_ask (req->broker, req->config->request_timeout_ms,
                                              "PING", NULL);
    if (reply && streq (reply->verb, "ERROR"))
        return act_http_req_reply (req, reply, 500);
    bool up = reply && streq (reply->verb, "PONG");
    act_reply_destroy (&reply);
    if (up)
        return act_http_req_send (req, 200, "text/plain; charset=utf-8", "ok\n", 3);
    return act_http_req_timeout (req, "actd did not answer PING");
}

//  The length of the host in authority "HOST[:PORT]" or "[IPV6][:PORT]"
//  (a Host header, or an origin after its "SCHEME://"); 0 when there is
//  no host or what follows it is not ":DIGITS"
static size_t
s_host_length (const char *authority)
{
    bool bracket = *authority == '[';
    size_t length = bracket? strcspn (authority, "]") + 1: strcspn (authority, ":");
    if (bracket && authority [length - 1] != ']')
        return 0;
    const char *port = authority + length;
    if (*port == ':' && port [1] && strspn (port + 1, "0123456789") == strlen (port + 1))
        return length;
    return *port? 0: length;
}

//  True when host[0..length) names this machine's loopback: localhost,
//  an address of 127.0.0.0/8, or [::1]
static bool
s_loopback (const char *host, size_t length)
{
    char name [INET6_ADDRSTRLEN + 2];
    if (length < 3 || length >= sizeof name)
        return false;
    memcpy (name, host, length);
    name [length] = 0;
    struct in_addr ipv4;
    struct in6_addr ipv6;
    if (name [0] == '[') {
        name [length - 1] = 0;
        return inet_pton (AF_INET6, name + 1, &ipv6) == 1 && IN6_IS_ADDR_LOOPBACK (&ipv6);
    }
    return strcasecmp (name, "localhost") == 0
        || (inet_pton (AF_INET, name, &ipv4) == 1 && ntohl (ipv4.s_addr) >> 24 == 127);
}

//  True when list (comma-separated, as act_http_config keeps it) holds
//  item[0..length), ASCII case ignored
static bool
s_listed (const char *list, const char *item, size_t length)
{
    while (list && *list) {
        size_t size = strcspn (list, ",");
        if (size == length && strncasecmp (list, item, length) == 0)
            return true;
        list += size + (list [size] == ',');
    }
    return false;
}

//  True when a request sent to host (its Host header, or NULL) may be
//  answered: with tokens always (the token is the defence); without,
//  only for a loopback name or one of allowed_hosts (with or without the
//  port), so that a web page whose own name an attacker resolves to this
//  machine (DNS rebinding) is refused. A request without Host is not a
//  browser's.
static bool
s_host_allowed (act_http_server_t *self, const char *host)
{
    if (self->config->ntokens || !host)
        return true;
    size_t length = s_host_length (host);
    return (length && s_loopback (host, length))
        || s_listed (self->config->allowed_hosts, host, strlen (host))
        || (length && s_listed (self->config->allowed_hosts, host, length));
}

//  True when a request with this Origin header (NULL: none, as from a
//  program, or a browser's same-origin GET) sent to host may be answered:
//  a loopback origin (http or https, any port), one of allowed_origins,
//  or the very host and port the request was sent to (a page actd-http
//  served itself, by whatever name it was opened: that name has passed
//  s_host_allowed, or a token is needed). "null" (a sandboxed frame, a
//  file) and any other site are refused: a browser sends any site's
//  requests, and a "simple" one (a form, a text/plain POST) has its
//  effect without the page reading the answer.
static bool
s_origin_allowed (act_http_server_t *self, const char *origin, const char *host)
{
    if (!origin || s_listed (self->config->allowed_origins, origin, strlen (origin)))
        return true;
    const char *authority = strncasecmp (origin, "http://", 7) == 0? origin + 7
                          : strncasecmp (origin, "https://", 8) == 0? origin + 8: NULL;
    size_t length = authority? s_host_length (authority): 0;
    return length && (s_loopback (authority, length)
                      || (host && strcasecmp (authority, host) == 0));
}

//  The connection of req's token; false when a token was needed
static bool
s_authorize (act_http_server_t *self, act_http_req_t *req)
{
    const char *header = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_AUTHORIZATION);
    char *access_token = act_http_req_arg (req, "access_token");
    req->broker = act_http_auth_broker (self->auth, header, access_token);
    free (access_token);
    return req->broker != NULL;
}

//  Answer req, whose body has come whole
static enum MHD_Result
s_route (act_http_server_t *self, act_http_req_t *req)
{
    const char *path = req->path;
    bool get = act_http_req_get (req);
    const char *host = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                    MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value (req->connection, MHD_HEADER_KIND,
                                                      MHD_HTTP_HEADER_ORIGIN);
    if (!s_host_allowed (self, host))
        return act_http_req_error (req, "forbidden_host", "Host '%s' is not a loopback name "
                                   "nor in http/allowed_hosts", host);
    if (!s_origin_allowed (self, origin, host))
        return act_http_req_error (req, "forbidden_origin", "Origin '%s' is not actd-http's "
                                   "own, a loopback one nor in http/allowed_origins", origin);
    if (get && (streq (path, "/") || streq (path, "/ui") || strncmp (path, "/ui/", 4) == 0))
        return s_static (req);
    bool api = strncmp (path, "/v1/", 4) == 0;
    if (!api && !streq (path, "/metrics") && !streq (path, "/healthz"))
        return act_http_req_error (req, ACT_E_NOT_FOUND, "no route %s %s", req->method, path);
    if (!s_authorize (self, req) && streq (path, "/healthz"))
        req->broker = act_http_auth_any (self->auth);     //  PING needs no right
    if (!req->broker)
        return act_http_req_error (req, "unauthenticated",
                                   "a bearer token is needed (Authorization: Bearer TOKEN)");
    if (api)
        return act_http_api_handle (req);
    if (!get)
        return act_http_req_error (req, "method_not_allowed", "%s wants GET", path);
    return streq (path, "/metrics")? act_http_metrics_handle (req): s_healthz (req);
}

//  libmicrohttpd's handler: called once with the headers, then with each
//  piece of the body, then once more with none: then the request is routed
static enum MHD_Result
s_access (void *cls, struct MHD_Connection *connection, const char *url, const char *method,
          const char *version, const char *upload_data, size_t *upload_data_size,
          void **con_cls)
{
    act_http_server_t *self = (act_http_server_t *) cls;
    act_http_req_t *req = *con_cls;
    if (!req) {
        //  The headers came: the body (if any) follows in later calls
        req = calloc (1, sizeof *req);
        req->connection = connection;
        req->method = method;
        req->path = url;
        req->config = self->config;
        *con_cls = req;
        return MHD_YES;
    }
    if (*upload_data_size) {
        //  Past max_body_bytes the rest is read and dropped: the answer is 413
        if (!req->too_large && req->size + *upload_data_size > self->config->max_body_bytes) {
            req->too_large = true;
            free (req->body);
            req->body = NULL;
            req->size = 0;
        }
        if (!req->too_large) {
            req->body = realloc (req->body, req->size + *upload_data_size + 1);
            memcpy (req->body + req->size, upload_data, *upload_data_size);
            req->size += *upload_data_size;
            req->body [req->size] = 0;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    return s_route (self, req);
}

//  The request is over (answered, or the connection dropped)
static void
s_completed (void *cls, struct MHD_Connection *connection, void **con_cls,
             enum MHD_RequestTerminationCode code)
{
    act_http_server_t *self = (act_http_server_t *) cls;
    act_http_req_t *req = *con_cls;
    if (!req)
        return;
    if (self->config->verbose)
        zsys_info ("actd-http: %s %s %u", req->method, req->path, req->status);
    free (req->body);
    free (req);
    *con_cls = NULL;
}

//  libmicrohttpd's accept policy: a connection past connection_limit is
//  closed at once. (At its own limit libmicrohttpd stops accepting, and a
//  new connection waits, unanswered, until another ends: a health check
//  would hang instead of failing.) The count is s_notify's; its own limit
//  is set a little higher, so that it never stops accepting first.
static enum MHD_Result
s_accept (void *cls, const struct sockaddr *address, socklen_t length)
{
    act_http_server_t *self = (act_http_server_t *) cls;
    if (atomic_load (&self->connections) < self->config->connection_limit)
        return MHD_YES;
    if (self->config->verbose)
        zsys_info ("actd-http: connection_limit (%d) reached: a new connection is closed",
                   self->config->connection_limit);
    return MHD_NO;
}

//  A connection started or closed: counted for s_accept
static void
s_notify (void *cls, struct MHD_Connection *connection, void **socket_context,
          enum MHD_ConnectionNotificationCode code)
{
    act_http_server_t *self = (act_http_server_t *) cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        atomic_fetch_add (&self->connections, 1);
    else
        atomic_fetch_sub (&self->connections, 1);
}

//  libmicrohttpd's messages (with -v only: a client that leaves an event
//  stream is one of them, "Failed to send the chunked response body")
static void
s_log (void *cls, const char *format, va_list args)
{
    char message [512];
    vsnprintf (message, sizeof message, format, args);
    size_t length = strlen (message);
    while (length && message [length - 1] == '\n')
        message [--length] = 0;
    zsys_info ("actd-http: libmicrohttpd: %s", message);
}

act_http_server_t *
act_http_server_new (const act_http_config_t *config, act_http_auth_t *auth)
{
    struct sockaddr_in ipv4 = { .sin_family = AF_INET, .sin_port = htons (config->port) };
    struct sockaddr_in6 ipv6 = { .sin6_family = AF_INET6, .sin6_port = htons (config->port) };
    struct sockaddr *address = NULL;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
                   | MHD_USE_ITC | (config->verbose? MHD_USE_ERROR_LOG: 0);
    if (inet_pton (AF_INET, config->address, &ipv4.sin_addr) == 1)
        address = (struct sockaddr *) &ipv4;
    else
    if (inet_pton (AF_INET6, config->address, &ipv6.sin6_addr) == 1) {
        address = (struct sockaddr *) &ipv6;
        flags |= MHD_USE_IPv6;
    }
    if (!address) {
        zsys_error ("actd-http: listen: '%s' is not a numeric IPv4 or IPv6 address",
                    config->address);
        return NULL;
    }
    act_http_server_t *self = calloc (1, sizeof *self);
    self->config = config;
    self->auth = auth;
    atomic_init (&self->connections, 0);
    self->daemon = MHD_start_daemon (flags, (uint16_t) config->port, s_accept, self,
        s_access, self,
        MHD_OPTION_SOCK_ADDR, address,
        MHD_OPTION_EXTERNAL_LOGGER, s_log, NULL,
        //  s_accept keeps to connection_limit; libmicrohttpd's count of
        //  connections lags a little behind s_notify's
        MHD_OPTION_CONNECTION_LIMIT, (unsigned) config->connection_limit + S_LIMIT_SPARE,
        MHD_OPTION_NOTIFY_CONNECTION, s_notify, self,
        //  An idle keep-alive connection holds a thread: closed after this
        //  long without traffic (an event stream writes every 15 s)
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) S_IDLE_SECONDS,
        MHD_OPTION_UNESCAPE_CALLBACK, s_unescape, NULL,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_END);
    if (!self->daemon) {
        zsys_error ("actd-http: cannot listen on %s:%d", config->address, config->port);
        free (self);
        return NULL;
    }
    return self;
}

void
act_http_server_quiesce (act_http_server_t *self)
{
    //  The listening socket becomes ours to close
    MHD_socket listening = MHD_quiesce_daemon (self->daemon);
    if (listening != MHD_INVALID_SOCKET)
        close (listening);
}

void
act_http_server_destroy (act_http_server_t **self_p)
{
    if (self_p && *self_p) {
        act_http_server_t *self = *self_p;
        //  Let the answers of the requests woken by act_http_auth_stop go
        //  out: stopping closes every connection at once
        int64_t deadline = zclock_mono () + S_STOP_GRACE_MS;
        while (zclock_mono () < deadline) {
            const union MHD_DaemonInfo *info = MHD_get_daemon_info (
                self->daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
            if (!info || info->num_connections == 0)
                break;
            zclock_sleep (20);
        }
        MHD_stop_daemon (self->daemon);
        free (self);
        *self_p = NULL;
    }
}

int
act_http_server_port (act_http_server_t *self)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (self->daemon,
                                                            MHD_DAEMON_INFO_BIND_PORT);
    return info? info->port: -1;
}
