/*  =========================================================================
    act_sqlite_vfs - the SQLite VFS of the store: the system's own (unix),
    with the frames a commit appends to its WAL written in one write
    (private to the SQLite store).

    SQLite writes each WAL frame as two writes, its 24-byte header and
    then its page, so a commit of n pages costs 2n pwrite calls, each one
    a trip through the file system's write path for a piece of a page.
    Measured on this project's machine (ext4, a VM): 6 frames took 17-19
    us as 12 writes and 5 us as one; 150 frames 440 us and 70-80 us, and
    the fdatasync after them 120 against 105 us for 6 frames. This VFS
    keeps a WAL's appended frames in memory and writes them at once as
    soon as the commit frame (the one whose header carries the database's
    size) is complete, inside the write that completes it: the frames are
    in the file before SQLite marks them committed in its wal-index, as
    with the stock VFS, and a failed write fails that commit the same way.
    Every other file, and every other kind of write, read, sync, truncate
    or size of a WAL, goes straight to the system's VFS (a WAL with frames
    held writes them first). The files are SQLite's own format: any
    sqlite3 opens them, while actd runs or after.
    ========================================================================= */

#ifndef ACT_SQLITE_VFS_H_INCLUDED
#define ACT_SQLITE_VFS_H_INCLUDED

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

//  The VFS's name, for sqlite3_open_v2
#define ACT_SQLITE_VFS "actd"

//  Register the VFS (once per process; later calls do nothing). Returns
//  0, or -1 when SQLite has no default VFS to wrap
int act_sqlite_vfs_register (void);

//  Write what db's WAL still holds in memory (nothing, after a commit,
//  unless SQLite changed how it writes frames). Returns 0 (also for a
//  connection not opened on this VFS, or not in WAL mode) or -1 when the
//  write failed
int act_sqlite_vfs_flush (sqlite3 *db);

//  Make the frames of db's last transaction unreadable to SQLite's
//  recovery of the WAL, once its commit failed after they were written
//  (the sync of the WAL failed): in the file (the page cache, for a
//  failing disk), they would make a commit SQLite refused come back when
//  the store is next opened. Does nothing unless that transaction's
//  commit frame was written since the WAL's last sync (with synchronous
//  = FULL, as a commit syncs: the failed commit's frames only). Returns
//  0, or -1 when the file could not be read or written, or db is not
//  on this VFS
int act_sqlite_vfs_forget (sqlite3 *db);

//  Writes to WAL files made through the system's VFS since the process
//  started (a commit of frames is one): for tests and benchmarks
uint64_t act_sqlite_vfs_wal_writes (void);

#endif
