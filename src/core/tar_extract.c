/* tar_extract: writes a tar stream onto the host, safely (see tar.h). It
 * is a security boundary: nothing is ever written outside the destination,
 * and no symlink is ever followed while extracting. Hostile entries are
 * refused (recorded with a reason) and the rest of the archive still
 * extracts. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "fs.h"
#include "tar.h"
#include "tar_internal.h"

typedef struct extracted_file {
  char *path;
  long long size;
} extracted_file;

typedef struct refusal {
  char *name;
  const char *reason; /* a string literal */
} refusal;

struct tar_extract {
  int dest;            /* dirfd of the destination: every path starts here */
  char *strip;         /* normalised strip prefix, or NULL */
  tar_reader *reader;
  int fd;              /* the file being written, or -1 */
  char *cur_path;      /* its path relative to dest */
  long long cur_written, cur_mtime;
  tar_name_map seen;       /* names extracted: 'f' regular file, 'o' anything else */
  extracted_file *files;
  size_t nfiles, files_cap;
  refusal *refused;
  size_t nrefused, refused_cap;
  long long bytes;
  long long max_bytes;  /* 0: no limit */
  size_t max_entries;   /* 0: no limit */
  size_t entries;
  char err[1024];
};

/* Outcomes of one extraction step; file descriptors are >= 0. */
enum { STEP_OK = 0, STEP_REFUSED = -1, STEP_FAILED = -2 };

/* on_entry's answer for a step that did not succeed. */
static int step_answer(int step) { return step == STEP_FAILED ? -1 : 1; }

static int extract_fail(tar_extract *x, const char *what, const char *path) {
  snprintf(x->err, sizeof x->err, "%s '%s': %s", what, path, strerror(errno));
  return STEP_FAILED;
}

static int out_of_memory(tar_extract *x) {
  snprintf(x->err, sizeof x->err, "out of memory");
  return STEP_FAILED;
}

static int record_file(tar_extract *x, const char *rel, long long size) {
  char *copy = strdup(rel);
  extracted_file *files = tar_grow_array(x->files, &x->files_cap, x->nfiles, sizeof *files);
  if (files) x->files = files;
  if (!copy || !files || tar_map_put(&x->seen, rel, 'f') != 0) {
    free(copy);
    return out_of_memory(x);
  }
  x->files[x->nfiles++] = (extracted_file){copy, size};
  return STEP_OK;
}

/* Records a refused entry; on_entry then skips its data. */
static int refuse(tar_extract *x, const char *name, const char *reason) {
  char *copy = strdup(name);
  refusal *refused = tar_grow_array(x->refused, &x->refused_cap, x->nrefused, sizeof *refused);
  if (refused) x->refused = refused;
  if (!copy || !refused) {
    free(copy);
    out_of_memory(x);
    return -1;
  }
  x->refused[x->nrefused++] = (refusal){copy, reason};
  return 1;
}

/* Removes the strip prefix (see tar_strip). */
static void apply_strip(const tar_extract *x, buf *rel, char type) { tar_strip(x->strip, rel, type); }

static const char *leaf_of(const char *rel) {
  const char *slash = strrchr(rel, '/');
  return slash ? slash + 1 : rel;
}

/* Explains why openat(O_DIRECTORY|O_NOFOLLOW) refused comp. */
static int explain_not_dir(tar_extract *x, int dirfd, const char *comp, const char *rel,
                           const char **reason) {
  int saved = errno;
  struct stat st;
  if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
    *reason = S_ISLNK(st.st_mode) ? "path goes through a symlink" : "path goes through a non-directory";
    return STEP_REFUSED;
  }
  errno = saved;
  return extract_fail(x, "cannot open a directory on the way to", rel);
}

/* Opens (creating it when `create`) the directory comp inside dirfd,
 * refusing symlinks. */
static int enter_dir(tar_extract *x, int dirfd, const char *comp, int create, const char *rel,
                     const char **reason) {
  if (create && mkdirat(dirfd, comp, 0755) != 0 && errno != EEXIST)
    return extract_fail(x, "cannot create a directory on the way to", rel);
  int fd = openat(dirfd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 ? fd : explain_not_dir(x, dirfd, comp, rel, reason);
}

/* Opens the directory holding rel's last component, walking from dest one
 * component at a time and never following a symlink. Returns a dirfd, or
 * STEP_REFUSED (*reason set) or STEP_FAILED (x->err set). */
static int open_parent(tar_extract *x, const char *rel, int create, const char **reason) {
  char comp[NAME_MAX + 1];
  if (strlen(leaf_of(rel)) > NAME_MAX) return *reason = "name too long", STEP_REFUSED;
  int fd = fcntl(x->dest, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return extract_fail(x, "cannot open the destination for", rel);
  for (const char *p = rel, *slash; (slash = strchr(p, '/')) != NULL; p = slash + 1) {
    size_t len = (size_t)(slash - p);
    if (len > NAME_MAX) {
      close(fd);
      return *reason = "name too long", STEP_REFUSED;
    }
    memcpy(comp, p, len);
    comp[len] = '\0';
    int next = enter_dir(x, fd, comp, create, rel, reason);
    close(fd);
    if (next < 0) return next;
    fd = next;
  }
  return fd;
}

/* Makes room for a new non-directory at leaf by removing whatever
 * non-directory is there (so nothing is ever written through it). */
static int clear_leaf(tar_extract *x, int dirfd, const char *rel, const char **reason) {
  struct stat st;
  const char *leaf = leaf_of(rel);
  if (fstatat(dirfd, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? STEP_OK : extract_fail(x, "cannot inspect", rel);
  if (S_ISDIR(st.st_mode)) return *reason = "a directory is in the way", STEP_REFUSED;
  if (unlinkat(dirfd, leaf, 0) != 0) return extract_fail(x, "cannot replace", rel);
  return STEP_OK;
}

/* Opens rel's parent and clears rel's place for a new non-directory.
 * Returns the parent's dirfd or a failed step. */
static int prepare_leaf(tar_extract *x, const char *rel, const char **reason) {
  int dirfd = open_parent(x, rel, 1, reason);
  if (dirfd < 0) return dirfd;
  int step = clear_leaf(x, dirfd, rel, reason);
  if (step == STEP_OK) return dirfd;
  close(dirfd);
  return step;
}

static int create_file(tar_extract *x, const char *rel, const tar_entry_info *e, const char **reason) {
  int dirfd = prepare_leaf(x, rel, reason);
  if (dirfd < 0) return step_answer(dirfd);
  x->fd = openat(dirfd, leaf_of(rel), O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                 (mode_t)(e->mode & 0777));
  int step = x->fd < 0 ? extract_fail(x, "cannot create", rel) : STEP_OK;
  close(dirfd);
  if (step != STEP_OK) return step_answer(step);
  x->cur_path = strdup(rel);
  x->cur_written = 0;
  x->cur_mtime = e->mtime;
  if (!x->cur_path || tar_map_put(&x->seen, rel, 'o') != 0) return step_answer(out_of_memory(x));
  return 0; /* deliver the data */
}

/* mkdirat said EEXIST: fine for a directory, refused for anything else. */
static int check_existing_dir(tar_extract *x, int dirfd, const char *rel, const char **reason) {
  struct stat st;
  if (fstatat(dirfd, leaf_of(rel), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return extract_fail(x, "cannot inspect", rel);
  if (S_ISDIR(st.st_mode)) return STEP_OK;
  *reason = S_ISLNK(st.st_mode) ? "path goes through a symlink" : "a non-directory is in the way";
  return STEP_REFUSED;
}

/* Directories are made owner-writable so later entries can go inside. */
static int create_dir(tar_extract *x, const char *rel, unsigned mode, const char **reason) {
  int dirfd = open_parent(x, rel, 1, reason);
  if (dirfd < 0) return step_answer(dirfd);
  int step = STEP_OK;
  if (mkdirat(dirfd, leaf_of(rel), (mode_t)((mode & 0777) | 0700)) != 0) {
    step = errno == EEXIST ? check_existing_dir(x, dirfd, rel, reason)
                           : extract_fail(x, "cannot create", rel);
  }
  close(dirfd);
  if (step == STEP_OK && tar_map_put(&x->seen, rel, 'o') != 0) step = out_of_memory(x);
  return step_answer(step);
}

/* Why a symlink at rel pointing to target is refused, or NULL. The target
 * must be relative, may only climb ("..") before it names anything (so it
 * never climbs out of another symlink), and must stay inside dest. */
static const char *symlink_problem(const char *rel, const char *target) {
  if (!*target) return "empty symlink target";
  if (target[0] == '/') return "symlink target leaves the destination";
  size_t depth = 0; /* directories between dest and the symlink */
  for (const char *p = rel; *p; p++) depth += *p == '/';
  int named = 0;
  for (const char *p = target; *p;) {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.') {
      if (named) return "symlink target has '..' after a name";
      if (depth == 0) return "symlink target leaves the destination";
      depth--;
    } else if (len > 0 && !(len == 1 && p[0] == '.')) {
      named = 1;
    }
    p += len;
    if (*p == '/') p++;
  }
  return NULL;
}

static int create_symlink(tar_extract *x, const char *rel, const char *target, const char **reason) {
  if ((*reason = symlink_problem(rel, target)) != NULL) return 1;
  int dirfd = prepare_leaf(x, rel, reason);
  if (dirfd < 0) return step_answer(dirfd);
  int step = STEP_OK;
  if (symlinkat(target, dirfd, leaf_of(rel)) != 0) step = extract_fail(x, "cannot create symlink", rel);
  close(dirfd);
  if (step == STEP_OK && tar_map_put(&x->seen, rel, 'o') != 0) step = out_of_memory(x);
  return step_answer(step);
}

/* Opens the directory of a hard link's target, which must be a regular file
 * this archive extracted; fills st. */
static int open_link_target(tar_extract *x, const char *target, struct stat *st, const char **reason) {
  if (tar_map_get(&x->seen, target) != 'f') return *reason = "hard link to unknown target", STEP_REFUSED;
  int dirfd = open_parent(x, target, 0, reason);
  if (dirfd < 0) return dirfd;
  if (fstatat(dirfd, leaf_of(target), st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st->st_mode))
    return dirfd;
  close(dirfd);
  return *reason = "hard link to unknown target", STEP_REFUSED;
}

static int link_to(tar_extract *x, const char *rel, const char *target, const char **reason) {
  struct stat st;
  int from = open_link_target(x, target, &st, reason);
  if (from < 0) return step_answer(from);
  int to = prepare_leaf(x, rel, reason);
  int step = to;
  if (to >= 0) {
    step = STEP_OK;
    if (linkat(from, leaf_of(target), to, leaf_of(rel), 0) != 0) step = extract_fail(x, "cannot link", rel);
    close(to);
  }
  close(from);
  if (step == STEP_OK) step = record_file(x, rel, (long long)st.st_size);
  return step_answer(step);
}

static int create_hardlink(tar_extract *x, const char *rel, const char *linkname, const char **reason) {
  buf target = BUF_INIT;
  int answer = 1;
  if (tar_normalize_name(linkname, &target) != NULL) {
    *reason = "hard link target leaves the destination";
  } else {
    apply_strip(x, &target, '0');
    if (strcmp(target.data, rel) != 0) answer = link_to(x, rel, target.data, reason);
  }
  buf_free(&target);
  return answer;
}

/* Extracts one entry at rel. Returns on_entry's answer: 0 deliver data,
 * 1 skip (done, or refused with *reason set), -1 fatal. */
static int extract_entry(tar_extract *x, const tar_entry_info *e, const char *rel, const char **reason) {
  if (!*rel) return 1; /* the destination itself */
  switch (e->type) {
    case '0': return create_file(x, rel, e, reason);
    case '5': return create_dir(x, rel, e->mode, reason);
    case '2': return create_symlink(x, rel, e->linkname, reason);
    case '1': return create_hardlink(x, rel, e->linkname, reason);
    case '3': case '4': case '6': *reason = "device or fifo"; return 1;
    default: *reason = "unsupported entry type"; return 1;
  }
}

/* A sandbox can make a terabyte sparse file for free: the sizes the headers
 * declare are checked against the limits before anything is written. */
static const char *over_limit(tar_extract *x, const tar_entry_info *e) {
  if (x->max_entries && ++x->entries > x->max_entries) return "more entries than the extraction limit allows";
  if (x->max_bytes && e->type == '0' && x->bytes + e->size > x->max_bytes)
    return "larger than what the extraction limit still allows";
  return NULL;
}

static int on_entry(void *ctx, const tar_entry_info *e) {
  tar_extract *x = ctx;
  buf rel = BUF_INIT;
  const char *reason = over_limit(x, e);
  if (!reason) reason = tar_normalize_name(e->name, &rel);
  int answer = 1;
  if (!reason) {
    apply_strip(x, &rel, e->type);
    answer = extract_entry(x, e, rel.data, &reason);
  }
  if (reason && answer >= 0) answer = refuse(x, e->name, reason);
  buf_free(&rel);
  return answer;
}

static int on_data(void *ctx, const char *data, size_t n) {
  tar_extract *x = ctx;
  if (x->fd < 0) return 0;
  if (fs_write_all(x->fd, data, n) != 0) return extract_fail(x, "cannot write", x->cur_path);
  x->cur_written += (long long)n;
  x->bytes += (long long)n;
  if (x->max_bytes && x->bytes > x->max_bytes) return extract_fail(x, "over the extraction limit:", x->cur_path);
  return 0;
}

void tar_extract_set_limits(tar_extract *x, long long max_bytes, size_t max_entries) {
  x->max_bytes = max_bytes;
  x->max_entries = max_entries;
}

static void drop_current(tar_extract *x) {
  if (x->fd >= 0) close(x->fd);
  x->fd = -1;
  free(x->cur_path);
  x->cur_path = NULL;
}

/* A regular file is complete: set its mtime, close it, record it. */
static int on_entry_end(void *ctx) {
  tar_extract *x = ctx;
  if (x->fd < 0) return 0;
  struct timespec times[2] = {{0, UTIME_OMIT}, {(time_t)x->cur_mtime, 0}};
  futimens(x->fd, times); /* best effort: the data is what matters */
  int rc = close(x->fd);
  x->fd = -1;
  int step = rc == 0 ? record_file(x, x->cur_path, x->cur_written)
                     : extract_fail(x, "cannot write", x->cur_path);
  drop_current(x);
  return step == STEP_OK ? 0 : -1;
}

/* The strip prefix in normal form, or NULL for none. */
static int set_strip(tar_extract *x, const char *strip, char *err, size_t errlen) {
  buf norm = BUF_INIT;
  const char *why = strip ? tar_normalize_name(strip, &norm) : NULL;
  int rc = 0;
  if (why) rc = tar_set_error(err, errlen, "bad strip prefix '%s': %s", strip, why);
  if (!why && norm.len > 0) x->strip = norm.data, norm.data = NULL;
  buf_free(&norm);
  return rc;
}

tar_extract *tar_extract_new(const char *dest_dir, const char *strip, char *err, size_t errlen) {
  static const tar_reader_callbacks callbacks = {on_entry, on_data, on_entry_end};
  tar_extract *x = calloc(1, sizeof *x);
  if (!x) {
    tar_set_error(err, errlen, "out of memory");
    return NULL;
  }
  x->fd = -1;
  x->dest = -1;
  int rc = set_strip(x, strip, err, errlen);
  if (rc == 0 && fs_mkdir_p(dest_dir, 0755) != 0)
    rc = tar_set_error(err, errlen, "cannot create destination '%s': %s", dest_dir, strerror(errno));
  if (rc == 0 && (x->dest = open(dest_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
    rc = tar_set_error(err, errlen, "cannot open destination '%s': %s", dest_dir, strerror(errno));
  if (rc == 0 && !(x->reader = tar_reader_new(&callbacks, x))) rc = tar_set_error(err, errlen, "out of memory");
  if (rc != 0) {
    tar_extract_free(x);
    return NULL;
  }
  return x;
}

int tar_extract_feed(tar_extract *x, const char *data, size_t n) {
  if (x->err[0]) return -1;
  return tar_reader_feed(x->reader, data, n);
}

int tar_extract_finish(tar_extract *x) {
  if (x->err[0]) return -1;
  int rc = tar_reader_finish(x->reader);
  drop_current(x); /* a truncated file stays as far as it got */
  return rc;
}

const char *tar_extract_error(const tar_extract *x) {
  return x->err[0] ? x->err : tar_reader_error(x->reader);
}

size_t tar_extract_file_count(const tar_extract *x) { return x->nfiles; }
const char *tar_extract_file_path(const tar_extract *x, size_t i) {
  return i < x->nfiles ? x->files[i].path : NULL;
}
long long tar_extract_file_size(const tar_extract *x, size_t i) {
  return i < x->nfiles ? x->files[i].size : -1;
}
size_t tar_extract_refused_count(const tar_extract *x) { return x->nrefused; }
const char *tar_extract_refused_name(const tar_extract *x, size_t i) {
  return i < x->nrefused ? x->refused[i].name : NULL;
}
const char *tar_extract_refused_reason(const tar_extract *x, size_t i) {
  return i < x->nrefused ? x->refused[i].reason : NULL;
}
long long tar_extract_bytes(const tar_extract *x) { return x->bytes; }

void tar_extract_free(tar_extract *x) {
  if (!x) return;
  drop_current(x);
  if (x->dest >= 0) close(x->dest);
  tar_reader_free(x->reader);
  for (size_t i = 0; i < x->nfiles; i++) free(x->files[i].path);
  for (size_t i = 0; i < x->nrefused; i++) free(x->refused[i].name);
  free(x->files);
  free(x->refused);
  tar_map_free(&x->seen);
  free(x->strip);
  free(x);
}
