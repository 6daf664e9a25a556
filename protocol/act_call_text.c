/*  =========================================================================
    act_call_text - the parameters a worker receives, written from the
    call's text without a tree (see act_call_params_text).

    The members that are not meta-properties are copied as they are, in
    the text's order, each reference string replaced by act_json_dump of
    its value and each "††" literal by its unescaped string. When every
    number of the parameters is written as act_json_dump writes it, the
    result is the same JSON as act_json_dump (act_call_params) gives, and
    the same bytes when the call's text was in that form.
    ========================================================================= */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "actd/act_call.h"
#include "actd/act_dtoa.h"
#include "actd/act_json.h"
#include "actd/act_text.h"

//  The text of one dagger span: a reference's value, as act_json_dump
//  writes it (at most room bytes: the parameters may be max), or a
//  literal's string without its first dagger. NULL with err set
//  (unresolved_reference, too_large, internal).
static char *
s_replacement (act_call_t *self, const act_call_span_t *span, act_ctx_t *ctx, size_t room,
               size_t max, act_err_t *err)
{
    if (span->ref >= 0) {
        act_expr_t *expr = self->refs [span->ref];
        json_t *resolved = ctx? act_ctx_resolve (ctx, expr, self->instance): NULL;
        if (!resolved) {
            act_err_set (err, ACT_E_UNRESOLVED_REFERENCE, "'%.200s' is absent", expr->text);
            return NULL;
        }
        char *text = act_json_dump_within (resolved, room);
        json_decref (resolved);
        if (!text)
            act_err_set (err, ACT_E_TOO_LARGE, "the parameters with their references "
                         "resolved would be over %zu bytes (at '%.200s')", max,
                         expr->text);
        return text;
    }
    char local [256];
    char *decoded = span->size <= sizeof local? local: malloc (span->size);
    if (!decoded)
        return NULL;
    act_scan_decode (self->text + span->offset, span->size, decoded);
    char *text = act_json_quote (decoded + ACT_DAGGER_LEN);
    if (decoded != local)
        free (decoded);
    return text;
}

//  Write the member at spans [*index] and the dagger spans in it; out
//  stays within max bytes
static int
s_member (act_call_t *self, size_t *index, act_ctx_t *ctx, size_t max, act_buf_t *out,
          act_err_t *err)
{
    const act_call_span_t *member = &self->spans [(*index)++];
    size_t at = member->offset, end = member->offset + member->size;
    for (; *index < self->nspans && self->spans [*index].ref != -2; (*index)++) {
        const act_call_span_t *span = &self->spans [*index];
        size_t used = out->size + (span->offset - at);
        char *replacement = s_replacement (self, span, ctx, used < max? max - used: 0, max,
                                           err);
        if (!replacement)
            return err->code? -1: act_err_set (err, ACT_E_INTERNAL, "out of memory");
        bool put = act_buf_add (out, self->text + at, span->offset - at)
                && act_buf_add (out, replacement, strlen (replacement));
        free (replacement);
        if (!put)
            return act_err_set (err, ACT_E_INTERNAL, "out of memory");
        at = span->offset + span->size;
    }
    if (!act_buf_add (out, self->text + at, end - at))
        return act_err_set (err, ACT_E_INTERNAL, "out of memory");
    return 0;
}

char *
act_call_params_text (act_call_t *self, act_ctx_t *ctx, act_err_t *err)
{
    return act_call_params_text_within (self, ctx, SIZE_MAX, err);
}

char *
act_call_params_text_within (act_call_t *self, act_ctx_t *ctx, size_t max, act_err_t *err)
{
    if (!self->dumped_numbers) {
        //  jansson would write some number otherwise: the tree decides
        json_t *params = act_call_params (self, ctx, err);
        char *text = params? act_json_dump_within (params, max): NULL;
        if (params && !text)
            act_err_set (err, ACT_E_TOO_LARGE, "the parameters with their references "
                         "resolved would be over %zu bytes", max);
        json_decref (params);
        return text;
    }
    act_buf_t out = { 0 };
    bool written = act_buf_reserve (&out, self->size + 64) && act_buf_add (&out, "{", 1);
    size_t index = 0;
    while (written && index < self->nspans)
        written = (out.size == 1 || act_buf_add (&out, ",", 1))
               && s_member (self, &index, ctx, max, &out, err) == 0;
    if (!written || !act_buf_add (&out, "}", 1)) {
        free (act_buf_take (&out));
        if (!err->code)
            act_err_set (err, ACT_E_INTERNAL, "out of memory");
        return NULL;
    }
    return act_buf_take (&out);
}

bool
act_call_numbers_dumped (const char *text, size_t size)
{
    for (size_t pos = 0; pos < size; ) {
        char c = text [pos];
        if (c == '"') {
            //  A string: past its closing quote, the first one after an
            //  even run of backslashes (the text is valid JSON)
            size_t start = ++pos;
            while (true) {
                const char *quote = memchr (text + pos, '"', size - pos);
                if (!quote)
                    return true;
                size_t at = (size_t) (quote - text), slashes = 0;
                while (at - slashes > start && text [at - slashes - 1] == '\\')
                    slashes++;
                pos = at + 1;
                if (slashes % 2 == 0)
                    break;
                start = pos;
            }
        }
        else
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t length;
            if (!act_json_number_dumped (text + pos, size - pos, &length))
                return false;
            pos += length;
        }
        else
            pos++;
    }
    return true;
}

