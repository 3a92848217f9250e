/* fs: host-side file operations. Pure C; every function returns 0 on success
 * or -1 with errno set (and, where it takes one, a reason in `why`). */
#ifndef LUAGENT_FS_H
#define LUAGENT_FS_H

#include <stddef.h>
#include <sys/stat.h>

#include "buf.h"

int fs_read_file(const char *path, buf *out, char *why, size_t whylen);
/* Writes atomically: a temporary file beside `path`, then rename(2), so a
 * reader never sees a half-written file. */
int fs_write_atomic(const char *path, const void *data, size_t len, int mode);
int fs_append(const char *path, const void *data, size_t len);
/* Writes all of data to fd, retrying on EINTR and short writes. 0, or -1 with errno. */
int fs_write_all(int fd, const void *data, size_t len);
/* mkdir -p: creates missing parents; an existing directory is fine. */
int fs_mkdir_p(const char *path, int mode);
/* rm -rf without following symlinks; a missing path is fine. */
int fs_remove_tree(const char *path);
/* Creates a fresh private directory under $TMPDIR (or /tmp); writes its path. */
int fs_temp_dir(const char *prefix, char *out, size_t outlen);

/* Walks `root` depth-first in name order, calling visit(rel, st, ctx) for
 * every entry below it (not root itself); rel is relative to root. Symlinks
 * are reported, never followed. A non-zero return from visit stops the walk
 * and is returned. */
typedef int (*fs_visit_fn)(const char *rel, const struct stat *st, void *ctx);
int fs_walk(const char *root, fs_visit_fn visit, void *ctx);

/* Sorted entry names of a directory (without . and ..), NULL-terminated;
 * free with fs_free_names. */
char **fs_list(const char *dir);
void fs_free_names(char **names);

const char *fs_type_name(mode_t mode);

#endif
