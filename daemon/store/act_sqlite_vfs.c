/*  =========================================================================
    act_sqlite_vfs - the SQLite VFS of the store, one write per commit's
    WAL frames (see act_sqlite_vfs.h).

    The WAL's layout (SQLite's file format, stable since 3.7.0): a header
    of 32 bytes at offset 0, then frames, each a 24-byte header and a
    page. Bytes 4-7 of a frame's header are the database's size in pages
    for the last frame of a commit, and zero for every other frame.

    What is held: a run of contiguous writes that starts with a frame
    header that is not a commit's, or with the WAL's header. It is
    written when the page after a commit frame's header joins it, and
    before anything else touches the file: a write elsewhere, a read, a
    sync, a truncate, its size, a file control, its close. A commit
    frame's header written alone (SQLite rewrites frame headers in place
    when a transaction wrote a page twice) is not held: nothing would
    follow it to write it out before SQLite marks the commit done.
    ========================================================================= */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "act_sqlite_vfs.h"

#define S_WAL_HEADER    32          //  Bytes of the WAL's header
#define S_FRAME_HEADER  24          //  Bytes of a frame's header
#define S_HELD_MIN      (64 * 1024) //  First allocation of held bytes
#define S_WRITE_MAX     (124 * 1024)    //  Most bytes a write: the unix
                                    //  VFS writes at most 128 KiB - 1 at once
                                    //  (it masks a write's size with 0x1ffff)
#define S_HELD_MAX      (4 * 1024 * 1024)   //  Most bytes held (a larger
                                    //  transaction is written in parts)

typedef struct {
    sqlite3_file base;              //  SQLite's view: this VFS's methods
    sqlite3_file *real;             //  The system VFS's file, in the same
                                    //  allocation, after this struct
    int wal;                        //  A WAL: its appended frames are held
    int commit;                     //  held ends with a commit's frame header
    char *held;                     //  Bytes written, not yet in the file
    size_t size;                    //  Bytes in held
    size_t room;                    //  Bytes allocated for held
    sqlite3_int64 held_at;          //  Offset of held's first byte
    sqlite3_int64 txn_at;           //  A WAL's first byte written since
                                    //  its last sync (0: none)
    int synced;                     //  Nothing written since the last sync
    int commit_page;                //  The next write is a commit frame's page
    int committed;                  //  A commit frame's page was written
                                    //  since the last sync
} s_file_t;

//  Where the system VFS's file starts after ours (16-byte aligned)
#define S_REAL_OFFSET   ((sizeof (s_file_t) + 15) & ~(size_t) 15)

static sqlite3_vfs s_vfs;                   //  This VFS
static const sqlite3_io_methods s_methods;  //  Its files' methods
static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static int s_registered = -1;               //  0 once registered
static atomic_uint_fast64_t s_wal_writes;   //  See act_sqlite_vfs_wal_writes

//  The system's VFS that this one wraps
static sqlite3_vfs *
s_real (sqlite3_vfs *vfs)
{
    return (sqlite3_vfs *) vfs->pAppData;
}

//  True when a frame header (24 bytes) is a commit's
static int
s_is_commit (const void *header)
{
    const unsigned char *bytes = (const unsigned char *) header;
    return (bytes [4] | bytes [5] | bytes [6] | bytes [7]) != 0;
}

//  Write what is held; SQLITE_OK or the write's error (the bytes are then
//  dropped: SQLite fails the write, or the commit, that caused this)
static int
s_flush (s_file_t *self)
{
    if (!self->size)
        return SQLITE_OK;
    int rc = SQLITE_OK;
    for (size_t done = 0; done < self->size && rc == SQLITE_OK; done += S_WRITE_MAX) {
        size_t part = self->size - done < S_WRITE_MAX? self->size - done: S_WRITE_MAX;
        rc = self->real->pMethods->xWrite (self->real, self->held + done, (int) part,
                                           self->held_at + (sqlite3_int64) done);
        atomic_fetch_add (&s_wal_writes, 1);
    }
    self->size = 0;
    self->commit = 0;
    return rc;
}

//  Make room for size more bytes held; 0, or -1 when they do not fit
static int
s_room (s_file_t *self, size_t size)
{
    size_t need = self->size + size;
    if (need > S_HELD_MAX)
        return -1;
    if (need <= self->room)
        return 0;
    size_t room = self->room? self->room: S_HELD_MIN;
    while (room < need)
        room *= 2;
    char *held = realloc (self->held, room);
    if (!held)
        return -1;
    self->held = held;
    self->room = room;
    return 0;
}

//  Write amount bytes at offset: a WAL's are held when they continue what
//  is held or start a run (see the top of this file), and written with
//  it once the commit frame is complete; the rest go through
static int s_write_held (s_file_t *self, const void *data, int amount, sqlite3_int64 offset);

static int
s_write (sqlite3_file *file, const void *data, int amount, sqlite3_int64 offset)
{
    s_file_t *self = (s_file_t *) file;
    if (!self->wal || amount <= 0)
        return self->real->pMethods->xWrite (self->real, data, amount, offset);
    //  Where the frames not synced yet start (act_sqlite_vfs_forget): with
    //  synchronous = FULL each commit syncs the WAL, so these are the
    //  frames of one transaction: after the WAL's header (written again
    //  when the WAL starts over), or at the first write since a sync
    if (offset == 0) {
        self->txn_at = S_WAL_HEADER;
        self->committed = 0;
    }
    else
    if (self->synced)
        self->txn_at = offset;
    self->synced = 0;
    self->committed |= self->commit_page;
    self->commit_page = amount == S_FRAME_HEADER && s_is_commit (data);
    return s_write_held (self, data, amount, offset);
}

//  s_write for a WAL: held, or written through
static int
s_write_held (s_file_t *self, const void *data, int amount, sqlite3_int64 offset)
{
    if (self->size && offset == self->held_at + (sqlite3_int64) self->size
    &&  s_room (self, (size_t) amount) == 0) {
        memcpy (self->held + self->size, data, (size_t) amount);
        self->size += (size_t) amount;
        if (self->commit)
            return s_flush (self);      //  The commit frame is complete
        self->commit = amount == S_FRAME_HEADER && s_is_commit (data);
        return SQLITE_OK;
    }
    int rc = s_flush (self);
    if (rc != SQLITE_OK)
        return rc;
    if (((amount == S_FRAME_HEADER && !s_is_commit (data))
    ||   (amount == S_WAL_HEADER && offset == 0))
    &&  s_room (self, (size_t) amount) == 0) {
        memcpy (self->held, data, (size_t) amount);
        self->size = (size_t) amount;
        self->held_at = offset;
        return SQLITE_OK;
    }
    atomic_fetch_add (&s_wal_writes, 1);
    return self->real->pMethods->xWrite (self->real, data, amount, offset);
}

//  The file methods that read or change the file as a whole: what is
//  held is written first, and a failure to write it is theirs
static int
s_close (sqlite3_file *file)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    int closed = self->real->pMethods->xClose (self->real);
    free (self->held);
    self->held = NULL;
    self->room = 0;
    return rc != SQLITE_OK? rc: closed;
}

static int
s_read (sqlite3_file *file, void *data, int amount, sqlite3_int64 offset)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    return rc != SQLITE_OK? rc:
           self->real->pMethods->xRead (self->real, data, amount, offset);
}

static int
s_truncate (sqlite3_file *file, sqlite3_int64 size)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    return rc != SQLITE_OK? rc: self->real->pMethods->xTruncate (self->real, size);
}

static int
s_sync (sqlite3_file *file, int flags)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    if (rc == SQLITE_OK)
        rc = self->real->pMethods->xSync (self->real, flags);
    if (rc == SQLITE_OK) {
        self->synced = 1;
        self->committed = 0;
    }
    return rc;
}

static int
s_file_size (sqlite3_file *file, sqlite3_int64 *size)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    return rc != SQLITE_OK? rc: self->real->pMethods->xFileSize (self->real, size);
}

static int
s_file_control (sqlite3_file *file, int op, void *arg)
{
    s_file_t *self = (s_file_t *) file;
    int rc = s_flush (self);
    return rc != SQLITE_OK? rc: self->real->pMethods->xFileControl (self->real, op, arg);
}

//  The rest goes to the system's file as it is: locks, the shared memory
//  of the main file (a WAL has none), and its pages mapped in memory
static sqlite3_file *
s_inner (sqlite3_file *file)
{
    return ((s_file_t *) file)->real;
}

static int
s_lock (sqlite3_file *file, int level)
{
    return s_inner (file)->pMethods->xLock (s_inner (file), level);
}

static int
s_unlock (sqlite3_file *file, int level)
{
    return s_inner (file)->pMethods->xUnlock (s_inner (file), level);
}

static int
s_check_reserved (sqlite3_file *file, int *out)
{
    return s_inner (file)->pMethods->xCheckReservedLock (s_inner (file), out);
}

static int
s_sector_size (sqlite3_file *file)
{
    return s_inner (file)->pMethods->xSectorSize (s_inner (file));
}

static int
s_device (sqlite3_file *file)
{
    return s_inner (file)->pMethods->xDeviceCharacteristics (s_inner (file));
}

static int
s_shm_map (sqlite3_file *file, int region, int size, int extend, void volatile **out)
{
    return s_inner (file)->pMethods->xShmMap (s_inner (file), region, size, extend, out);
}

static int
s_shm_lock (sqlite3_file *file, int offset, int count, int flags)
{
    return s_inner (file)->pMethods->xShmLock (s_inner (file), offset, count, flags);
}

static void
s_shm_barrier (sqlite3_file *file)
{
    s_inner (file)->pMethods->xShmBarrier (s_inner (file));
}

static int
s_shm_unmap (sqlite3_file *file, int delete_flag)
{
    return s_inner (file)->pMethods->xShmUnmap (s_inner (file), delete_flag);
}

static int
s_fetch (sqlite3_file *file, sqlite3_int64 offset, int amount, void **out)
{
    return s_inner (file)->pMethods->xFetch (s_inner (file), offset, amount, out);
}

static int
s_unfetch (sqlite3_file *file, sqlite3_int64 offset, void *page)
{
    return s_inner (file)->pMethods->xUnfetch (s_inner (file), offset, page);
}

static const sqlite3_io_methods s_methods = {
    3, s_close, s_read, s_write, s_truncate, s_sync, s_file_size, s_lock,
    s_unlock, s_check_reserved, s_file_control, s_sector_size, s_device,
    s_shm_map, s_shm_lock, s_shm_barrier, s_shm_unmap, s_fetch, s_unfetch
};

//  Open name through the system's VFS; a WAL's frames will be held
static int
s_open (sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out_flags)
{
    s_file_t *self = (s_file_t *) file;
    memset (self, 0, sizeof *self);
    self->synced = 1;
    self->real = (sqlite3_file *) ((char *) file + S_REAL_OFFSET);
    self->real->pMethods = NULL;
    int rc = s_real (vfs)->xOpen (s_real (vfs), name, self->real, flags, out_flags);
    if (self->real->pMethods && self->real->pMethods->iVersion < 3) {
        //  A system VFS without shared memory or mmap: not the one this
        //  wraps (unix), so refuse it rather than call what it lacks
        self->real->pMethods->xClose (self->real);
        self->real->pMethods = NULL;
        rc = SQLITE_CANTOPEN;
    }
    if (self->real->pMethods)
        self->base.pMethods = &s_methods;
    self->wal = (flags & SQLITE_OPEN_WAL) != 0;
    return rc;
}

//  The VFS's other methods are the system VFS's, called on it
static int
s_delete (sqlite3_vfs *vfs, const char *name, int sync_dir)
{
    return s_real (vfs)->xDelete (s_real (vfs), name, sync_dir);
}

static int
s_access (sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
    return s_real (vfs)->xAccess (s_real (vfs), name, flags, out);
}

static int
s_full_pathname (sqlite3_vfs *vfs, const char *name, int size, char *out)
{
    return s_real (vfs)->xFullPathname (s_real (vfs), name, size, out);
}

static void *
s_dl_open (sqlite3_vfs *vfs, const char *name)
{
    return s_real (vfs)->xDlOpen (s_real (vfs), name);
}

static void
s_dl_error (sqlite3_vfs *vfs, int size, char *out)
{
    s_real (vfs)->xDlError (s_real (vfs), size, out);
}

static void
(*s_dl_sym (sqlite3_vfs *vfs, void *handle, const char *symbol)) (void)
{
    return s_real (vfs)->xDlSym (s_real (vfs), handle, symbol);
}

static void
s_dl_close (sqlite3_vfs *vfs, void *handle)
{
    s_real (vfs)->xDlClose (s_real (vfs), handle);
}

static int
s_randomness (sqlite3_vfs *vfs, int size, char *out)
{
    return s_real (vfs)->xRandomness (s_real (vfs), size, out);
}

static int
s_sleep (sqlite3_vfs *vfs, int us)
{
    return s_real (vfs)->xSleep (s_real (vfs), us);
}

static int
s_current_time (sqlite3_vfs *vfs, double *out)
{
    return s_real (vfs)->xCurrentTime (s_real (vfs), out);
}

static int
s_last_error (sqlite3_vfs *vfs, int size, char *out)
{
    return s_real (vfs)->xGetLastError (s_real (vfs), size, out);
}

static int
s_current_time_int64 (sqlite3_vfs *vfs, sqlite3_int64 *out)
{
    return s_real (vfs)->xCurrentTimeInt64 (s_real (vfs), out);
}

//  Register this VFS around the default one (once, see act_sqlite_vfs_register)
static void
s_register (void)
{
    sqlite3_vfs *real = sqlite3_vfs_find (NULL);
    if (!real || real->iVersion < 2)
        return;
    s_vfs = (sqlite3_vfs) {
        2, (int) (S_REAL_OFFSET + (size_t) real->szOsFile), real->mxPathname, NULL,
        ACT_SQLITE_VFS, real, s_open, s_delete, s_access, s_full_pathname,
        s_dl_open, s_dl_error, s_dl_sym, s_dl_close, s_randomness, s_sleep,
        s_current_time, s_last_error, s_current_time_int64, NULL, NULL, NULL
    };
    s_registered = sqlite3_vfs_register (&s_vfs, 0) == SQLITE_OK? 0: -1;
}

int
act_sqlite_vfs_register (void)
{
    pthread_once (&s_once, s_register);
    return s_registered;
}

int
act_sqlite_vfs_flush (sqlite3 *db)
{
    sqlite3_file *file = NULL;
    if (sqlite3_file_control (db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) != SQLITE_OK
    ||  !file || file->pMethods != &s_methods)
        return 0;
    return s_flush ((s_file_t *) file) == SQLITE_OK? 0: -1;
}

int
act_sqlite_vfs_forget (sqlite3 *db)
{
    sqlite3_file *file = NULL;
    if (sqlite3_file_control (db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &file) != SQLITE_OK
    ||  !file || file->pMethods != &s_methods)
        return -1;              //  Not on this VFS: it cannot know the frames
    s_file_t *self = (s_file_t *) file;
    if (!self->committed || !self->txn_at)
        return 0;               //  No commit frame reached the file since the sync
    //  A frame whose salts differ from the WAL header's ends what SQLite
    //  recovers of the WAL (and every frame after it): the salts' bytes
    //  of the transaction's first frame, inverted
    unsigned char salts [8];
    sqlite3_int64 at = self->txn_at + 8;
    int rc = self->real->pMethods->xRead (self->real, salts, sizeof salts, at);
    for (size_t i = 0; i < sizeof salts; i++)
        salts [i] = (unsigned char) ~salts [i];
    if (rc == SQLITE_OK)
        rc = self->real->pMethods->xWrite (self->real, salts, sizeof salts, at);
    self->committed = 0;
    //  The flush may fail as the commit's did; the page cache, which a
    //  restart of actd reads, holds the inverted salts either way
    if (rc == SQLITE_OK)
        self->real->pMethods->xSync (self->real, SQLITE_SYNC_NORMAL);
    return rc == SQLITE_OK? 0: -1;
}

uint64_t
act_sqlite_vfs_wal_writes (void)
{
    return (uint64_t) atomic_load (&s_wal_writes);
}
