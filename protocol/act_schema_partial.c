/*  =========================================================================
    act_schema_partial - a call's parameters checked at submit, before
    their references resolve (act_schema_valid_unresolved): each reference
    is an unknown value, and the call is refused only when no value of
    theirs would make it valid (act_schema_valid.c judges each keyword so).

    The parameters are read as act_schema_valid_call reads a call without
    references, but in a copy of the call's text, where each reference's
    string token (the call's spans say where: one per reference and per
    "††" literal, in the text's order) is a '?' then white space: a value
    of its own kind (ACT_ST_UNKNOWN) to the validator, which then needs no
    look-up to know it. A literal's value is the string without its first
    dagger: its token there starts after that dagger, white space before
    it. Every other token keeps its offset; whether a value holds a
    reference is a binary search among the spans.
    ========================================================================= */

#include <stdlib.h>
#include <string.h>
#include "act_schema_int.h"
#include "actd/act_ref.h"

//  Members of a call's parameters kept on the stack; more are allocated
#define S_LOCAL_MEMBERS     32

//  The index of the call's first span at or after offset
static size_t
s_span_from (const act_call_t *call, size_t offset)
{
    size_t low = 0, high = call->nspans;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (call->spans [middle].offset < offset)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

bool
act_sunknown_within (const act_sunknowns_t *self, const act_sval_t *instance)
{
    const act_call_t *call = self->call;
    if (instance->json)
        return false;           //  Made from a value: not the call's text
    if (instance->members)
        return call->nrefs > 0; //  The parameters: every reference is in them
    if (instance->text [0] == '?')
        return true;            //  A reference itself
    //  The spans inside the value: a reference among them? (Literals only
    //  come between: a container holds few.)
    size_t start = (size_t) (instance->text - self->text);
    for (size_t index = s_span_from (call, start);
         index < call->nspans && call->spans [index].offset < start + instance->size; index++)
        if (call->spans [index].ref >= 0)
            return true;
    return false;
}

//  A copy of the call's text for the validator: each reference's token a
//  '?' then white space; each "††" literal read as its value, the string
//  without its first dagger (the token's '"' and that dagger, 3 bytes or 6
//  as a \u2020 escape, become white space and a '"' in front of the rest,
//  which stays where it was). NULL when out of memory.
static char *
s_marked (const act_call_t *call)
{
    char *text = malloc (call->size + 1);
    if (!text)
        return NULL;
    memcpy (text, call->text, call->size + 1);
    for (size_t index = 0; index < call->nspans; index++) {
        const act_call_span_t *span = &call->spans [index];
        if (span->ref >= 0) {
            memset (text + span->offset, ' ', span->size);
            text [span->offset] = '?';
        }
        else
        if (span->ref == -1) {
            size_t dagger = text [span->offset + 1] == '\\'? 6: ACT_DAGGER_LEN;
            memset (text + span->offset, ' ', dagger);
            text [span->offset + dagger] = '"';
        }
    }
    return text;
}

bool
act_schema_valid_unresolved (act_schema_t *self, act_call_t *call, act_err_t *err)
{
    if (!self || !call || !call->nrefs)
        return call? act_schema_valid_call (self, call, err): act_schema_valid (self, NULL, err);
    //  The parameters are the member spans: the spans of references and
    //  literals inside them are left out
    act_call_span_t local [S_LOCAL_MEMBERS];
    act_call_span_t *members = call->nspans <= S_LOCAL_MEMBERS
                             ? local: malloc (call->nspans * sizeof (act_call_span_t));
    size_t count = 0;
    for (size_t index = 0; members && index < call->nspans; index++)
        if (call->spans [index].ref == -2)
            members [count++] = call->spans [index];
    char *copy = members? s_marked (call): NULL;
    bool valid = false;
    if (!copy)
        act_err_set (err, ACT_E_INTERNAL, "(root): out of memory");
    else {
        act_sunknowns_t unknowns = { .call = call, .text = copy };
        valid = act_schema_valid_unknowns (self, &(act_sval_t) { .text = copy,
                                                                 .members = members,
                                                                 .count = count },
                                           &unknowns, err);
    }
    free (copy);
    if (members != local)
        free (members);
    return valid;
}
