/*  =========================================================================
    act_http_req - one HTTP request as the routes see it: its method, path,
    query and body, the broker its token chose, and the ways to answer it
    (JSON, an ACT/1 error mapped to its HTTP status, a broker reply).
    ========================================================================= */

#ifndef ACT_HTTP_REQ_H_INCLUDED
#define ACT_HTTP_REQ_H_INCLUDED

#include <microhttpd.h>
#include "act_http_broker.h"
#include "act_http_config.h"

typedef struct {
    struct MHD_Connection *connection;  //  libmicrohttpd's connection
    const char *method;         //  GET, POST, DELETE, ...
    const char *path;           //  The path as sent (still percent-encoded)
    char *body;                 //  The body received (NUL-terminated), or NULL
    size_t size;                //  Its length
    bool too_large;             //  The body passed max_body_bytes (dropped)
    act_http_broker_t *broker;  //  Where its ACT/1 requests go (by token)
    const act_http_config_t *config;    //  Settings
    unsigned status;            //  Status answered (for the log)
} act_http_req_t;

//  True for GET, and for HEAD, which every GET route answers as GET does
//  (libmicrohttpd leaves the body out).
bool act_http_req_get (act_http_req_t *self);

//  The HTTP status of an ACT/1 error code (docs/http.md's table).
unsigned act_http_req_status (const char *code);

//  text[0..length) percent-decoded ("+" kept), as a new string, or NULL
//  when an escape is bad or decodes to a NUL byte.
char *act_http_req_decode (const char *text, size_t length);

//  The query argument name, decoded ("+" is a space), as a new string, or
//  NULL when absent or badly encoded.
char *act_http_req_arg (act_http_req_t *self, const char *name);

//  The query argument name as a decimal in [least, most]; fallback when it
//  is absent; -1 when it is present but not such a number.
long long act_http_req_number (act_http_req_t *self, const char *name, long long fallback,
                               long long least, long long most);

//  Add the headers every answer carries to response: nosniff (a body is
//  never taken for another type than it is sent as) and no Referer from
//  the dashboard's requests; with page (the dashboard's files) also those
//  that forbid framing it anywhere (X-Frame-Options, the CSP's
//  frame-ancestors, against clickjacking) and its Content-Security-Policy
//  (scripts, styles, requests and images of actd-http alone, but data:
//  images: the page's icon).
void act_http_req_headers (struct MHD_Response *response, bool page);

//  Answer with status, content type and body (copied).
enum MHD_Result act_http_req_send (act_http_req_t *self, unsigned status, const char *type,
                                   const char *body, size_t size);

//  Answer status with value as JSON (value is taken).
enum MHD_Result act_http_req_json (act_http_req_t *self, unsigned status, json_t *value);

//  Answer the error code (an ACT/1 code, or "timeout") with its status and
//  the body {"error": {"code", "message"}}.
enum MHD_Result act_http_req_error (act_http_req_t *self, const char *code,
                                    const char *format, ...);

//  Answer a request that got no answer in time: 504 timeout with the
//  message, or 503 unavailable when the process is stopping.
enum MHD_Result act_http_req_timeout (act_http_req_t *self, const char *format, ...);

//  Answer a broker reply: its ERROR mapped, NULL as 504 timeout, else
//  status with the reply's first arg as the body (JSON). Destroys reply.
enum MHD_Result act_http_req_reply (act_http_req_t *self, act_reply_t *reply, unsigned status);

#endif
