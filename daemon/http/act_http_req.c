/*  =========================================================================
    act_http_req - one HTTP request and its answers (see act_http_req.h).
    ========================================================================= */

#include "act_http_req.h"
#include "actd/act_json.h"
#include "actd/act_client.h"

//  The error mapping of the API contract (docs/http.md)
static const struct {
    const char *code;           //  ACT/1 error code
    unsigned status;            //  HTTP status
} s_statuses [] = {
    { ACT_E_BAD_FRAME, 400 }, { ACT_E_BAD_JSON, 400 }, { ACT_E_BAD_CONTEXT, 400 },
    { ACT_E_BAD_CALL, 400 }, { ACT_E_BAD_REFERENCE, 400 }, { ACT_E_BAD_METHOD, 400 },
    { ACT_E_BAD_ARGUMENT, 400 }, { ACT_E_TYPE_MISMATCH, 409 },
    { ACT_E_UNRESOLVED_REFERENCE, 409 }, { ACT_E_UNAUTHORIZED, 403 },
    { ACT_E_NOT_FOUND, 404 }, { ACT_E_TOO_LARGE, 413 }, { ACT_E_BUSY, 429 },
    { ACT_E_UNKNOWN_ACTIVITY, 422 }, { ACT_E_MOVED, 421 }, { ACT_E_TIMEOUT, 504 },
    { ACT_E_INTERNAL, 500 }, { ACT_E_UNKNOWN_COMMAND, 501 },
    { "unauthenticated", 401 }, { "method_not_allowed", 405 },
    { "forbidden_host", 403 }, { "forbidden_origin", 403 }, { "unsupported_media_type", 415 },
    { ACT_CLIENT_DISCONNECTED, 502 }, { ACT_HTTP_E_UNAVAILABLE, 503 },
    { ACT_CLIENT_UNREACHABLE, 503 }
};

bool
act_http_req_get (act_http_req_t *self)
{
    return streq (self->method, "GET") || streq (self->method, "HEAD");
}

unsigned
act_http_req_status (const char *code)
{
    for (size_t i = 0; code && i < sizeof s_statuses / sizeof s_statuses [0]; i++)
        if (streq (code, s_statuses [i].code))
            return s_statuses [i].status;
    return 500;
}

//  The value of hex digit c, or -1
static int
s_hex (char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

char *
act_http_req_decode (const char *text, size_t length)
{
    char *decoded = malloc (length + 1);
    size_t size = 0;
    for (size_t i = 0; i < length; i++) {
        if (text [i] != '%') {
            decoded [size++] = text [i];
            continue;
        }
        int high = i + 2 < length? s_hex (text [i + 1]): -1;
        int low = high >= 0? s_hex (text [i + 2]): -1;
        if (low < 0 || (high == 0 && low == 0)) {
            free (decoded);
            return NULL;
        }
        decoded [size++] = (char) (high * 16 + low);
        i += 2;
    }
    decoded [size] = 0;
    return decoded;
}

char *
act_http_req_arg (act_http_req_t *self, const char *name)
{
    const char *raw = MHD_lookup_connection_value (self->connection, MHD_GET_ARGUMENT_KIND,
                                                   name);
    return raw? act_http_req_decode (raw, strlen (raw)): NULL;
}

long long
act_http_req_number (act_http_req_t *self, const char *name, long long fallback,
                     long long least, long long most)
{
    char *text = act_http_req_arg (self, name);
    if (!text)
        return MHD_lookup_connection_value (self->connection, MHD_GET_ARGUMENT_KIND, name)
               ? -1: fallback;
    char *end;
    errno = 0;
    long long number = strtoll (text, &end, 10);
    bool valid = *text && !*end && !errno && number >= least && number <= most;
    free (text);
    return valid? number: -1;
}

void
act_http_req_headers (struct MHD_Response *response, bool page)
{
    MHD_add_response_header (response, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header (response, "Referrer-Policy", "no-referrer");
    if (page) {
        MHD_add_response_header (response, "X-Frame-Options", "DENY");
        MHD_add_response_header (response, "Content-Security-Policy",
                                 "default-src 'self'; img-src 'self' data:; base-uri 'none'; "
                                 "form-action 'none'; frame-ancestors 'none'");
    }
}

enum MHD_Result
act_http_req_send (act_http_req_t *self, unsigned status, const char *type, const char *body,
                   size_t size)
{
    struct MHD_Response *response = MHD_create_response_from_buffer (size, (void *) body,
                                                                     MHD_RESPMEM_MUST_COPY);
    if (!response)
        return MHD_NO;
    MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header (response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    act_http_req_headers (response, false);
    if (status == 401)
        MHD_add_response_header (response, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    enum MHD_Result rc = MHD_queue_response (self->connection, status, response);
    MHD_destroy_response (response);
    self->status = status;
    return rc;
}

enum MHD_Result
act_http_req_json (act_http_req_t *self, unsigned status, json_t *value)
{
    char *text = act_json_dump (value);
    json_decref (value);
    enum MHD_Result rc = act_http_req_send (self, status, "application/json", text,
                                            strlen (text));
    free (text);
    return rc;
}

enum MHD_Result
act_http_req_error (act_http_req_t *self, const char *code, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    char message [512];
    vsnprintf (message, sizeof message, format, args);
    va_end (args);
    //  A broker's message may be cut inside a UTF-8 sequence: jansson
    //  refuses such a string, so fall back to a plain one
    json_t *text = json_string (message);
    if (!text)
        text = json_string ("(message not valid UTF-8)");
    return act_http_req_json (self, act_http_req_status (code),
                              json_pack ("{s{ssso}}", "error", "code", code, "message", text));
}

enum MHD_Result
act_http_req_timeout (act_http_req_t *self, const char *format, ...)
{
    if (self->broker && act_http_broker_stopping (self->broker))
        return act_http_req_error (self, ACT_HTTP_E_UNAVAILABLE, ACT_HTTP_STOPPING);
    va_list args;
    va_start (args, format);
    char message [512];
    vsnprintf (message, sizeof message, format, args);
    va_end (args);
    return act_http_req_error (self, ACT_E_TIMEOUT, "%s", message);
}

enum MHD_Result
act_http_req_reply (act_http_req_t *self, act_reply_t *reply, unsigned status)
{
    enum MHD_Result rc;
    if (!reply)
        return act_http_req_timeout (self, "actd did not answer in time");
    char *first = act_reply_arg (reply, 0);
    if (streq (reply->verb, "ERROR")) {
        char *message = act_reply_arg (reply, 1);
        rc = act_http_req_error (self, first? first: ACT_E_INTERNAL, "%s",
                                 message? message: "");
        free (message);
    }
    else
        rc = act_http_req_send (self, status, "application/json", first? first: "{}",
                                first? strlen (first): 2);
    free (first);
    act_reply_destroy (&reply);
    return rc;
}
