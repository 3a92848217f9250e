/* capped: one output stream kept within a byte cap, whatever is written to
 * it: the first and last halves of the cap are kept, the middle is counted
 * and replaced by a marker that says how many bytes were left out, so host
 * memory stays bounded whatever a command or a peer prints. Used by the
 * exec stream (docker_wire.h), the supervisor channel and the egress relay's
 * diagnostics. Pure C. */
#ifndef LUAGENT_CAPPED_H
#define LUAGENT_CAPPED_H

#include <stddef.h>

#include "buf.h"

typedef struct capped_output {
  size_t head_cap, tail_cap;
  buf head;
  char *tail;          /* ring buffer of tail_cap bytes */
  size_t tail_len;     /* bytes in the ring */
  size_t tail_start;   /* index of the oldest byte */
  unsigned long long total;
} capped_output;

void capped_init(capped_output *c, size_t cap);
int capped_write(capped_output *c, const char *data, size_t n);
/* Appends the kept output to out: everything when it fitted, else head +
 * a marker naming the omitted byte count + tail. Returns 1 if truncated. */
int capped_result(const capped_output *c, buf *out);
void capped_free(capped_output *c);

#endif
