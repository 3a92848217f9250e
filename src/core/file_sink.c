/* file_sink: a temporary file renamed into place on commit (see file_sink.h). */
#include "file_sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"

int file_sink_open(file_sink *s, const char *path, long long limit) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->limit = limit;
  s->path = strdup(path);
  s->temp = malloc(strlen(path) + 16);
  if (!s->path || !s->temp) {
    snprintf(s->error, sizeof s->error, "out of memory");
    file_sink_discard(s);
    return -1;
  }
  sprintf(s->temp, "%s.tmp-XXXXXX", path);
  s->fd = mkstemp(s->temp);
  if (s->fd < 0) {
    snprintf(s->error, sizeof s->error, "cannot create %s: %s", path, strerror(errno));
    free(s->temp);
    s->temp = NULL;
    file_sink_discard(s);
    return -1;
  }
  return 0;
}

int file_sink_write(file_sink *s, const char *data, size_t n) {
  if (s->fd < 0) return -1;
  if (s->limit && s->written + (long long)n > s->limit) {
    snprintf(s->error, sizeof s->error, "the archive is larger than the limit of %lld bytes", s->limit);
    return -1;
  }
  if (fs_write_all(s->fd, data, n) != 0) {
    snprintf(s->error, sizeof s->error, "cannot write %s: %s", s->path, strerror(errno));
    return -1;
  }
  s->written += (long long)n;
  return 0;
}

int file_sink_commit(file_sink *s) {
  if (s->fd < 0) return -1;
  int rc = close(s->fd);
  s->fd = -1;
  if (rc != 0 || rename(s->temp, s->path) != 0) {
    snprintf(s->error, sizeof s->error, "cannot write the archive %s: %s", s->path, strerror(errno));
    return -1;
  }
  free(s->temp);
  s->temp = NULL; /* renamed: nothing to discard */
  return 0;
}

void file_sink_discard(file_sink *s) {
  if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  if (s->temp) unlink(s->temp);
  free(s->temp);
  free(s->path);
  s->temp = s->path = NULL;
}
