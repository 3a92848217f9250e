/* kube_exec: the channels of a Kubernetes exec stream over a WebSocket
 * (websocket.h) — the API server's remotecommand protocols
 * v5.channel.k8s.io and v4.channel.k8s.io. Pure C, no I/O.
 *
 * Every binary message starts with its channel: 0 stdin (we send), 1
 * stdout, 2 stderr, 3 the error channel (one JSON Status when the command
 * ends: {"status":"Success"}, or a Failure with a message, and for an exit
 * code the cause ExitCode), 4 resize (a terminal's; never sent here), and
 * with v5 255 "close": [255, 0] ends stdin while the stream goes on (with
 * v4 only closing the connection ends it). Later fragments of a message have
 * no channel byte. The kubelet side reads whole messages, so stdin goes as
 * binary messages of at most KUBE_EXEC_MESSAGE_MAX bytes, never
 * fragmented. Text messages belong to the base64 protocols, which are never
 * offered: one is refused, as is a message on any channel but 1, 2 and 3. A
 * ping is answered with a pong; the server's close frame ends the stream,
 * answered with ours. */
#ifndef LUAGENT_KUBE_EXEC_H
#define LUAGENT_KUBE_EXEC_H

#include <stddef.h>

#include "buf.h"
#include "websocket.h"

/* What we offer, in order of preference (Kubernetes 1.30+ speaks v5). */
#define KUBE_EXEC_PROTOCOLS "v5.channel.k8s.io, v4.channel.k8s.io"
/* The most stdin bytes one message carries. */
#define KUBE_EXEC_MESSAGE_MAX (1u << 20)
/* The most of the error channel's Status kept. */
#define KUBE_STATUS_MAX 8192

enum kube_channel { KUBE_STDIN = 0, KUBE_STDOUT = 1, KUBE_STDERR = 2, KUBE_ERROR = 3, KUBE_RESIZE = 4, KUBE_CLOSE = 255 };

typedef struct kube_exec_events {
  /* stdout (1) or stderr (2) bytes; nonzero stops the feed. */
  int (*output)(void *ctx, int stream, const char *data, size_t n);
  /* A frame to write back (a pong, our close); nonzero stops the feed. */
  int (*reply)(void *ctx, const buf *frame);
} kube_exec_events;

typedef struct kube_exec {
  ws_decoder ws;
  int version;             /* 4 or 5: the protocol the server chose */
  int channel;             /* of the message being read; -1 before its first byte */
  buf status;              /* what came on the error channel, at most KUBE_STATUS_MAX */
  int closed;              /* the server's close frame came */
  int close_code;          /* its status code (1005: none) */
  char close_reason[WS_CONTROL_MAX];
  const kube_exec_events *ev; /* while feeding */
  void *ctx;
  char why[200];           /* why the stream was refused */
} kube_exec;

/* The version of a protocol the server chose: 5, 4, or 0 for another. */
int kube_exec_version(const char *protocol);
void kube_exec_init(kube_exec *k, int version);
void kube_exec_free(kube_exec *k);
/* Feeds the server's bytes, in any cuts. Returns 0; 1 when a callback
 * stopped it; 2 when the server closed the stream (the rest is ignored;
 * kube_exec_outcome says how it ended); -1 when the stream breaks the
 * protocol (k->why). */
int kube_exec_feed(kube_exec *k, const char *data, size_t n, const kube_exec_events *ev, void *ctx);
/* Appends n stdin bytes as messages [0] + data (nothing when n is 0).
 * 0, or -1 (memory, no random bytes for the masks). */
int kube_exec_stdin(buf *out, const void *data, size_t n);
/* Appends the message that ends stdin ([255, 0]). -1 under v4, which has none. */
int kube_exec_end_stdin(const kube_exec *k, buf *out);
/* The API server refused the upgrade (any status but 101): its answer's
 * body (a JSON Status: 403 "pods \"x\" is forbidden: ...", 404 not found,
 * 400 "pod is not running"), read as it comes — Content-Length, chunked or
 * to the connection's end — and kept up to KUBE_STATUS_MAX bytes. */
typedef struct kube_refusal kube_refusal;

/* For a parsed response head; NULL when out of memory. */
kube_refusal *kube_refusal_new(const http_message *m);
/* Feeds the bytes after the head: 1 when the body is whole (or malformed,
 * or over the cap: enough is known), 0 when more is to come. */
int kube_refusal_feed(kube_refusal *r, const char *data, size_t n);
/* The Status's message (or the body's first line) into out. */
void kube_refusal_message(const kube_refusal *r, buf *out);
void kube_refusal_free(kube_refusal *r);

/* How the stream ended, in one short line: the Status's message
 * ("command terminated with non-zero exit code: ..."), "the command ended"
 * for a Success, else the close frame's code and reason, or that none came. */
void kube_exec_outcome(const kube_exec *k, char *out, size_t n);

#endif
