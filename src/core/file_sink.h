/* file_sink: a host file written from a stream that may fail half way (an
 * archive from a container, a snapshot): the bytes go to a temporary file
 * beside the target, at most `limit` of them, and only a commit renames it
 * into place, so a broken or refused stream never replaces a good file with
 * half of one and leaves nothing behind. Pure C. */
#ifndef LUAGENT_FILE_SINK_H
#define LUAGENT_FILE_SINK_H

#include <stddef.h>

typedef struct file_sink {
  int fd;                 /* the temporary file, -1 when none */
  long long written;      /* bytes written so far */
  long long limit;        /* the most it may write (0: no limit) */
  char *path, *temp;      /* the target, and where it is written first */
  char error[300];        /* why the last call failed */
} file_sink;

/* Creates the temporary file beside path. 0, or -1 with the reason in
 * s->error (s is then empty: file_sink_discard is still safe). */
int file_sink_open(file_sink *s, const char *path, long long limit);
/* Appends n bytes. 0, or -1 (over the limit, or a write error) with the
 * reason in s->error; the caller stops the stream then. */
int file_sink_write(file_sink *s, const char *data, size_t n);
/* Closes the file and renames it into place. 0, or -1 with the reason. */
int file_sink_commit(file_sink *s);
/* Closes and removes the temporary file (if any) and frees what s holds.
 * Idempotent; also after a commit. */
void file_sink_discard(file_sink *s);

#endif
