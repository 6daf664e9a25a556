/*  =========================================================================
    act_ctx - one agent context: its names, the messages it builds (append,
    outputs, errors) and replays, and resolution against its index.

    The index itself lives beside this file: the kinds and identities with
    reads and writes in a scope (act_ctx_index.c), the trie of instance
    writes with its cached fold (act_ctx_trie.c), and the merged view
    (act_ctx_view.c). act_ctx_int.h is what they share.
    ========================================================================= */

#include <czmq.h>
#include <string.h>
#include <stdlib.h>
#include "actd/act_ctx.h"
#include "actd/act_json.h"
#include "actd/act_text.h"
#include "actd/act_wire.h"
#include "act_ctx_int.h"


//  --------------------------------------------------------------------------
//  Names

//  Context ids: 1 to ACT_MAX_CONTEXT_ID bytes of [A-Za-z0-9._:@/-]
bool
act_ctx_id_valid (const char *id)
{
    size_t length = id? strlen (id): 0;
    if (length == 0 || length > ACT_MAX_CONTEXT_ID)
        return false;
    for (const char *c = id; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
        ||    (*c >= '0' && *c <= '9') || strchr ("._:@/-", *c)))
            return false;
    return true;
}

//  Kinds: identifiers [A-Za-z_][A-Za-z0-9_-]*
bool
act_kind_valid (const char *kind)
{
    if (!kind || !*kind)
        return false;
    if (!((*kind >= 'A' && *kind <= 'Z') || (*kind >= 'a' && *kind <= 'z') || *kind == '_'))
        return false;
    for (const char *c = kind + 1; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z')
        ||    (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return false;
    return true;
}


//  --------------------------------------------------------------------------
//  The context

//  An empty context; NULL when id is not a valid context id
act_ctx_t *
act_ctx_new (const char *id)
{
    if (!act_ctx_id_valid (id))
        return NULL;
    act_ctx_t *self = calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->id = strdup (id);
    self->next_seq = 1;
    self->kinds = zhashx_new ();
    zhashx_set_destructor (self->kinds, act_ctx_kind_destroy);
    self->identities = zlistx_new ();
    zlistx_set_destructor (self->identities, act_ctx_ident_destroy);
    return self;
}

//  Free the context and its index; safe on NULL
void
act_ctx_destroy (act_ctx_t **self_p)
{
    if (self_p && *self_p) {
        act_ctx_t *self = *self_p;
        zlistx_destroy (&self->identities);
        zhashx_destroy (&self->kinds);
        free (self->id);
        free (self);
        *self_p = NULL;
    }
}

//  The context's id, owned by the context
const char *
act_ctx_id (act_ctx_t *self)
{
    return self->id;
}

//  The _seq the next stored message will get
uint64_t
act_ctx_next_seq (act_ctx_t *self)
{
    return self->next_seq;
}

//  Stamp a stored message with the next _seq and the time
static void
s_stamp (act_ctx_t *self, json_t *message)
{
    char date [32];
    act_date_now (date);
    json_object_set_new (message, "_seq", json_integer ((json_int_t) self->next_seq++));
    json_object_set_new (message, "_date", json_string (date));
}

//  Fields of a data message the client may not set: they mark outputs or
//  are stamped by the broker
static const char *s_reserved [] = { "_seq", "_date", "_outputPath", "_call", "_callId" };

//  Read kind, instance, data and method of an appended data message
static int
s_data_fields (const json_t *message, const char **kind, const char **instance,
               act_method_t *method, act_method_t method_default, act_err_t *err)
{
    json_t *field = json_object_get (message, "kind");
    *kind = field? json_string_value (field): "data";
    if (!*kind || !act_kind_valid (*kind))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "\"kind\" must be an identifier [A-Za-z_][A-Za-z0-9_-]*");
    field = json_object_get (message, "_instance");
    *instance = field? json_string_value (field): NULL;
    if (field && (!*instance || !**instance
              ||  json_string_length (field) > ACT_MAX_INSTANCE))
        return act_err_set (err, ACT_E_BAD_ARGUMENT,
                            "\"_instance\" must be a string of 1 to %d bytes",
                            ACT_MAX_INSTANCE);
    field = json_object_get (message, "_outputMethod");
    *method = method_default;
    if (field && act_method_parse (json_string_value (field), method))
        return act_err_set (err, ACT_E_BAD_METHOD,
                            "\"_outputMethod\" must be one of set, merge, "
                            "assign, push, concat, erase");
    return 0;
}

//  Keep an appended message's description and schema for the view
static void
s_describe (act_ctx_ident_t *ident, const json_t *message)
{
    json_t *description = json_object_get (message, "description");
    if (description) {
        json_decref (ident->description);
        ident->description = json_incref (description);
    }
    json_t *schema = json_object_get (message, "schema");
    if (schema) {
        json_decref (ident->schema);
        ident->schema = json_incref (schema);
    }
}

//  Check a client's message, apply it when it is data, and return it
//  stamped for the store; NULL with err set changes nothing
json_t *
act_ctx_append (act_ctx_t *self, const json_t *message, act_err_t *err)
{
    if (!json_is_object (message)) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "a message must be a JSON object");
        return NULL;
    }
    const char *type = json_string_value (json_object_get (message, "type"));
    if (!type) {
        act_err_set (err, ACT_E_BAD_ARGUMENT, "a message needs a string \"type\"");
        return NULL;
    }
    for (size_t i = 0; i < sizeof s_reserved / sizeof s_reserved [0]; i++)
        if (json_object_get (message, s_reserved [i])) {
            act_err_set (err, ACT_E_BAD_ARGUMENT,
                         "\"%s\" is set by the broker, not by clients", s_reserved [i]);
            return NULL;
        }
    json_t *stored = json_copy ((json_t *) message);
    if (streq (type, "data")) {
        const char *kind_name, *instance;
        act_method_t method;
        json_t *data = json_object_get (message, "data");
        if (s_data_fields (message, &kind_name, &instance, &method, ACT_MERGE, err)) {
            json_decref (stored);
            return NULL;
        }
        if (!data) {
            act_err_set (err, ACT_E_BAD_ARGUMENT, "a data message needs \"data\"");
            json_decref (stored);
            return NULL;
        }
        act_ctx_kind_t *kind = act_ctx_kind_require (self, kind_name);
        if (act_ctx_scope_check (self, kind, instance, NULL, 0, method, data, err)) {
            json_decref (stored);
            return NULL;
        }
        act_ctx_scope_apply (self, kind, instance, self->next_seq, NULL, 0, method, data);
        s_describe (act_ctx_ident (self, kind, instance, true), message);
    }
    s_stamp (self, stored);
    return stored;
}

//  True when writing one of two targets could change what the other finds:
//  they overlap (one holds the other), or they part at an array index. A
//  write below an index can append to that array (an index equal to its
//  length), so the next index is checked against a longer one: "†q[1] &&
//  †q[2]" on [0] writes [0, v, v] (SEMANTICS.md 3: one message at a time,
//  in the order written). Two object keys part without touching.
static bool
s_targets_interact (const act_ref_t *a, const act_ref_t *b)
{
    if (act_ref_overlaps (a, b))
        return true;
    if (strcmp (a->kind, b->kind) != 0)
        return false;
    size_t common = a->nsegs < b->nsegs? a->nsegs: b->nsegs;
    for (size_t i = 0; i < common; i++)
        if (strcmp (a->segs [i].key, b->segs [i].key) != 0)
            return a->segs [i].type != ACT_SEG_KEY || b->segs [i].type != ACT_SEG_KEY;
    return false;
}

//  True when two targets of one fan-out could change what the other finds
static bool
s_alt_overlaps (const act_alt_t *alt)
{
    for (size_t i = 0; i < alt->nrefs; i++)
        for (size_t j = i + 1; j < alt->nrefs; j++)
            if (s_targets_interact (&alt->refs [i], &alt->refs [j]))
                return true;
    return false;
}

//  What a fan-out's try changed in one kind's document, to undo it. Every
//  target of the kind writes at or below the path its targets share, so
//  the deepest level of that path that exists is all a try can change: a
//  copy of what is there, or, when it is an object or array the path goes
//  on through, what the tries add to it. A copy of the whole document at
//  each target cost 64 of them for one result (an audit: 10.7 s and
//  1.5 GB for a document of 200,000 members)
typedef struct {
    act_ctx_kind_t *kind;       //  The kind
    const act_ref_t *ref;       //  One of its targets: the shared path's segments
    size_t depth;               //  Segments of the shared path that exist
    json_t *saved;              //  A copy of the value at depth (NULL: absent)
    bool below;                 //  Else: the object or array at depth is kept;
                                //  the tries added a member, or items past size
    size_t size;                //  below, an array: its items before
    bool lazy;                  //  The kind's lazy before
} s_undo_t;

//  The value under node at seg, NULL when there is none
static json_t *
s_step (json_t *node, const act_seg_t *seg)
{
    if (json_is_array (node))
        return seg->type == ACT_SEG_INDEX? json_array_get (node, seg->index): NULL;
    return json_is_object (node) && seg->type != ACT_SEG_APPEND
         ? json_object_get (node, seg->key): NULL;
}

//  The value at the first depth segments of segs in the kind's document
static json_t *
s_walk (act_ctx_kind_t *kind, const act_seg_t *segs, size_t depth)
{
    json_t *node = kind->doc;
    for (size_t i = 0; i < depth && node; i++)
        node = s_step (node, &segs [i]);
    return node;
}

//  Record what undoes the tries of alt's targets in kind (ref is one)
static void
s_undo_save (s_undo_t *undo, act_ctx_kind_t *kind, const act_alt_t *alt,
             const act_ref_t *ref)
{
    size_t shared = ref->nsegs;
    for (size_t j = 0; j < alt->nrefs; j++) {
        const act_ref_t *other = &alt->refs [j];
        if (!streq (other->kind, ref->kind))
            continue;
        size_t i = 0;
        while (i < shared && i < other->nsegs
           &&  ref->segs [i].type != ACT_SEG_APPEND
           &&  ref->segs [i].type == other->segs [i].type
           &&  streq (ref->segs [i].key, other->segs [i].key))
            i++;
        shared = i;
    }
    *undo = (s_undo_t) { kind, ref, 0, NULL, false, 0, kind->lazy };
    json_t *node = kind->doc, *child;
    while (undo->depth < shared
       &&  (child = s_step (node, &ref->segs [undo->depth]))) {
        node = child;
        undo->depth++;
    }
    undo->below = undo->depth < shared && (json_is_object (node) || json_is_array (node));
    if (undo->below)
        undo->size = json_is_array (node)? json_array_size (node): 0;
    else
        undo->saved = json_deep_copy (node);
}

//  Put the kind's document back as s_undo_save found it
static void
s_undo_restore (s_undo_t *undo)
{
    act_ctx_kind_t *kind = undo->kind;
    const act_seg_t *segs = undo->ref->segs;
    if (undo->below) {
        json_t *node = s_walk (kind, segs, undo->depth);
        if (json_is_object (node))
            json_object_del (node, segs [undo->depth].key);
        else
            while (json_array_size (node) > undo->size)
                json_array_remove (node, json_array_size (node) - 1);
    }
    else
    if (undo->depth == 0) {
        json_decref (kind->doc);
        kind->doc = undo->saved;
    }
    else {
        json_t *parent = s_walk (kind, segs, undo->depth - 1);
        const act_seg_t *seg = &segs [undo->depth - 1];
        if (json_is_array (parent))
            json_array_set_new (parent, seg->index, undo->saved);
        else
            json_object_set_new (parent, seg->key, undo->saved);
    }
    kind->lazy |= undo->lazy;           //  It may hold stand-ins again
    kind->version++;
}

//  Check every target of a fan-out. Targets that overlap are checked in
//  turn with the earlier ones applied, then undone (what the tries changed
//  in kind documents is put back, s_undo_t; instance writes are popped).
static int
s_output_check (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                act_method_t method, const char *instance, act_err_t *err)
{
    //  The instance is stored as a JSON string, so it must be text
    if (instance && !act_utf8_valid (instance, strlen (instance), NULL))
        return act_err_set (err, ACT_E_BAD_ARGUMENT, "the instance is not valid UTF-8");
    if (!s_alt_overlaps (alt)) {
        for (size_t i = 0; i < alt->nrefs; i++) {
            const act_ref_t *ref = &alt->refs [i];
            act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
            if (act_ctx_scope_check (self, kind, instance, ref->segs, ref->nsegs, method, value, err))
                return -1;
        }
        return 0;
    }
    s_undo_t undo [ACT_MAX_OPERANDS];  //  Global: one for each kind written
    size_t undos = 0;
    bool created [ACT_MAX_OPERANDS];   //  Instance: identity made for the try
    size_t applied = 0;
    int rc = 0;
    for (; applied < alt->nrefs; applied++) {
        const act_ref_t *ref = &alt->refs [applied];
        act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
        if (act_ctx_scope_check (self, kind, instance, ref->segs, ref->nsegs, method, value, err)) {
            rc = -1;
            break;
        }
        if (instance) {
            created [applied] = !act_ctx_ident (self, kind, instance, false);
            act_ctx_node_add (act_ctx_ident (self, kind, instance, true)->root,
                        self->next_seq + applied, ref->segs, ref->nsegs, method, value);
        }
        else {
            size_t u = 0;
            while (u < undos && undo [u].kind != kind)
                u++;
            if (u == undos)
                s_undo_save (&undo [undos++], kind, alt, ref);
            act_ctx_global_write (kind, ref->segs, ref->nsegs, method, value);
            kind->version++;
        }
    }
    //  Undo in reverse order: an identity made for the try is the newest
    while (undos-- > 0)
        s_undo_restore (&undo [undos]);
    while (instance && applied-- > 0) {
        const act_ref_t *ref = &alt->refs [applied];
        act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
        act_ctx_ident_t *ident = act_ctx_ident (self, kind, instance, false);
        act_ctx_node_pop (ident->root, ref->segs, ref->nsegs);
        if (ident->cache)
            zhashx_purge (ident->cache);    //  It may have seen the write
        if (created [applied]) {
            zhashx_delete (kind->instances, instance);
            //  zlistx_last also moves the cursor, so it must run
            //  outside assert (): NDEBUG builds would delete the head
            act_ctx_ident_t *last = (act_ctx_ident_t *) zlistx_last (self->identities);
            assert (last == ident);
            (void) last;
            zlistx_delete (self->identities, zlistx_cursor (self->identities));
        }
    }
    return rc;
}

//  Whether an output would be accepted, changing nothing
int
act_ctx_output_check (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                      act_method_t method, const char *instance, act_err_t *err)
{
    return s_output_check (self, alt, value, method, instance, err);
}

//  Build the stored message for one target of an output ("data" left out
//  unless with_data)
static json_t *
s_output_message (const act_ref_t *ref, const json_t *value, act_method_t method,
                  const char *instance, const json_t *call, const char *call_id,
                  bool with_data)
{
    json_t *message = json_object ();
    json_object_set_new (message, "type", json_string ("data"));
    json_object_set_new (message, "kind", json_string (ref->kind));
    if (instance)
        json_object_set_new (message, "_instance", json_string (instance));
    if (with_data)
        json_object_set_new (message, "data", act_path_nest (ref->segs, ref->nsegs, value));
    json_object_set_new (message, "_outputPath", json_string (ref->text));
    json_object_set_new (message, "_outputMethod", json_string (act_method_name (method)));
    if (call)
        json_object_set (message, "_call", (json_t *) call);
    if (call_id)
        json_object_set_new (message, "_callId", json_string (call_id));
    return message;
}

//  Apply target i of a fan-out that s_output_check accepted, as the
//  message next_seq. shared: value, which the last target may keep itself
//  rather than a copy (act_ctx_scope_apply_shared), or NULL
static void
s_output_apply (act_ctx_t *self, const act_alt_t *alt, size_t i, const json_t *value,
                json_t *shared, act_method_t method, const char *instance)
{
    const act_ref_t *ref = &alt->refs [i];
    act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
    //  Only the last target may share the value: an earlier one could see
    //  it changed by a later target's write
    if (shared && i == alt->nrefs - 1)
        act_ctx_scope_apply_shared (self, kind, instance, self->next_seq, ref->segs,
                                    ref->nsegs, method, shared);
    else
        act_ctx_scope_apply (self, kind, instance, self->next_seq, ref->segs, ref->nsegs,
                             method, value);
}

//  Apply an output to every target of the fan-out and return the stored
//  messages, one a target (with their "data" when with_data); NULL with
//  err set changes nothing. shared: as s_output_apply
static json_t *
s_output (act_ctx_t *self, const act_alt_t *alt, const json_t *value, json_t *shared,
          act_method_t method, const char *instance, const json_t *call,
          const char *call_id, bool with_data, act_err_t *err)
{
    if (s_output_check (self, alt, value, method, instance, err))
        return NULL;
    json_t *messages = json_array ();
    for (size_t i = 0; i < alt->nrefs; i++) {
        s_output_apply (self, alt, i, value, shared, method, instance);
        json_t *message = s_output_message (&alt->refs [i], value, method, instance, call,
                                            call_id, with_data);
        s_stamp (self, message);
        json_array_append_new (messages, message);
    }
    return messages;
}

json_t *
act_ctx_output (act_ctx_t *self, const act_alt_t *alt, const json_t *value,
                act_method_t method, const char *instance, const json_t *call,
                const char *call_id, act_err_t *err)
{
    return s_output (self, alt, value, NULL, method, instance, call, call_id, true, err);
}

json_t *
act_ctx_output_bare (act_ctx_t *self, const act_alt_t *alt, json_t *value,
                     act_method_t method, const char *instance, const json_t *call,
                     const char *call_id, act_err_t *err)
{
    return s_output (self, alt, value, value, method, instance, call, call_id, false, err);
}

//  Append ,"name": (name needs no escaping) and string as a JSON string
static void
s_add_member (act_buf_t *text, const char *name, const char *string)
{
    act_buf_add (text, ",\"", 2);
    act_buf_add (text, name, strlen (name));
    act_buf_add (text, "\":", 2);
    act_buf_add_quoted (text, string);
}

//  The stored text of the output message of target ref, stamped seq: what
//  act_json_dump writes of s_output_message's message without "data" and
//  call, stamped, with "data" (the value's text nested at ref's path, as
//  act_text_nest) and "_call" (call_text, when not NULL) then added last,
//  as act_text_splice adds them. Written by hand: the tree cost more than
//  the rest of the write
static char *
s_output_text (const act_ref_t *ref, const char *value_text, size_t value_size,
               act_method_t method, const char *instance, const char *call_text,
               const char *call_id, uint64_t seq)
{
    size_t size = 256 + value_size + (call_text? strlen (call_text): 0);
    act_buf_t text = { 0 };
    act_buf_reserve (&text, size);
    act_buf_add (&text, "{\"type\":\"data\"", 14);
    s_add_member (&text, "kind", ref->kind);
    if (instance)
        s_add_member (&text, "_instance", instance);
    s_add_member (&text, "_outputPath", ref->text);
    //  A method's name and a date need no escape
    act_buf_add (&text, ",\"_outputMethod\":", 17);
    act_buf_add_plain (&text, act_method_name (method), strlen (act_method_name (method)));
    if (call_id)
        s_add_member (&text, "_callId", call_id);
    char digits [ACT_DECIMAL_MAX];
    act_buf_add (&text, ",\"_seq\":", 8);
    act_buf_add (&text, digits, act_decimal_write (digits, (long long) seq));
    char date [32];
    act_date_now (date);
    act_buf_add (&text, ",\"_date\":", 9);
    act_buf_add_plain (&text, date, strlen (date));
    //  The display form: one object level per segment, as act_text_nest
    act_buf_add (&text, ",\"data\":", 8);
    for (size_t i = 0; i < ref->nsegs; i++) {
        act_buf_add (&text, "{", 1);
        act_buf_add_quoted (&text, ref->segs [i].key);
        act_buf_add (&text, ":", 1);
    }
    act_buf_add (&text, value_text, value_size);
    for (size_t i = 0; i < ref->nsegs; i++)
        act_buf_add (&text, "}", 1);
    if (call_text) {
        act_buf_add (&text, ",\"_call\":", 9);
        act_buf_add (&text, call_text, strlen (call_text));
    }
    act_buf_add (&text, "}", 1);
    return act_buf_take (&text);
}

char **
act_ctx_output_text (act_ctx_t *self, const act_alt_t *alt, const char *text, size_t size,
                     act_method_t method, const char *instance, const char *call_text,
                     const char *call_id, uint64_t *first_seq, act_err_t *err)
{
    //  A global set or push needs nothing of its value: keep the text,
    //  parsed when something reads it. Other writes combine with what is
    //  there; an instance's writes are folded again at each read
    json_t *value = (method == ACT_SET || method == ACT_PUSH) && !instance
                  ? act_ctx_lazy_new (text, size)
                  : act_json_parse (text, size, err);
    if (!value) {
        if (err && !err->code)
            act_err_set (err, ACT_E_INTERNAL, "out of memory keeping a result");
        return NULL;
    }
    char **texts = NULL;
    //  One target in the global scope (the common case): checked and
    //  applied in one walk down its path
    const act_ref_t *ref = &alt->refs [0];
    if (alt->nrefs == 1 && !instance) {
        act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
        texts = calloc (2, sizeof (char *));
        if (!texts)
            act_err_set (err, ACT_E_INTERNAL, "out of memory keeping a result");
        else
        if (act_ctx_scope_write_shared (self, kind, ref->segs, ref->nsegs, method, value,
                                        err) == 0) {
            *first_seq = self->next_seq;
            texts [0] = s_output_text (ref, text, size, method, NULL, call_text, call_id,
                                       self->next_seq++);
        }
        else {
            free (texts);
            texts = NULL;
        }
    }
    else
    if (s_output_check (self, alt, value, method, instance, err) == 0) {
        texts = calloc (alt->nrefs + 1, sizeof (char *));
        *first_seq = self->next_seq;
        for (size_t i = 0; i < alt->nrefs; i++) {
            s_output_apply (self, alt, i, value, value, method, instance);
            texts [i] = s_output_text (&alt->refs [i], text, size, method, instance,
                                       call_text, call_id, self->next_seq++);
        }
    }
    json_decref (value);
    return texts;
}

//  The stored error message of a failed call with no alternative to
//  write its error to
json_t *
act_ctx_error (act_ctx_t *self, const json_t *error, const json_t *call,
               const char *call_id)
{
    json_t *message = json_object ();
    json_object_set_new (message, "type", json_string ("error"));
    json_object_set (message, "error", (json_t *) error);
    if (call)
        json_object_set (message, "_call", (json_t *) call);
    if (call_id)
        json_object_set_new (message, "_callId", json_string (call_id));
    s_stamp (self, message);
    return message;
}

//  Apply a stored message again, as when it was appended (messages come
//  in _seq order); -1 with err set for one the store should not hold
int
act_ctx_replay (act_ctx_t *self, const json_t *message, act_err_t *err)
{
    json_t *seq = json_object_get (message, "_seq");
    if (!json_is_integer (seq) || json_integer_value (seq) < (json_int_t) self->next_seq)
        return act_err_set (err, ACT_E_INTERNAL,
                            "stored message has no _seq or is out of order");
    const char *type = json_string_value (json_object_get (message, "type"));
    if (type && streq (type, "data")) {
        const char *kind_name, *instance;
        act_method_t method;
        const char *path = json_string_value (json_object_get (message, "_outputPath"));
        json_t *data = json_object_get (message, "data");
        if (s_data_fields (message, &kind_name, &instance, &method,
                           path? ACT_SET: ACT_MERGE, err))
            return -1;
        uint64_t at = (uint64_t) json_integer_value (seq);
        if (path) {
            act_expr_t *expr = act_expr_parse (path, true, err);
            if (!expr)
                return -1;
            if (expr->nalts != 1 || expr->alts [0].nrefs != 1) {
                act_expr_destroy (&expr);
                return act_err_set (err, ACT_E_INTERNAL,
                                    "stored _outputPath is not one reference");
            }
            //  The written value is the display form's innermost value
            act_ref_t *ref = &expr->alts [0].refs [0];
            json_t *value = data;
            for (size_t i = 0; i < ref->nsegs && value; i++)
                value = json_object_get (value, ref->segs [i].key);
            act_ctx_kind_t *kind = act_ctx_kind_require (self, ref->kind);
            int rc = value? act_ctx_scope_check (self, kind, instance, ref->segs, ref->nsegs,
                                     method, value, err)
                          : act_err_set (err, ACT_E_INTERNAL,
                                         "stored output's data does not match its path");
            if (rc == 0) {
                act_ctx_scope_apply (self, kind, instance, at, ref->segs, ref->nsegs, method, value);
                act_ctx_ident (self, kind, instance, true);
            }
            act_expr_destroy (&expr);
            if (rc)
                return -1;
        }
        else {
            if (!data)
                return act_err_set (err, ACT_E_INTERNAL, "stored data message has no data");
            act_ctx_kind_t *kind = act_ctx_kind_require (self, kind_name);
            if (act_ctx_scope_check (self, kind, instance, NULL, 0, method, data, err))
                return -1;
            act_ctx_scope_apply (self, kind, instance, at, NULL, 0, method, data);
            s_describe (act_ctx_ident (self, kind, instance, true), message);
        }
    }
    self->next_seq = (uint64_t) json_integer_value (seq) + 1;
    return 0;
}

//  The value at ref in scope instance: a new reference, or NULL if absent
json_t *
act_ctx_get (act_ctx_t *self, const act_ref_t *ref, const char *instance)
{
    act_ctx_kind_t *kind = (act_ctx_kind_t *) zhashx_lookup (self->kinds, ref->kind);
    if (!kind)
        return NULL;
    act_ctx_ident_t *ident = instance? act_ctx_ident (self, kind, instance, false): NULL;
    return act_ctx_scope_read (kind, ident, ref->segs, ref->nsegs);
}

//  Whether ref has a value in scope instance, copying nothing in the
//  global scope
bool
act_ctx_has (act_ctx_t *self, const act_ref_t *ref, const char *instance)
{
    act_ctx_kind_t *kind = (act_ctx_kind_t *) zhashx_lookup (self->kinds, ref->kind);
    if (!kind)
        return false;
    act_ctx_ident_t *ident = instance? act_ctx_ident (self, kind, instance, false): NULL;
    if (!ident) {
        act_ctx_lazy_force (kind, ref->segs, ref->nsegs, ACT_CTX_LAZY_ABOVE);
        return act_path_get (kind->doc, ref->segs, ref->nsegs) != NULL;
    }
    json_t *value = act_ctx_scope_read (kind, ident, ref->segs, ref->nsegs);
    json_decref (value);
    return value != NULL;
}

//  The instance writes the last read or check in scope (kind, instance)
//  looked at, as the index counted them
uint64_t
act_ctx_visited (act_ctx_t *self, const char *kind_name, const char *instance)
{
    act_ctx_kind_t *kind = (act_ctx_kind_t *) zhashx_lookup (self->kinds, kind_name);
    act_ctx_ident_t *ident = kind && instance? act_ctx_ident (self, kind, instance, false): NULL;
    return ident? ident->visited: 0;
}

char *
act_ctx_resolve_dump (act_ctx_t *self, const act_expr_t *expr, const char *instance,
                      size_t max, bool *absent)
{
    *absent = false;
    for (size_t a = 0; a < expr->nalts; a++) {
        const act_alt_t *alt = &expr->alts [a];
        size_t r = 0;
        while (r + 1 < alt->nrefs && act_ctx_has (self, &alt->refs [r], instance))
            r++;
        if (alt->nrefs == 0 || r + 1 < alt->nrefs)
            continue;
        const act_ref_t *ref = &alt->refs [r];
        act_ctx_kind_t *kind = (act_ctx_kind_t *) zhashx_lookup (self->kinds, ref->kind);
        act_ctx_ident_t *ident = kind && instance? act_ctx_ident (self, kind, instance, false)
                                                 : NULL;
        bool found;
        char *text = act_ctx_scope_dump (kind, ident, ref->segs, ref->nsegs, max, &found);
        if (found)
            return text;
    }
    *absent = true;
    return NULL;
}

//  The first alternative of expr whose references all have values: the
//  value of its last reference, or NULL when none has
json_t *
act_ctx_resolve (act_ctx_t *self, const act_expr_t *expr, const char *instance)
{
    for (size_t a = 0; a < expr->nalts; a++) {
        json_t *value = NULL;
        for (size_t r = 0; r < expr->alts [a].nrefs; r++) {
            json_decref (value);
            value = act_ctx_get (self, &expr->alts [a].refs [r], instance);
            if (!value)
                break;
        }
        if (value)
            return value;
    }
    return NULL;
}
