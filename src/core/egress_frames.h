/* egress_frames: the wire format of sandbox egress (sandbox/supervisor/DESIGN.md,
 * "Egress"), spoken over one Docker exec attach between the host and
 * `luagent-supervisor egress PORT`: stdin carries host -> supervisor, stdout
 * supervisor -> host, stderr diagnostics only. Pure C, compiled into both ends.
 *
 *   message = header LF payload
 *   header  = KIND SP conn SP n          at most EG_MAX_HEADER bytes (LF not counted)
 *   KIND    = one of "A".."Z"
 *   conn    = decimal 0..EG_MAX_CONN     ("0" / %x31-39 *DIGIT: no sign, no leading zero)
 *   n       = decimal 0..EG_MAX_PAYLOAD
 * The payload is exactly n bytes, except for K, whose n is a byte count with no
 * payload after it.
 *
 * Supervisor -> host:
 *   R 0 n    "egress 1 127.0.0.1:PORT": ready, once, after the listener is bound
 *   A c 0    a new client connection c (ids from 1, increasing, never reused)
 *   D c n    n bytes the client sent
 *   H c 0    the client finished sending (EOF)
 *   C c n    connection c is gone; payload: why ("" when the host asked)
 *   K c n    n bytes of the host's D for c are written into the client socket
 * Host -> supervisor:
 *   D c n    bytes to write to the client
 *   H c 0    shutdown(SHUT_WR) once the queued bytes are written
 *   C c 0    close once the queued bytes are written (at most 5 s); answered by C c 0
 *   K c n    the host consumed n bytes of the supervisor's D for c
 * Flow control: neither side has more than EGRESS_WINDOW bytes of D for one
 * connection sent and not yet K'd. A message for a connection the receiver
 * already closed is ignored (the two ends race). Which kinds a direction may
 * carry is the receiver's business, not the parser's. */
#ifndef LUAGENT_EGRESS_FRAMES_H
#define LUAGENT_EGRESS_FRAMES_H

#include <stddef.h>

#include "buf.h"

#define EGRESS_PROTOCOL_VERSION "1"
#define EGRESS_WINDOW (1024u * 1024)     /* D bytes of one connection sent and not yet K'd, at most */
#define EG_MAX_PAYLOAD (1024u * 1024)    /* n of one message, at most */
#define EG_MAX_CONN 2147483647LL
#define EG_MAX_HEADER 32                  /* header bytes before the LF, at most */

/* Writes the header of one message, LF included, into out (room for
 * EG_MAX_HEADER + 2 bytes, NUL included) for writers that send the payload
 * from where it lies. Returns its length, or -1 when kind, conn or n is
 * outside the format. */
int eg_header(char *out, char kind, long long conn, size_t n);

/* Appends one message to out: header, then data[0..n) (for K: n is the count
 * and data is NULL; nothing follows the header). Returns 0, or -1 when a
 * value is outside the format (nothing appended) or memory runs out. */
int eg_encode(buf *out, char kind, long long conn, const void *data, size_t n);

typedef int (*eg_on_msg)(void *ctx, char kind, long long conn, const char *data, size_t n);

/* A streaming parser: any chunking of the same bytes gives the same messages. */
typedef struct eg_parser {
  char header[EG_MAX_HEADER + 1];
  size_t header_len;
  int in_payload;     /* a header was read; its payload is being collected */
  char kind;
  long long conn;
  size_t need;        /* the payload's length */
  buf payload;        /* the part of a payload that came in an earlier chunk */
  char error[96];     /* why the stream is not the format ("" until then) */
} eg_parser;

void eg_parser_init(eg_parser *p);
void eg_parser_free(eg_parser *p);

/* Feeds bytes; calls on_msg once per whole message, in order, with its whole
 * payload (for K: data NULL, n the count; an empty payload: data "", n 0).
 * on_msg returns 0 to go on; anything else stops the feed. Returns 0, or -1
 * when the bytes are not the format or on_msg stopped it (p->error says which);
 * after -1 every feed returns -1. */
int eg_feed(eg_parser *p, const char *data, size_t n, eg_on_msg on_msg, void *ctx);

/* Bytes of a message started and not finished (0 between messages). */
size_t eg_parser_pending(const eg_parser *p);

#endif
