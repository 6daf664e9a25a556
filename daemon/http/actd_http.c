/*  =========================================================================
    actd-http - actd's HTTP face: a JSON API over ACT/1, Server-Sent
    Events of WATCH, Prometheus metrics and the dashboard's static files
    (docs/http.md). A client of actd like any other: it connects over
    ACT/1 (with CURVE when configured) and holds no state of its own.
    ========================================================================= */

#include "act_http_server.h"
#include <signal.h>

int
main (int argc, char *argv [])
{
    //  Logs (-v's request lines, the server's errors) go to stderr, as
    //  docs/http.md says; CZMQ's default stream is stdout
    zsys_set_logstream (stderr);
    int status;
    act_http_config_t *config = act_http_config_new (argc, argv, &status);
    if (!config)
        return status;
    //  SIGINT and SIGTERM are taken by sigwait below: blocked before any
    //  thread starts, every thread inherits the mask
    sigset_t signals;
    sigemptyset (&signals);
    sigaddset (&signals, SIGINT);
    sigaddset (&signals, SIGTERM);
    pthread_sigmask (SIG_BLOCK, &signals, NULL);
    signal (SIGPIPE, SIG_IGN);
    act_err_t err = { 0 };
    act_http_auth_t *auth = act_http_auth_new (config, &err);
    if (!auth) {
        fprintf (stderr, "actd-http: %s\n", err.message);
        act_http_config_destroy (&config);
        return 2;
    }
    act_http_server_t *server = act_http_server_new (config, auth);
    if (!server) {
        act_http_auth_destroy (&auth);
        act_http_config_destroy (&config);
        return 1;
    }
    bool ipv6 = strchr (config->address, ':') != NULL;
    printf ("actd-http: listening on http://%s%s%s:%d/ (actd at %s%s%s)\n",
            ipv6? "[": "", config->address, ipv6? "]": "", act_http_server_port (server),
            config->broker, config->server_key? ", CURVE": "",
            config->ntokens? ", bearer tokens": "");
    //  Without tokens whoever reaches the port acts as actd-http's own
    //  identity: fine on loopback, said plainly anywhere else; and only
    //  a request for a loopback name or one of allowed_hosts is answered
    if (!config->ntokens && strncmp (config->address, "127.", 4) != 0
    &&  strcmp (config->address, "::1") != 0)
        printf ("actd-http: WARNING: no bearer tokens and %s is not loopback: anyone who "
                "reaches this port has every right actd gives actd-http's %s (set tokens, "
                "or listen on 127.0.0.1); without tokens a request whose Host is not a "
                "loopback name is refused (403): list the names clients use in "
                "http/allowed_hosts (now: %s)\n", config->address,
                config->certificate? "certificate": "connection",
                config->allowed_hosts? config->allowed_hosts: "none");
    fflush (stdout);
    int signal_number;
    sigwait (&signals, &signal_number);
    //  Take no new connection, wake every thread waiting for actd, then
    //  let the connections finish
    act_http_server_quiesce (server);
    act_http_auth_stop (auth);
    act_http_server_destroy (&server);
    act_http_auth_destroy (&auth);
    act_http_config_destroy (&config);
    return 0;
}
