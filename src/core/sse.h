/* sse: an incremental parser for server-sent events (the WHATWG
 * event-stream format). Bytes may arrive cut anywhere — inside a line, between
 * \r and \n, inside a UTF-8 sequence — and parse to the same events as the
 * whole stream. Pure C. */
#ifndef LUAGENT_SSE_H
#define LUAGENT_SSE_H

#include <stddef.h>

#include "buf.h"

typedef struct sse_event {
  const char *event; /* "message" when the stream named none */
  size_t event_len;
  const char *data;  /* data lines joined with \n */
  size_t data_len;
  const char *id;    /* last event id seen so far (may be empty) */
  size_t id_len;
  long retry;        /* last retry: value in ms, or -1 */
} sse_event;

/* Returns 0 to go on, non-zero to stop parsing (sse_feed returns it). */
typedef int (*sse_emit_fn)(void *ctx, const sse_event *ev);

typedef struct sse_parser {
  buf line;
  buf data;
  buf event;
  buf id;
  long retry;
  int after_cr;  /* the last byte was \r: a following \n belongs to it */
  int started;   /* past the optional byte-order mark */
  int has_data;  /* a data: field was seen for the pending event */
} sse_parser;

void sse_init(sse_parser *p);
int sse_feed(sse_parser *p, const char *bytes, size_t n, sse_emit_fn emit, void *ctx);
/* True when the stream stopped inside an event (a cut stream). */
int sse_pending(const sse_parser *p);
void sse_free(sse_parser *p);

#endif
