/*  =========================================================================
    act_ctx_view - the merged view of a context: one entry per identity
    (kind, instance), in order of first appearance, as JSON or as text.

    VIEW answers with the view's text (act_ctx_view_dump), written into
    one growing buffer straight from each identity's value, and stopped as
    soon as it passes the reply's bound. The text form was joined anew for
    each entry (an audit: 20,000 instances, 33.5 s of actd's loop), and a
    view past max_reply_bytes was built whole, every value copied, before
    it was refused (3.2 GB and 12.4 s for one refused VIEW).
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
#include "actd/act_text.h"
#include "act_ctx_int.h"

//  The merged view: one data entry per identity, in order of first
//  appearance, with its description and schema
json_t *
act_ctx_view (act_ctx_t *self)
{
    json_t *view = json_array ();
    for (act_ctx_ident_t *ident = zlistx_first (self->identities); ident;
         ident = zlistx_next (self->identities)) {
        json_t *entry = json_object ();
        json_object_set_new (entry, "type", json_string ("data"));
        json_object_set_new (entry, "kind", json_string (ident->kind->name));
        if (ident->instance)
            json_object_set_new (entry, "_instance", json_string (ident->instance));
        json_t *data = act_ctx_scope_read (ident->kind, ident, NULL, 0);
        if (data)
            json_object_set_new (entry, "data", data);
        if (ident->description)
            json_object_set (entry, "description", ident->description);
        if (ident->schema)
            json_object_set (entry, "schema", ident->schema);
        json_array_append_new (view, entry);
    }
    return view;
}

//  A view's text being written, up to a bound
typedef struct {
    act_buf_t text;             //  The text so far
    size_t max;                 //  Most bytes it may hold
    bool over;                  //  It passed max: nothing more is written
} s_dump_t;

//  Append size bytes, unless the text is over its bound already
static void
s_add (s_dump_t *dump, const char *bytes, size_t size)
{
    if (!dump->over && size > dump->max - dump->text.size)
        dump->over = true;
    if (!dump->over)
        act_buf_add (&dump->text, bytes, size);
}

//  Append a C string
static void
s_add_str (s_dump_t *dump, const char *string)
{
    s_add (dump, string, strlen (string));
}

//  Append value laid out as act_json_dumps (value, flags) does, written
//  only up to what is left of the bound (a value may be far larger)
static void
s_add_json (s_dump_t *dump, const json_t *value, size_t flags)
{
    char *text = dump->over? NULL
               : act_json_dumps_within (value, flags, dump->max - dump->text.size);
    if (text)
        s_add_str (dump, text);
    else
        dump->over = true;
    free (text);
}

//  Append ,"name": and string as a JSON string (name needs no escaping)
static void
s_add_member (s_dump_t *dump, const char *name, const char *string)
{
    s_add (dump, ",\"", 2);
    s_add_str (dump, name);
    s_add (dump, "\":", 2);
    if (!dump->over)
        act_buf_add_quoted (&dump->text, string);
    dump->over |= dump->text.size > dump->max;
}

//  The value of identity ident, the whole kind in its scope: a reference
//  the caller drops, which no one may change (it is the kind's document
//  or the instance's cached fold itself, not a copy); NULL when absent
static json_t *
s_data (act_ctx_ident_t *ident)
{
    act_ctx_kind_t *kind = ident->kind;
    if (!ident->root) {
        act_ctx_lazy_force (kind, NULL, 0, ACT_CTX_LAZY_DEEP);
        return kind->doc? json_incref (kind->doc): NULL;
    }
    json_t *base = NULL;
    size_t depth;
    bool shared;
    ident->visited = 0;
    //  Read at no segment: nothing is below P', so the base is the value
    if (!act_ctx_instance_base (kind, ident, NULL, 0, false, &base, &depth, &shared))
        return NULL;
    return base;
}

//  Append an identity's entry as act_json_dump writes act_ctx_view's
static void
s_entry_json (s_dump_t *dump, act_ctx_ident_t *ident, json_t *data)
{
    s_add_str (dump, "{\"type\":\"data\"");
    s_add_member (dump, "kind", ident->kind->name);
    if (ident->instance)
        s_add_member (dump, "_instance", ident->instance);
    if (data) {
        s_add_str (dump, ",\"data\":");
        s_add_json (dump, data, JSON_COMPACT);
    }
    if (ident->description) {
        s_add_str (dump, ",\"description\":");
        s_add_json (dump, ident->description, JSON_COMPACT);
    }
    if (ident->schema) {
        s_add_str (dump, ",\"schema\":");
        s_add_json (dump, ident->schema, JSON_COMPACT);
    }
    s_add (dump, "}", 1);
}

//  Append an identity's section of the text for a person: its name, its
//  value (indented), its description, and its schema with a heading
static void
s_entry_text (s_dump_t *dump, act_ctx_ident_t *ident, json_t *data, bool first)
{
    char *name = ident->instance
        ? zsys_sprintf ("\xC2\xB6%s (instance %s)", ident->kind->name, ident->instance)
        : zsys_sprintf ("\xC2\xB6%s", ident->kind->name);
    s_add_str (dump, first? "## Data: ": "\n## Data: ");
    s_add_str (dump, name);
    s_add (dump, "\n", 1);
    if (data)
        s_add_json (dump, data, JSON_INDENT (2));
    else
        s_add_str (dump, "(absent)");
    s_add (dump, "\n", 1);
    if (json_is_string (ident->description))
        s_add (dump, json_string_value (ident->description),
               json_string_length (ident->description));
    else
    if (ident->description)
        s_add_json (dump, ident->description, 0);
    if (ident->description)
        s_add (dump, "\n", 1);
    if (ident->schema) {
        s_add_str (dump, "Schema for ");
        s_add_str (dump, name);
        s_add_str (dump, ":\n");
        s_add_json (dump, ident->schema, JSON_INDENT (2));
        s_add (dump, "\n", 1);
    }
    zstr_free (&name);
}

char *
act_ctx_view_dump (act_ctx_t *self, bool text, size_t max, size_t *size)
{
    s_dump_t dump = { { 0 }, max, false };
    if (!text)
        s_add (&dump, "[", 1);
    bool first = true;
    for (act_ctx_ident_t *ident = zlistx_first (self->identities); ident && !dump.over;
         ident = zlistx_next (self->identities)) {
        json_t *data = s_data (ident);
        if (text)
            s_entry_text (&dump, ident, data, first);
        else {
            if (!first)
                s_add (&dump, ",", 1);
            s_entry_json (&dump, ident, data);
        }
        json_decref (data);
        first = false;
    }
    if (!text)
        s_add (&dump, "]", 1);
    if (dump.over) {
        *size = dump.text.size > max? dump.text.size: max + 1;
        free (act_buf_take (&dump.text));
        return NULL;
    }
    *size = dump.text.size;             //  0 when memory ran out
    return act_buf_take (&dump.text);
}

//  The merged view as text for a person (actctl view --text); freed by
//  the caller
char *
act_ctx_view_text (act_ctx_t *self)
{
    size_t size;
    return act_ctx_view_dump (self, true, SIZE_MAX, &size);
}
