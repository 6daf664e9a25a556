/*  =========================================================================
    act_ctx_int - the index of a context, shared by the context and its
    messages (act_ctx.c), the kinds and identities with the reads and
    writes in a scope (act_ctx_index.c), the trie of instance writes with
    its cached fold (act_ctx_trie.c) and the merged view (act_ctx_view.c).
    Not installed: nothing outside libactd sees it.
    ========================================================================= */

#ifndef ACT_CTX_INT_H_INCLUDED
#define ACT_CTX_INT_H_INCLUDED

#include <czmq.h>
#include "actd/act_ctx.h"

//  The trie of one instance's writes by path (act_ctx_trie.c)
typedef struct _act_ctx_node_t act_ctx_node_t;

typedef struct _act_ctx_kind_t act_ctx_kind_t;

//  An identity (kind, instance): what the merged view shows one entry for
typedef struct {
    act_ctx_kind_t *kind;       //  The kind it belongs to
    char *instance;             //  Instance, NULL for the global scope
    json_t *description;        //  Latest description, or NULL
    json_t *schema;             //  Latest schema, or NULL
    act_ctx_node_t *root;       //  Instance writes by path; NULL if global
    zhashx_t *cache;            //  Path code of P' -> tracked fold (act_ctx_trie.c), or NULL
    uint64_t visited;           //  Instance writes the last read or check looked at
} act_ctx_ident_t;

struct _act_ctx_kind_t {
    char *name;                 //  The kind, such as "state"
    json_t *doc;                //  Fold of its global writes; NULL: absent
    uint64_t version;           //  Changes whenever doc changes
    bool lazy;                  //  doc may hold a stand-in (act_ctx_lazy.c)
    act_ctx_ident_t *global;    //  Global identity, once it has a message
    zhashx_t *instances;        //  Instance -> act_ctx_ident_t, NULL if none
};

struct _act_ctx_t {
    char *id;                   //  Context id
    uint64_t next_seq;          //  _seq the next message gets
    zhashx_t *kinds;            //  Kind name -> act_ctx_kind_t
    zlistx_t *identities;       //  act_ctx_ident_t, in order of first appearance
};

//  --------------------------------------------------------------------------
//  The trie of instance writes (act_ctx_node.c) and its fold (act_ctx_trie.c)

//  One instance write
typedef struct {
    uint64_t seq;               //  _seq of the message that made it
    act_method_t method;        //  How it combines with what is there
    json_t *value;              //  The value written (a reference)
    act_seg_t *segs;            //  Its path, an owned copy
    size_t nsegs;               //  Length of the path
} act_ctx_write_t;

//  A node of an instance's write trie: one path
struct _act_ctx_node_t {
    zhashx_t *children;         //  Segment text -> act_ctx_node_t, NULL if none
    act_ctx_node_t *append;     //  The "-" child, NULL if none
    act_ctx_write_t **writes;   //  Writes whose path ends here, oldest first
    size_t nwrites;             //  Number of writes
    size_t capacity;            //  Slots allocated in writes
    uint64_t first;             //  Oldest _seq written here or below
    uint64_t last;              //  Newest _seq written here or below
};

//  An empty trie node, to be the root of an instance's writes.
act_ctx_node_t *act_ctx_node_new (void);

//  Destroy a node, its children and their writes; null the pointer.
void act_ctx_node_destroy (act_ctx_node_t **self_p);

//  Record a write at its path under root (value and segs are copied).
void act_ctx_node_add (act_ctx_node_t *root, uint64_t seq, const act_seg_t *segs,
                       size_t nsegs, act_method_t method, const json_t *value);

//  Forget the newest write at path (undo of a tentative act_ctx_node_add).
void act_ctx_node_pop (act_ctx_node_t *root, const act_seg_t *segs, size_t nsegs);

//  The child of node for seg; made when create is set, else NULL if none.
act_ctx_node_t *act_ctx_node_child (act_ctx_node_t *self, const act_seg_t *seg, bool create);

//  For a set, merge or erase at a path of keys in instance ident: 1 when a
//  level above the path is an array (the write fails), 0 when none is, -1
//  when this cannot tell (use act_ctx_instance_base).
int act_ctx_instance_blocked (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                              const act_seg_t *segs, size_t nsegs, act_method_t method);

//  The value, in instance ident of kind, at a prefix of segs from which
//  the rest can be read or written exactly: false when that prefix runs
//  through an array by a key; else *base (a reference the caller drops;
//  NULL: absent) at the first *depth segments. With *shared set, *base is
//  the fold's cached value itself, which may be the global document's
//  value or a write's (it shares them): it must not be changed (a write's
//  check only reads it; a read copies what it keeps). A copy cost every
//  write's check in an instance the whole instance value (an audit: 10k
//  pushes of 70 bytes, 16.7 s). With rope, the caller checks a concat of a string
//  at segs, and takes a rope (act_ctx_lazy_rope_is) there for the string
//  it holds; else a rope is joined first.
bool act_ctx_instance_base (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                            const act_seg_t *segs, size_t nsegs, bool rope,
                            json_t **base, size_t *depth, bool *shared);

//  --------------------------------------------------------------------------
//  Values kept as text until read (act_ctx_lazy.c)

//  A stand-in for a value given as JSON text (one act_json_parse accepts),
//  to be written with set or push in a kind's global document; NULL when out of
//  memory. Put in a document, it makes the kind's lazy true.
json_t *act_ctx_lazy_new (const char *text, size_t size);

//  True when value is a stand-in.
bool act_ctx_lazy_is (const json_t *value);

//  How far below the levels it walks through a use of a path reads
typedef enum {
    ACT_CTX_LAZY_ABOVE,         //  Only the levels above the path's end
    ACT_CTX_LAZY_NODE,          //  And the value at its end (its type)
    ACT_CTX_LAZY_DEEP           //  And that value with all below it
} act_ctx_lazy_reach_t;

//  Parse the stand-ins of kind's global document that a use of path segs
//  sees: on each level it walks through and at segs as reach says. Call
//  before anything interprets those levels (reads, checks, writes).
//  Returns the values it looked at (0 when the kind holds no stand-in);
//  ACT_CTX_LAZY_DEEP looks at every value below segs, parsed or not.
size_t act_ctx_lazy_force (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                         act_ctx_lazy_reach_t reach);

//  A global concat of string value onto the string at segs kept as a rope
//  (the value's piece appended, nothing copied of what is there): true
//  when it is one that a rope takes (a string of 256 bytes or more, or a
//  rope, is there), and then done unless dry_run (the write is valid: a
//  check needs nothing more); false when the write must go the usual way
//  (its check says whether it is valid). Call before act_ctx_lazy_force
//  with the method's reach, which would join the rope.
bool act_ctx_lazy_concat (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                          const json_t *value, bool dry_run);

//  The same for a value of its own (an instance's cached fold): the
//  string value appended to *value_p as a rope, true, when *value_p is a
//  rope or a string of 256 bytes or more; else false, nothing changed
bool act_ctx_lazy_rope_append (json_t **value_p, const json_t *value);

//  True when value is a rope (of act_ctx_lazy_rope_append)
bool act_ctx_lazy_rope_is (const json_t *value);

//  *value_p joined into its string when it is a rope
void act_ctx_lazy_rope_join (json_t **value_p);

//  --------------------------------------------------------------------------
//  Kinds, identities and writes in a scope (act_ctx_index.c)

//  zhashx destructor of a kind (the identities are freed by the list).
void act_ctx_kind_destroy (void **item);

//  zlistx destructor of an identity.
void act_ctx_ident_destroy (void **item);

//  The kind named name, created empty when it has none yet.
act_ctx_kind_t *act_ctx_kind_require (act_ctx_t *self, const char *name);

//  The identity (kind, instance), created (and shown in the view from now
//  on) when create is set; NULL when absent and not created.
act_ctx_ident_t *act_ctx_ident (act_ctx_t *self, act_ctx_kind_t *kind,
                                const char *instance, bool create);

//  The value at segs in scope (kind, ident); ident NULL: global or an
//  instance with no writes. Returns a new reference, or NULL when absent.
json_t *act_ctx_scope_read (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                            const act_seg_t *segs, size_t nsegs);

//  The text of the value act_ctx_scope_read gives, as act_json_dump
//  writes it, within max bytes, copying no value: a new string, or NULL
//  (*found says whether the value was there, too large then)
char *act_ctx_scope_dump (act_ctx_kind_t *kind, act_ctx_ident_t *ident,
                          const act_seg_t *segs, size_t nsegs, size_t max, bool *found);

//  Check a write in scope (kind, instance), without changing anything:
//  0, or -1 with err set.
int act_ctx_scope_check (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance,
                         const act_seg_t *segs, size_t nsegs, act_method_t method,
                         const json_t *value, act_err_t *err);

//  Apply a write that act_ctx_scope_check accepted, as the message seq.
void act_ctx_scope_apply (act_ctx_t *self, act_ctx_kind_t *kind, const char *instance,
                          uint64_t seq, const act_seg_t *segs, size_t nsegs,
                          act_method_t method, const json_t *value);

//  Apply to kind's global document a write that its check accepted (a
//  copy of value; a concat onto a long string as a rope).
void act_ctx_global_write (act_ctx_kind_t *kind, const act_seg_t *segs, size_t nsegs,
                           act_method_t method, const json_t *value);

//  The same, but a global set may keep value itself rather than a copy
//  (act_path_write_shared): no one else may hold value or change it.
void act_ctx_scope_apply_shared (act_ctx_t *self, act_ctx_kind_t *kind,
                                 const char *instance, uint64_t seq,
                                 const act_seg_t *segs, size_t nsegs,
                                 act_method_t method, json_t *value);

//  Check and apply at once a write in the global scope that keeps value
//  itself (as act_ctx_scope_apply_shared): 0, or -1 with err set and
//  nothing changed (act_path_write changes nothing when it refuses). For
//  a write with one target, which no other target of its own can see.
int act_ctx_scope_write_shared (act_ctx_t *self, act_ctx_kind_t *kind,
                                const act_seg_t *segs, size_t nsegs,
                                act_method_t method, json_t *value, act_err_t *err);

#endif
