/*  =========================================================================
    act_pages - HISTORY pages built in pieces (see act_pages.h).
    ========================================================================= */

#include "act_pages.h"
#include "actd/act_json.h"

//  Messages read from the store per piece, at most
#define S_PIECE_MESSAGES 64

//  One page being built
typedef struct {
    zframe_t *client;           //  Whom to answer
    zframe_t *request;          //  Its request id
    bool enveloped;             //  A REQ client: the reply gets an empty frame
    char *context;              //  The context read
    uint64_t next;              //  The next _seq to read
    size_t left;                //  Messages the page may still take
    size_t count;               //  Messages in the page
    zchunk_t *text;             //  The page's text so far: "[" and messages
} s_page_t;

struct _act_pages_t {
    act_store_t *store;         //  Where messages are read (borrowed)
    act_outbox_t *outbox;       //  Where pages go (borrowed)
    size_t max_bytes;           //  Most text in one page (max_reply_bytes)
    zlistx_t *pages;            //  s_page_t, oldest request first
};

static void
s_page_destroy (s_page_t **self_p)
{
    if (*self_p) {
        s_page_t *self = *self_p;
        zframe_destroy (&self->client);
        zframe_destroy (&self->request);
        free (self->context);
        zchunk_destroy (&self->text);
        free (self);
        *self_p = NULL;
    }
}

static void
s_page_free (void **item)
{
    s_page_destroy ((s_page_t **) item);
}

act_pages_t *
act_pages_new (act_store_t *store, act_outbox_t *outbox, size_t max_bytes)
{
    act_pages_t *self = (act_pages_t *) calloc (1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->outbox = outbox;
    self->max_bytes = max_bytes;
    self->pages = zlistx_new ();
    zlistx_set_destructor (self->pages, s_page_free);
    return self;
}

void
act_pages_destroy (act_pages_t **self_p)
{
    if (self_p && *self_p) {
        act_pages_t *self = *self_p;
        zlistx_destroy (&self->pages);
        free (self);
        *self_p = NULL;
    }
}

void
act_pages_start (act_pages_t *self, zframe_t *client, zframe_t *request, bool enveloped,
                 const char *context, uint64_t from, size_t limit)
{
    s_page_t *page = (s_page_t *) calloc (1, sizeof *page);
    page->client = zframe_dup (client);
    page->request = zframe_dup (request);
    page->enveloped = enveloped;
    page->context = strdup (context);
    page->next = from;
    page->left = limit;
    page->text = zchunk_new ("[", 1);
    zlistx_add_end (self->pages, page);
}

//  Answer the page: VALUE with its text, or ERROR internal
static void
s_answer (act_pages_t *self, s_page_t *page, bool failed)
{
    act_outbox_envelope (self->outbox, page->enveloped? page->client: NULL);
    if (failed) {
        act_err_t err = { 0 };
        act_err_set (&err, ACT_E_INTERNAL, "the store could not read the history");
        act_outbox_error (self->outbox, page->client, page->request, "HISTORY", &err);
    }
    else {
        zchunk_extend (page->text, "]", 1);
        act_out_t *out = act_outbox_reply (self->outbox, page->client, page->request, "VALUE",
                                           false);
        act_out_add (out, zchunk_data (page->text), zchunk_size (page->text));
    }
    act_outbox_envelope (self->outbox, NULL);
}

//  A piece being read into a page
typedef struct {
    act_pages_t *pages;         //  The pages' owner
    s_page_t *page;             //  The page read into
    size_t added;               //  Bytes added by the piece
    size_t read;                //  Stored messages read
    bool done;                  //  The page is whole
} s_piece_t;

//  Add one stored message to the page: its stored text itself when that
//  is what writing it again would give (the usual case), else its text
//  read and written again, as HISTORY always returned it
static int
s_piece_message (uint64_t seq, const char *stored, size_t size, void *arg)
{
    s_piece_t *piece = (s_piece_t *) arg;
    s_page_t *page = piece->page;
    piece->read++;
    const char *text = stored;
    char *written = NULL;
    if (!act_json_is_dump (stored, size)) {
        written = act_json_redump (stored, size);
        if (!written) {
            page->next = seq + 1;       //  A text that does not read is left out
            return 0;
        }
        text = written;
        size = strlen (written);
    }
    //  "[" and each message with its "," or "]": the rule of one read
    if (page->count && zchunk_size (page->text) + size + 1 > piece->pages->max_bytes) {
        free (written);
        piece->done = true;
        return 1;
    }
    if (page->count)
        zchunk_extend (page->text, ",", 1);
    zchunk_extend (page->text, text, size);
    free (written);
    piece->added += size + 1;
    page->count++;
    page->next = seq + 1;
    if (--page->left == 0) {
        piece->done = true;
        return 1;
    }
    return 0;
}

//  Add a piece of about budget bytes to page. Returns the bytes added;
//  *done when the page is whole (or *failed).
static size_t
s_piece (act_pages_t *self, s_page_t *page, size_t budget, bool *done, bool *failed)
{
    size_t room = self->max_bytes - zchunk_size (page->text);
    size_t bound = budget < room? budget: room;
    s_piece_t piece = { self, page, 0, 0, false };
    *failed = act_store_history_texts (self->store, page->context, page->next,
                                       page->left < S_PIECE_MESSAGES? page->left
                                                                    : S_PIECE_MESSAGES,
                                       bound? bound: 1, s_piece_message, &piece) != 0;
    *done = *failed || piece.done || piece.read == 0;
    return piece.added;
}

size_t
act_pages_pump (act_pages_t *self, size_t budget)
{
    while (budget && zlistx_size (self->pages)) {
        s_page_t *page = (s_page_t *) zlistx_first (self->pages);
        if (!page->count && act_outbox_client_over (self->outbox, page->client)) {
            //  Its client does not read: the page would be dropped
            zlistx_delete (self->pages, zlistx_cursor (self->pages));
            continue;
        }
        bool done = false, failed = false;
        size_t added = page->left? s_piece (self, page, budget, &done, &failed): 0;
        if (!page->left)
            done = true;
        budget = added >= budget? 0: budget - added;
        if (done) {
            s_answer (self, page, failed);
            zlistx_delete (self->pages, zlistx_cursor (self->pages));
        }
    }
    return zlistx_size (self->pages);
}

size_t
act_pages_size (act_pages_t *self)
{
    return zlistx_size (self->pages);
}
