/*  =========================================================================
    disk_full - an LD_PRELOAD library that fills one process's disk, or
    fails its syncs, on demand, for the tests of a store that cannot write
    (test_disk_full), without root or a mount (CI may allow neither).

    While the file that ACTD_DISK_FULL names exists, the file system under
    the directory ACTD_DISK_FULL_DIR is full: a call that needs room in a
    regular file there fails with ENOSPC, as the kernel fails it. The calls
    that take room: write, pwrite, pwrite64, writev, pwritev, pwritev2
    (SQLite's unix VFS writes its file, WAL and -shm with pwrite64),
    fallocate, posix_fallocate, and ftruncate or truncate to a larger size.
    What room they need depends on the control file's content:

    - empty: every byte written, as on a copy-on-write file system (btrfs,
      ZFS), where overwriting a block takes a new one; a store then can
      commit nothing, whatever its WAL holds;
    - "grow": the bytes past the file's end only, as on ext4 or tmpfs,
      where a block is overwritten in place (SQLite may then commit in a
      WAL it starts again from its beginning);
    - "eio": none, but every fsync and fdatasync of a file there fails
      EIO, as on a failing disk: what was written stays in the page cache,
      where a process that opens the file next reads it.

    The room this process freed there since the disk filled (a truncate to
    a smaller size, an unlink) may be taken again, as the kernel gives
    freed blocks back: SQLite, opening a store, truncates its -shm file and
    writes it again, which a full disk lets it do. Anything else (a socket,
    the log, a file elsewhere) goes through.

    Built without sanitizers: it is loaded before their runtimes (the
    tests set ASAN_OPTIONS verify_asan_link_order=0).
    ========================================================================= */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

//  How full: not at all, every byte written, or bytes that grow a file
typedef enum { S_ROOM, S_FULL, S_FULL_GROW, S_SYNC_EIO } s_state_t;

static char s_dir [PATH_MAX];       //  ACTD_DISK_FULL_DIR, resolved
static pthread_once_t s_dir_once = PTHREAD_ONCE_INIT;
static atomic_llong s_freed;        //  Bytes freed under it while full

//  The disk's state now, from the control file (looked at on each call)
static s_state_t
s_state (void)
{
    const char *path = getenv ("ACTD_DISK_FULL");
    int fd = path && getenv ("ACTD_DISK_FULL_DIR")? open (path, O_RDONLY | O_CLOEXEC): -1;
    if (fd < 0) {
        atomic_store (&s_freed, 0);     //  Room again: the next fill starts from none
        return S_ROOM;
    }
    char mode [8] = { 0 };
    ssize_t size = read (fd, mode, sizeof mode - 1);
    close (fd);
    if (size >= 3 && memcmp (mode, "eio", 3) == 0)
        return S_SYNC_EIO;
    return size >= 4 && memcmp (mode, "grow", 4) == 0? S_FULL_GROW: S_FULL;
}

static void
s_dir_resolve (void)
{
    if (!realpath (getenv ("ACTD_DISK_FULL_DIR"), s_dir))
        *s_dir = 0;
}

//  True when path names something under ACTD_DISK_FULL_DIR
static int
s_under (const char *path)
{
    pthread_once (&s_dir_once, s_dir_resolve);
    size_t size = strlen (s_dir);
    return size && strncmp (path, s_dir, size) == 0
        && (path [size] == '/' || path [size] == 0);
}

//  True when fd is a regular file under the directory; its stat in info
static int
s_ours (int fd, struct stat *info)
{
    if (fstat (fd, info) != 0 || !S_ISREG (info->st_mode))
        return 0;
    char link [64], path [PATH_MAX];
    snprintf (link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink (link, path, sizeof path - 1);
    if (length <= 0)
        return 0;
    path [length] = 0;
    return s_under (path);
}

//  Take need bytes of the room freed; true when there was that much
static int
s_take (long long need)
{
    long long freed = atomic_load (&s_freed);
    while (freed >= need)
        if (atomic_compare_exchange_weak (&s_freed, &freed, freed - need))
            return 1;
    return 0;
}

#define S_HERE  ((off_t) -1)        //  A write at fd's current offset

//  True when a write of size bytes at offset (or S_HERE) into fd (or a
//  growth of its file to offset + size, with size 0 for any byte written)
//  must fail: the disk is full, fd a regular file under the directory,
//  and the room it needs more than what was freed. errno is left as it was.
static int
s_refused (int fd, off_t offset, size_t size)
{
    int saved = errno;
    s_state_t state = s_state ();
    struct stat info;
    int refused = 0;
    if (state != S_ROOM && state != S_SYNC_EIO && s_ours (fd, &info)) {
        off_t at = offset == S_HERE? lseek (fd, 0, SEEK_CUR): offset;
        long long past = at < 0? (long long) size: (long long) (at + (off_t) size) - info.st_size;
        long long need = past > 0? past: 0;
        if (state == S_FULL && (long long) size > need)
            need = (long long) size;
        refused = need > 0 && !s_take (need);
    }
    errno = saved;
    return refused;
}

//  Note room freed when fd's file shrinks to size (while full)
static void
s_shrinks (int fd, off_t size)
{
    int saved = errno;
    struct stat info;
    s_state_t state = s_state ();
    if (state != S_ROOM && state != S_SYNC_EIO && s_ours (fd, &info) && size < info.st_size)
        atomic_fetch_add (&s_freed, (long long) (info.st_size - size));
    errno = saved;
}

//  Bytes in an iovec array
static size_t
s_iov_bytes (const struct iovec *iov, int count)
{
    size_t bytes = 0;
    for (int i = 0; i < count; i++)
        bytes += iov [i].iov_len;
    return bytes;
}

//  The next definition of name (libc's, or a sanitizer's around it)
#define S_REAL(type, name) \
    static type *real; \
    if (!real) \
        real = (type *) dlsym (RTLD_NEXT, name)

#define S_REFUSE(refused) \
    if (refused) { \
        errno = ENOSPC; \
        return -1; \
    }

ssize_t
write (int fd, const void *data, size_t size)
{
    typedef ssize_t (fn_t) (int, const void *, size_t);
    S_REAL (fn_t, "write");
    S_REFUSE (s_refused (fd, S_HERE, size));
    return real (fd, data, size);
}

ssize_t
pwrite (int fd, const void *data, size_t size, off_t offset)
{
    typedef ssize_t (fn_t) (int, const void *, size_t, off_t);
    S_REAL (fn_t, "pwrite");
    S_REFUSE (offset >= 0 && s_refused (fd, offset, size));
    return real (fd, data, size, offset);
}

ssize_t
pwrite64 (int fd, const void *data, size_t size, off64_t offset)
{
    typedef ssize_t (fn_t) (int, const void *, size_t, off64_t);
    S_REAL (fn_t, "pwrite64");
    S_REFUSE (offset >= 0 && s_refused (fd, (off_t) offset, size));
    return real (fd, data, size, offset);
}

ssize_t
writev (int fd, const struct iovec *iov, int count)
{
    typedef ssize_t (fn_t) (int, const struct iovec *, int);
    S_REAL (fn_t, "writev");
    S_REFUSE (s_refused (fd, S_HERE, s_iov_bytes (iov, count)));
    return real (fd, iov, count);
}

ssize_t
pwritev (int fd, const struct iovec *iov, int count, off_t offset)
{
    typedef ssize_t (fn_t) (int, const struct iovec *, int, off_t);
    S_REAL (fn_t, "pwritev");
    S_REFUSE (offset >= 0 && s_refused (fd, offset, s_iov_bytes (iov, count)));
    return real (fd, iov, count, offset);
}

ssize_t
pwritev2 (int fd, const struct iovec *iov, int count, off_t offset, int flags)
{
    typedef ssize_t (fn_t) (int, const struct iovec *, int, off_t, int);
    S_REAL (fn_t, "pwritev2");
    //  An offset of -1 writes at the current one
    S_REFUSE (s_refused (fd, offset < 0? S_HERE: offset, s_iov_bytes (iov, count)));
    return real (fd, iov, count, offset, flags);
}

int
fallocate (int fd, int mode, off_t offset, off_t size)
{
    typedef int (fn_t) (int, int, off_t, off_t);
    S_REAL (fn_t, "fallocate");
    S_REFUSE (s_refused (fd, offset, (size_t) size));
    return real (fd, mode, offset, size);
}

//  posix_fallocate returns the error instead of setting errno
int
posix_fallocate (int fd, off_t offset, off_t size)
{
    typedef int (fn_t) (int, off_t, off_t);
    S_REAL (fn_t, "posix_fallocate");
    return s_refused (fd, offset, (size_t) size)? ENOSPC: real (fd, offset, size);
}

int
posix_fallocate64 (int fd, off64_t offset, off64_t size)
{
    typedef int (fn_t) (int, off64_t, off64_t);
    S_REAL (fn_t, "posix_fallocate64");
    return s_refused (fd, (off_t) offset, (size_t) size)? ENOSPC: real (fd, offset, size);
}

//  A truncate of fd to size: refused when it grows the file past the room
//  left (it takes room as a write of its new bytes would, in either mode),
//  else done, and the room it frees noted
static int
s_truncate (int fd, off_t size, int (*real) (int, off_t))
{
    struct stat info;
    if (fstat (fd, &info) == 0 && size > info.st_size) {
        S_REFUSE (s_refused (fd, info.st_size, (size_t) (size - info.st_size)));
    }
    else
        s_shrinks (fd, size);
    return real (fd, size);
}

int
ftruncate (int fd, off_t size)
{
    typedef int (fn_t) (int, off_t);
    S_REAL (fn_t, "ftruncate");
    return s_truncate (fd, size, real);
}

int
ftruncate64 (int fd, off64_t size)
{
    typedef int (fn_t) (int, off_t);
    S_REAL (fn_t, "ftruncate64");
    return s_truncate (fd, (off_t) size, real);
}

int
truncate (const char *path, off_t size)
{
    typedef int (fn_t) (int, off_t);
    S_REAL (fn_t, "ftruncate");
    int fd = open (path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = s_truncate (fd, size, real);
    int saved = errno;
    close (fd);
    errno = saved;
    return rc;
}

//  Room freed by removing a file (its last link) is noted once it is gone
int
unlink (const char *path)
{
    typedef int (fn_t) (const char *);
    S_REAL (fn_t, "unlink");
    int saved = errno;
    long long size = 0;
    struct stat info;
    s_state_t state = s_state ();
    int fd = state != S_ROOM && state != S_SYNC_EIO? open (path, O_RDONLY | O_CLOEXEC | O_NONBLOCK): -1;
    if (fd >= 0 && s_ours (fd, &info) && info.st_nlink == 1)
        size = (long long) info.st_size;
    if (fd >= 0)
        close (fd);
    errno = saved;
    int rc = real (path);
    if (rc == 0 && size)
        atomic_fetch_add (&s_freed, size);
    return rc;
}

//  A flush of a file under the directory fails EIO in mode "eio", as a
//  failing disk fails it: what was written stays in the page cache
static int
s_sync_fails (int fd)
{
    int saved = errno;
    struct stat info;
    int fails = s_state () == S_SYNC_EIO && s_ours (fd, &info);
    errno = saved;
    return fails;
}

//  A failed flush, as the kernel fails one
static int
s_eio (void)
{
    errno = EIO;
    return -1;
}

int
fsync (int fd)
{
    typedef int (fn_t) (int);
    S_REAL (fn_t, "fsync");
    return s_sync_fails (fd)? s_eio (): real (fd);
}

int
fdatasync (int fd)
{
    typedef int (fn_t) (int);
    S_REAL (fn_t, "fdatasync");
    return s_sync_fails (fd)? s_eio (): real (fd);
}
