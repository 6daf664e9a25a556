/*  =========================================================================
    act_ctx_view - the merged view of a context: one entry per identity
    (kind, instance), in order of first appearance, as JSON or as text.
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_json.h"
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

//  The merged view as text for a person (actctl view --text); freed by
//  the caller
char *
act_ctx_view_text (act_ctx_t *self)
{
    json_t *view = act_ctx_view (self);
    char *text = strdup ("");
    size_t index;
    json_t *entry;
    json_array_foreach (view, index, entry) {
        const char *kind = json_string_value (json_object_get (entry, "kind"));
        const char *instance = json_string_value (json_object_get (entry, "_instance"));
        json_t *data = json_object_get (entry, "data");
        json_t *description = json_object_get (entry, "description");
        json_t *schema = json_object_get (entry, "schema");
        char *pretty = data
            ? act_json_dumps (data, JSON_INDENT (2))
            : strdup ("(absent)");
        char *about = NULL;
        if (json_is_string (description))
            about = strdup (json_string_value (description));
        else
        if (description)
            about = act_json_dumps (description, 0);
        char *shape = schema? act_json_dumps (schema, JSON_INDENT (2)): NULL;
        char *name = instance
            ? zsys_sprintf ("\xC2\xB6%s (instance %s)", kind, instance)
            : zsys_sprintf ("\xC2\xB6%s", kind);
        char *section = zsys_sprintf ("%s## Data: %s\n%s\n%s%s%s%s%s%s",
            index? "\n": "", name, pretty,
            about? about: "", about? "\n": "",
            shape? "Schema for ": "", shape? name: "", shape? ":\n": "",
            shape? shape: "");
        char *joined = zsys_sprintf ("%s%s%s", text, section, shape? "\n": "");
        free (text);
        text = joined;
        zstr_free (&section);
        zstr_free (&name);
        free (pretty);
        free (about);
        free (shape);
    }
    json_decref (view);
    return text;
}
