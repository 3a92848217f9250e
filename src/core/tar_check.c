/* tar_check: checks a tar stream that is extracted somewhere else (a
 * fork's workspace, by the fork's own tar) before a byte of it is passed
 * on (see tar.h). It writes nothing: it refuses, at the first entry that
 * breaks a rule, the whole rest of the stream. The rules are extraction's
 * (tar_normalize_name, tar_strip: tar_internal.h) and what makes a copy
 * write only where its names say: no entry goes through a symlink or a
 * non-directory of the archive, a name comes once, a hard link names a
 * regular file already copied, no device or fifo, everything under strip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tar.h"
#include "tar_internal.h"

struct tar_check {
  char *strip;         /* normalised; every entry is strip or under it */
  tar_reader *reader;
  tar_name_map seen;   /* 'd' directory, 'f' regular file, 'o' anything else */
  long long bytes, max_bytes;
  size_t entries, max_entries;
  char err[1200];
};

static int refuse(tar_check *c, const char *name, const char *why) {
  snprintf(c->err, sizeof c->err, "%s: %s", name, why);
  return -1;
}

/* Why rel (normalised, stripped) cannot be written where its name says, or NULL. */
static const char *path_problem(const tar_check *c, const char *rel) {
  if (tar_map_get(&c->seen, rel)) return "it comes twice in the archive";
  buf parent = BUF_INIT;
  const char *why = NULL;
  for (const char *slash = strchr(rel, '/'); slash && !why; slash = strchr(slash + 1, '/')) {
    buf_clear(&parent);
    if (buf_append(&parent, rel, (size_t)(slash - rel)) != 0 || buf_append(&parent, "", 0) != 0) {
      why = "out of memory";
      break;
    }
    char kind = tar_map_get(&c->seen, parent.data);
    if (kind == 'f' || kind == 'o') why = "path goes through a symlink or a non-directory";
  }
  buf_free(&parent);
  return why;
}

static const char *link_problem(const tar_check *c, const tar_entry_info *e) {
  buf target = BUF_INIT;
  const char *why = tar_normalize_name(e->linkname, &target) ? "hard link target leaves the destination" : NULL;
  if (!why) {
    tar_strip(c->strip, &target, '0');
    if (tar_map_get(&c->seen, target.data) != 'f') why = "hard link to unknown target";
  }
  buf_free(&target);
  return why;
}

static const char *under_strip(const tar_check *c, const char *name, char type) {
  if (!c->strip) return NULL;
  size_t len = strlen(c->strip);
  if (strcmp(name, c->strip) == 0) return type == '5' ? NULL : "the copied folder is not a directory";
  if (strncmp(name, c->strip, len) == 0 && name[len] == '/') return NULL;
  return "outside the copied folder";
}

/* What kind of entry, or why it is refused. */
static const char *entry_problem(tar_check *c, const tar_entry_info *e, const char *rel) {
  switch (e->type) {
    case '0': case '5': case '2': break;
    case '1': return link_problem(c, e);
    case '3': case '4': case '6': return "device or fifo";
    default: return "unsupported entry type";
  }
  if (e->type == '2' && !*e->linkname) return "empty symlink target";
  return path_problem(c, rel);
}

static int on_entry(void *ctx, const tar_entry_info *e) {
  tar_check *c = ctx;
  if (c->max_entries && ++c->entries > c->max_entries)
    return refuse(c, e->name, "more entries than the limit allows (max_extract_entries)");
  if (c->max_bytes && e->type == '0' && c->bytes + e->size > c->max_bytes)
    return refuse(c, e->name, "larger than what the limit still allows (max_extract)");
  buf rel = BUF_INIT;
  const char *why = tar_normalize_name(e->name, &rel);
  if (!why) why = under_strip(c, rel.data, e->type);
  if (!why) {
    tar_strip(c->strip, &rel, e->type);
    if (*rel.data) why = entry_problem(c, e, rel.data);
  }
  char kind = e->type == '5' ? 'd' : e->type == '0' || e->type == '1' ? 'f' : 'o';
  if (!why && *rel.data && tar_map_put(&c->seen, rel.data, kind) != 0) why = "out of memory";
  buf_free(&rel);
  if (why) return refuse(c, e->name, why);
  if (e->type == '0') c->bytes += e->size;
  return 1; /* its data is only counted: skipped */
}

tar_check *tar_check_new(const char *strip, long long max_bytes, size_t max_entries, char *err, size_t errlen) {
  static const tar_reader_callbacks callbacks = {on_entry, NULL, NULL};
  tar_check *c = calloc(1, sizeof *c);
  buf norm = BUF_INIT;
  const char *why = NULL;
  if (c && strip && (why = tar_normalize_name(strip, &norm)) == NULL && norm.len) c->strip = norm.data, norm.data = NULL;
  buf_free(&norm);
  if (c && !why) c->reader = tar_reader_new(&callbacks, c);
  if (!c || why || !c->reader) {
    if (why) tar_set_error(err, errlen, "bad strip prefix '%s': %s", strip, why);
    else tar_set_error(err, errlen, "out of memory");
    tar_check_free(c);
    return NULL;
  }
  c->max_bytes = max_bytes;
  c->max_entries = max_entries;
  return c;
}

int tar_check_feed(tar_check *c, const char *data, size_t n) {
  if (c->err[0]) return -1;
  return tar_reader_feed(c->reader, data, n);
}

int tar_check_finish(tar_check *c) {
  if (c->err[0]) return -1;
  return tar_reader_finish(c->reader);
}

const char *tar_check_error(const tar_check *c) { return c->err[0] ? c->err : tar_reader_error(c->reader); }
int tar_check_refused(const tar_check *c) { return c->err[0] != 0; }
long long tar_check_bytes(const tar_check *c) { return c->bytes; }
size_t tar_check_entries(const tar_check *c) { return c->seen.count; }

void tar_check_free(tar_check *c) {
  if (!c) return;
  tar_reader_free(c->reader);
  tar_map_free(&c->seen);
  free(c->strip);
  free(c);
}
