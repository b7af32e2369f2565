#define _GNU_SOURCE
#include "CLMDBSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/// What the file holds (its first page): the mutex, then what its holder records of itself.
typedef struct {
    pthread_mutex_t mutex;
    /// `MAGIC` once the mutex is initialized (written last, so a reader sees it only after).
    _Atomic uint64_t magic;
    _Atomic int32_t holder_pid;
    _Atomic uint64_t holder_since;
    _Atomic uint64_t takes;
} shared_page;

/// "wfwriter" and a layout version: a file of another layout is initialized anew.
#define MAGIC 0x7766777269746501ULL
#define PAGE 4096

struct clmdb_writer_lock {
    int fd;
    shared_page *page;
};

static uint64_t monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

/// Holds or lets go of the file's record lock on byte 0, which keeps initializations apart.
static int setup_lock(int fd, short type) {
    struct flock request;
    memset(&request, 0, sizeof request);
    request.l_type = type;
    request.l_whence = SEEK_SET;
    request.l_start = 0;
    request.l_len = 1;
    int rc;
    do rc = fcntl(fd, F_SETLKW, &request); while (rc != 0 && errno == EINTR);
    return rc;
}

clmdb_writer_lock *clmdb_writer_lock_open(const char *path) {
#ifdef __linux__
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return NULL;
    if (setup_lock(fd, F_WRLCK) != 0) goto fail_fd;
    struct stat info;
    if (fstat(fd, &info) != 0) goto fail_locked;
    if (info.st_size < PAGE && ftruncate(fd, PAGE) != 0) goto fail_locked;
    shared_page *page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (page == MAP_FAILED) goto fail_locked;
    if (atomic_load(&page->magic) != MAGIC) {
        pthread_mutexattr_t attributes;
        pthread_mutexattr_init(&attributes);
        pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
        pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
        int rc = pthread_mutex_init(&page->mutex, &attributes);
        pthread_mutexattr_destroy(&attributes);
        if (rc != 0) {
            munmap(page, PAGE);
            errno = rc;
            goto fail_locked;
        }
        atomic_store(&page->holder_pid, 0);
        atomic_store(&page->holder_since, 0);
        atomic_store(&page->takes, 0);
        atomic_store(&page->magic, MAGIC);
    }
    setup_lock(fd, F_UNLCK);
    clmdb_writer_lock *lock = malloc(sizeof *lock);
    if (!lock) {
        munmap(page, PAGE);
        close(fd);
        errno = ENOMEM;
        return NULL;
    }
    lock->fd = fd;
    lock->page = page;
    return lock;
fail_locked: {
        int saved = errno;
        setup_lock(fd, F_UNLCK);
        errno = saved;
    }
fail_fd: {
        int saved = errno;
        close(fd);
        errno = saved;
    }
    return NULL;
#else
    (void)path;
    errno = ENOSYS;
    return NULL;
#endif
}

int clmdb_writer_lock_take(clmdb_writer_lock *lock, const struct timespec *deadline) {
    int rc;
    do rc = pthread_mutex_timedlock(&lock->page->mutex, deadline); while (rc == EINTR);
    // The holder died holding it: its write never committed (LMDB recovers its own lock the
    // same way); the lock is consistent again as soon as this taker says so.
    if (rc == EOWNERDEAD) rc = pthread_mutex_consistent(&lock->page->mutex);
    if (rc != 0) return rc;
    atomic_store(&lock->page->holder_since, monotonic_ns());
    atomic_fetch_add(&lock->page->takes, 1);
    atomic_store(&lock->page->holder_pid, (int32_t)getpid());
    return 0;
}

void clmdb_writer_lock_release(clmdb_writer_lock *lock) {
    atomic_store(&lock->page->holder_pid, 0);
    pthread_mutex_unlock(&lock->page->mutex);
}

void clmdb_writer_lock_holder(clmdb_writer_lock *lock, int32_t *pid, uint64_t *since, uint64_t *takes) {
    *pid = atomic_load(&lock->page->holder_pid);
    *since = atomic_load(&lock->page->holder_since);
    *takes = atomic_load(&lock->page->takes);
}

int32_t clmdb_writer_lock_owner_thread(clmdb_writer_lock *lock) {
#ifdef __linux__
    // glibc keeps a robust mutex's owner in its futex word (the bits below FUTEX_OWNER_DIED and
    // FUTEX_WAITERS), written by the compare-and-swap that takes it.
    int word = __atomic_load_n(&lock->page->mutex.__data.__lock, __ATOMIC_ACQUIRE);
    return (int32_t)(word & 0x3fffffff);
#else
    (void)lock;
    return 0;
#endif
}

void clmdb_writer_lock_close(clmdb_writer_lock *lock) {
    munmap(lock->page, PAGE);
    close(lock->fd);
    free(lock);
}
