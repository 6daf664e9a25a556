/*  =========================================================================
    act_http_auth - bearer tokens mapped to CURVE identities (see
    act_http_auth.h).
    ========================================================================= */

#include "act_http_auth.h"

struct _act_http_auth_t {
    const act_http_config_t *config;    //  Tokens, endpoint, keys
    act_http_broker_t *anonymous;       //  Requests without a token (no tokens set)
    act_http_broker_t **brokers;        //  One per config->tokens entry
};

act_http_auth_t *
act_http_auth_new (const act_http_config_t *config, act_err_t *err)
{
    act_http_auth_t *self = calloc (1, sizeof *self);
    self->config = config;
    self->brokers = calloc (config->ntokens + 1, sizeof *self->brokers);
    if (config->ntokens == 0)
        self->anonymous = act_http_broker_new (config->broker, config->server_key,
                                               config->certificate,
                                               config->request_timeout_ms, err);
    bool failed = config->ntokens == 0 && !self->anonymous;
    for (size_t i = 0; i < config->ntokens && !failed; i++) {
        const char *certificate = config->tokens [i].certificate
                                ? config->tokens [i].certificate: config->certificate;
        self->brokers [i] = act_http_broker_new (config->broker, config->server_key,
                                                 certificate, config->request_timeout_ms,
                                                 err);
        failed = !self->brokers [i];
    }
    if (failed)
        act_http_auth_destroy (&self);
    return self;
}

void
act_http_auth_destroy (act_http_auth_t **self_p)
{
    if (self_p && *self_p) {
        act_http_auth_t *self = *self_p;
        act_http_broker_destroy (&self->anonymous);
        for (size_t i = 0; i < self->config->ntokens; i++)
            act_http_broker_destroy (&self->brokers [i]);
        free (self->brokers);
        free (self);
        *self_p = NULL;
    }
}

//  Compare in time that depends on the lengths only, not on where the
//  first difference is
static bool
s_same (const char *a, const char *b)
{
    size_t length = strlen (a);
    if (length != strlen (b))
        return false;
    unsigned char difference = 0;
    for (size_t i = 0; i < length; i++)
        difference |= (unsigned char) (a [i] ^ b [i]);
    return difference == 0;
}

act_http_broker_t *
act_http_auth_broker (act_http_auth_t *self, const char *header, const char *access_token)
{
    if (self->anonymous)
        return self->anonymous;
    const char *token = access_token;
    if (header && strncasecmp (header, "Bearer ", 7) == 0) {
        token = header + 7;
        while (*token == ' ')
            token++;
    }
    for (size_t i = 0; token && i < self->config->ntokens; i++)
        if (s_same (token, self->config->tokens [i].token))
            return self->brokers [i];
    return NULL;
}

act_http_broker_t *
act_http_auth_any (act_http_auth_t *self)
{
    return self->anonymous? self->anonymous: self->brokers [0];
}

void
act_http_auth_stop (act_http_auth_t *self)
{
    if (self->anonymous)
        act_http_broker_stop (self->anonymous);
    for (size_t i = 0; i < self->config->ntokens; i++)
        act_http_broker_stop (self->brokers [i]);
}
