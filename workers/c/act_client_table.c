/*  =========================================================================
    act_client_table - a table of the C client keyed by request id, call
    id or context that keeps at most its limit of entries, the oldest
    going first, so that a long-lived client's tables stay bounded (as the
    Python library's ROUTES_KEPT). Private to libactd.
    ========================================================================= */

#include "act_client_int.h"

//  An entry: its item, and its key's place in the order
typedef struct {
    void *item;                 //  The caller's item
    void *handle;               //  Its key in order
} s_entry_t;

struct _act_table_t {
    zhashx_t *entries;          //  Key -> s_entry_t
    zlistx_t *order;            //  Keys (copies), oldest first
    zhashx_destructor_fn *destructor;   //  Frees an item, or NULL
    size_t limit;               //  Most entries kept
};

act_table_t *
act_table_new (size_t limit, zhashx_destructor_fn *destructor)
{
    act_table_t *self = calloc (1, sizeof *self);
    self->entries = zhashx_new ();
    self->order = zlistx_new ();
    zlistx_set_destructor (self->order, (zlistx_destructor_fn *) zstr_free);
    self->destructor = destructor;
    self->limit = limit;
    return self;
}

void
act_table_destroy (act_table_t **self_p)
{
    if (self_p && *self_p) {
        act_table_t *self = *self_p;
        act_table_purge (self);
        zhashx_destroy (&self->entries);
        zlistx_destroy (&self->order);
        free (self);
        *self_p = NULL;
    }
}

void *
act_table_lookup (act_table_t *self, const char *key)
{
    s_entry_t *entry = zhashx_lookup (self->entries, key);
    return entry? entry->item: NULL;
}

void
act_table_delete (act_table_t *self, const char *key)
{
    s_entry_t *entry = zhashx_lookup (self->entries, key);
    if (!entry)
        return;
    //  key may be the item's own or the order's copy: freed last
    void *item = entry->item;
    void *handle = entry->handle;
    zhashx_delete (self->entries, key);
    free (entry);
    if (self->destructor)
        self->destructor (&item);
    zlistx_delete (self->order, handle);
}

void
act_table_update (act_table_t *self, const char *key, void *item)
{
    act_table_delete (self, key);
    s_entry_t *entry = calloc (1, sizeof *entry);
    entry->item = item;
    entry->handle = zlistx_add_end (self->order, strdup (key));
    zhashx_insert (self->entries, key, entry);
    while (zlistx_size (self->order) > self->limit)
        act_table_delete (self, (const char *) zlistx_first (self->order));
}

void
act_table_purge (act_table_t *self)
{
    while (zlistx_size (self->order))
        act_table_delete (self, (const char *) zlistx_first (self->order));
}

size_t
act_table_size (act_table_t *self)
{
    return zlistx_size (self->order);
}

zlistx_t *
act_table_keys (act_table_t *self)
{
    zlistx_t *keys = zlistx_new ();
    zlistx_set_destructor (keys, (zlistx_destructor_fn *) zstr_free);
    for (const char *key = zlistx_first (self->order); key; key = zlistx_next (self->order))
        zlistx_add_end (keys, strdup (key));
    return keys;
}

void
act_table_set_limit (act_table_t *self, size_t limit)
{
    self->limit = limit;
}
