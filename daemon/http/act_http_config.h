/*  =========================================================================
    act_http_config - actd-http's settings: defaults, then the config file
    (zconfig, etc/actd-http.cfg), then ACTD_ENDPOINT, ACTD_SERVER_KEY and
    ACTD_CERT, then the command line.
    ========================================================================= */

#ifndef ACT_HTTP_CONFIG_H_INCLUDED
#define ACT_HTTP_CONFIG_H_INCLUDED

#include <czmq.h>

//  One bearer token and the CURVE certificate its requests go out with
typedef struct {
    char *name;                 //  Its section name (for logs)
    char *token;                //  The secret the client sends
    char *certificate;          //  CURVE client certificate file, or NULL
} act_http_token_t;

typedef struct {
    char *address;              //  Address to listen on (numeric IPv4 or IPv6)
    int port;                   //  Port to listen on
    char *broker;               //  actd's client endpoint(s)
    char *server_key;           //  CURVE: actd's public key (Z85), or NULL: plain
    char *certificate;          //  CURVE: certificate of requests without a token
    char *dashboard_dir;        //  Static files of the dashboard
    int request_timeout_ms;     //  How long a request waits for actd (then 504)
    size_t max_body_bytes;      //  Largest request body (then 413)
    int connection_limit;       //  HTTP connections at once
    size_t max_stream_bytes;    //  Event text waiting for one event stream's
                                //  client (then the stream ends: busy)
    size_t max_stream_events;   //  Events waiting for it (likewise)
    bool verbose;               //  Log each request
    char *allowed_hosts;        //  Host names served besides loopback ones
                                //  ("a,b": comma-separated, no spaces), or NULL
    char *allowed_origins;      //  Origins served besides loopback ones
                                //  ("http://a:8480,https://b"), or NULL
    act_http_token_t *tokens;   //  Bearer tokens
    size_t ntokens;             //  Number of tokens (0: no token needed)
} act_http_config_t;

//  Settings from argv (and the file it names with -c/--config). Returns a
//  new config, or NULL after printing why to stderr (*status: 0 for
//  --help and --version, 2 for a bad argument or file).
act_http_config_t *act_http_config_new (int argc, char *argv [], int *status);

//  Destroy the config and null the pointer; safe on NULL.
void act_http_config_destroy (act_http_config_t **self_p);

#endif
