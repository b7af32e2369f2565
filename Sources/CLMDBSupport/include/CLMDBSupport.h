#ifndef CLMDB_SUPPORT_H
#define CLMDB_SUPPORT_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/// The store's writer lock, shared by every process that writes the store: a robust,
/// process-shared mutex in a file of the store's directory (`writer.lock`), mapped by each, taken
/// with a deadline. Robust: when its holder dies, the next taker gets it (and the holder's write,
/// never committed, is gone with it). The holder records its pid, the time it took the lock and a
/// count of takes in the same page, for whoever gives up waiting.
typedef struct clmdb_writer_lock clmdb_writer_lock;

/// Opens (creating and initializing once, under a record lock of the file) the lock in the file
/// at `path`. Returns NULL with errno set when it cannot (a read-only directory; not Linux).
clmdb_writer_lock *clmdb_writer_lock_open(const char *path);

/// Takes the lock, waiting until `deadline` (CLOCK_REALTIME) at the latest. Returns 0 when taken
/// (also from a holder that died), ETIMEDOUT when the deadline passed, or another error.
int clmdb_writer_lock_take(clmdb_writer_lock *lock, const struct timespec *deadline);

/// Lets go of the lock (taken by the calling thread).
void clmdb_writer_lock_release(clmdb_writer_lock *lock);

/// The holder as it recorded itself: its pid (0 when free), when it took the lock
/// (CLOCK_MONOTONIC nanoseconds; comparable within one boot) and how many takes there were so far.
void clmdb_writer_lock_holder(clmdb_writer_lock *lock, int32_t *pid, uint64_t *since, uint64_t *takes);

/// The thread that holds the lock now, as the mutex itself records it (a robust mutex's lock word
/// holds its owner's thread id, set in the same atomic step that takes it), or 0 when it is free.
int32_t clmdb_writer_lock_owner_thread(clmdb_writer_lock *lock);

/// Unmaps the lock and closes its file.
void clmdb_writer_lock_close(clmdb_writer_lock *lock);

/// Forks a child process that opens the LMDB store in the directory `path` read-only and reads
/// every entry of every database (the free list, the main database and each named one), touching
/// every page of every key and value, writing its progress to `progress_fd` as lines:
/// `db NAME`, `at NAME COUNT KEYHEX` every 1,024 entries, then `done ENTRIES`, or `error CODE
/// MESSAGE` when LMDB returns an error. The child closes `close_fd` first and exits 0 when the
/// walk ended (done or error); a damaged page that makes liblmdb read outside the map or fail an
/// assertion ends it by a signal instead, which its parent sees. Only C runs in the child: no
/// lock another thread of the parent held at the fork is taken there, except malloc's, which glibc
/// makes safe across fork. Returns the child's pid, or -1 with errno set.
pid_t lmdb_walk_in_child(const char *path, int progress_fd, int close_fd);

/// Writes the identity of the file at `path` into `out` (`size` bytes, at least 96): its device and
/// inode, and its birth time where the file system keeps one (so that a file written anew in the
/// place of another, which may get its inode back, is still another). Returns 0, or -1 with errno.
int lmdb_walk_file_identity(const char *path, char *out, size_t size);

#endif
