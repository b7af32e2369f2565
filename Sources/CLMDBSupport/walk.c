#define _GNU_SOURCE
#include "CLMDBSupport.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <errno.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/// Writes all of `text` to `fd`, retrying after interruptions.
static void say(int fd, const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t written = write(fd, text, left);
        if (written < 0) {
            if (errno == EINTR) continue;
            return;
        }
        text += written;
        left -= (size_t)written;
    }
}

/// Reads a byte of every 512 of `value` and its last: enough to touch every page it lies on.
static unsigned char touch(const MDB_val *value) {
    const volatile unsigned char *bytes = value->mv_data;
    unsigned char sum = 0;
    if (value->mv_size == 0) return 0;
    for (size_t offset = 0; offset < value->mv_size; offset += 512) sum ^= bytes[offset];
    return sum ^ bytes[value->mv_size - 1];
}

/// Formats up to 32 bytes of `key` as hex into `out` (at least 65 bytes).
static void hex(const MDB_val *key, char *out) {
    static const char digits[] = "0123456789abcdef";
    size_t count = key->mv_size < 32 ? key->mv_size : 32;
    const unsigned char *bytes = key->mv_data;
    for (size_t index = 0; index < count; index++) {
        out[2 * index] = digits[bytes[index] >> 4];
        out[2 * index + 1] = digits[bytes[index] & 15];
    }
    out[2 * count] = 0;
}

/// Reads every entry of `dbi` (named `name` in the progress lines); adds them to `entries`.
/// Returns 0, or LMDB's error.
static int walk_database(MDB_txn *txn, MDB_dbi dbi, const char *name, int fd, unsigned long *entries, unsigned char *sink) {
    char line[256];
    snprintf(line, sizeof line, "db %s\n", name);
    say(fd, line);
    MDB_cursor *cursor;
    int rc = mdb_cursor_open(txn, dbi, &cursor);
    if (rc != 0) return rc;
    MDB_val key, value;
    unsigned long count = 0;
    for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
        *sink ^= touch(&key) ^ touch(&value);
        count++;
        if (count % 1024 == 0) {
            char keyhex[65];
            hex(&key, keyhex);
            snprintf(line, sizeof line, "at %s %lu %s\n", name, count, keyhex);
            say(fd, line);
        }
    }
    mdb_cursor_close(cursor);
    *entries += count;
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/// The child's walk: 0, or LMDB's error (reported on `fd`).
static int walk(const char *path, int fd) {
    MDB_env *env;
    MDB_txn *txn = NULL;
    unsigned long entries = 0;
    unsigned char sink = 0;
    char **names = NULL;
    size_t count = 0, capacity = 0;
    int rc = mdb_env_create(&env);
    if (rc == 0) rc = mdb_env_set_maxdbs(env, 256);
    if (rc == 0) rc = mdb_env_open(env, path, MDB_RDONLY | MDB_NOTLS, 0644);
    if (rc == 0) rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);
    // The free list (database 0), then the main database, whose keys name the others.
    if (rc == 0) rc = walk_database(txn, 0, "(free pages)", fd, &entries, &sink);
    if (rc == 0) {
        MDB_dbi main;
        MDB_cursor *cursor;
        MDB_val key, value;
        rc = mdb_dbi_open(txn, NULL, 0, &main);
        if (rc == 0) rc = walk_database(txn, main, "(main)", fd, &entries, &sink);
        if (rc == 0) rc = mdb_cursor_open(txn, main, &cursor);
        if (rc == 0) {
            for (rc = mdb_cursor_get(cursor, &key, &value, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cursor, &key, &value, MDB_NEXT)) {
                if (count == capacity) {
                    capacity = capacity ? capacity * 2 : 16;
                    names = realloc(names, capacity * sizeof *names);
                    if (!names) return ENOMEM;
                }
                names[count] = malloc(key.mv_size + 1);
                if (!names[count]) return ENOMEM;
                memcpy(names[count], key.mv_data, key.mv_size);
                names[count][key.mv_size] = 0;
                count++;
            }
            mdb_cursor_close(cursor);
            if (rc == MDB_NOTFOUND) rc = 0;
        }
    }
    for (size_t index = 0; rc == 0 && index < count; index++) {
        MDB_dbi dbi;
        rc = mdb_dbi_open(txn, names[index], 0, &dbi);
        // A key of the main database that names no database is a record, not a database.
        if (rc == MDB_INCOMPATIBLE) {
            rc = 0;
            continue;
        }
        if (rc == 0) rc = walk_database(txn, dbi, names[index], fd, &entries, &sink);
    }
    char line[320];
    if (rc == 0) {
        snprintf(line, sizeof line, "done %lu %u\n", entries, (unsigned)sink);
    } else {
        snprintf(line, sizeof line, "error %d %s\n", rc, mdb_strerror(rc));
    }
    say(fd, line);
    return rc;
}

pid_t lmdb_walk_in_child(const char *path, int progress_fd, int close_fd) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    // The child: a crash ends it at once, by its signal, whatever handlers the parent installed
    // (a backtracer's or a sanitizer's would report it, or run another program).
    int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE, SIGTRAP};
    for (size_t index = 0; index < sizeof fatal / sizeof fatal[0]; index++) signal(fatal[index], SIG_DFL);
    if (close_fd >= 0) close(close_fd);
    walk(path, progress_fd);
    _exit(0);
}

int lmdb_walk_file_identity(const char *path, char *out, size_t size) {
    struct statx info;
    if (statx(AT_FDCWD, path, 0, STATX_INO | STATX_BTIME, &info) != 0) return -1;
    if (info.stx_mask & STATX_BTIME) {
        snprintf(out, size, "%u:%u:%llu:%lld.%09u", info.stx_dev_major, info.stx_dev_minor, (unsigned long long)info.stx_ino,
                 (long long)info.stx_btime.tv_sec, info.stx_btime.tv_nsec);
    } else {
        snprintf(out, size, "%u:%u:%llu", info.stx_dev_major, info.stx_dev_minor, (unsigned long long)info.stx_ino);
    }
    return 0;
}
