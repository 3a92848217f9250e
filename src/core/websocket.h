/* websocket: the client side of RFC 6455, pure C, no I/O — the opening
 * handshake (the GET request; the check of the server's 101), client frames
 * (always masked) and a streaming decoder of the server's frames.
 *
 * The decoder takes bytes in any cuts and reports each data message as a
 * start, pieces of payload as they arrive and an end, so a message of any
 * size streams through without being held whole; control frames (ping, pong,
 * close: at most 125 bytes) are handed over whole, possibly between the
 * fragments of a message. What the peer must not send is refused with a
 * reason: a masked frame, reserved bits, an unknown opcode, a control frame
 * longer than 125 bytes or fragmented, a continuation with no message to
 * continue, a new message inside one, a length of 2^63 or more, bytes after
 * the close frame. Text payloads are not checked for UTF-8 (the owner
 * decides what a message means). Answering a ping and closing are the
 * owner's: kube_exec.c is the one here. */
#ifndef LUAGENT_WEBSOCKET_H
#define LUAGENT_WEBSOCKET_H

#include <stddef.h>

#include "buf.h"
#include "http_head.h"

enum ws_opcode { WS_CONTINUATION = 0, WS_TEXT = 1, WS_BINARY = 2, WS_CLOSE = 8, WS_PING = 9, WS_PONG = 10 };

#define WS_KEY_LEN 24         /* base64 of 16 random bytes */
#define WS_ACCEPT_LEN 28      /* base64 of a SHA-1 digest */
#define WS_CONTROL_MAX 125    /* a control frame's payload, at most */
#define WS_FRAME_HEADER_MAX 14

/* ---- the opening handshake ---- */

/* A fresh Sec-WebSocket-Key (16 bytes from getrandom, base64). 0, or -1 when
 * the system gave no random bytes. */
int ws_make_key(char key[WS_KEY_LEN + 1]);
/* The Sec-WebSocket-Accept a server must answer to key:
 * base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")). */
void ws_accept(const char *key, char accept[WS_ACCEPT_LEN + 1]);
/* Appends the request: GET path on host with the key, the protocols offered
 * ("a, b" in order of preference; NULL: none) and more header lines
 * ("Name: value", NULL-terminated; may be NULL, e.g. an Authorization).
 * 0, or -1 when the path or host has a space or line break, or a header
 * line is not a token name, a colon and a value without line breaks. */
int ws_request(buf *out, const char *host, size_t host_len, const char *path, const char *key, const char *protocols,
               const char *const *headers);
/* Checks the server's answer (a response head parsed by
 * http_response_parse): status 101; Upgrade holds the token "websocket"
 * and Connection "upgrade" (case-insensitive); Sec-WebSocket-Accept is the
 * one for key; no extension was chosen (none was offered); the protocol
 * chosen, if any, is one of `offered` and is copied into protocol ("" when
 * none). Returns 0, or -1 with *why naming what is wrong. */
int ws_check_upgrade(const http_message *m, const char *key, const char *offered, char *protocol,
                     size_t protocol_len, const char **why);

/* ---- client frames ---- */

/* Fills out with n bytes from getrandom (a frame's masking key). 0 or -1. */
int ws_random(unsigned char *out, size_t n);
/* Appends the header of a client frame: fin, opcode, payload length n,
 * masking key mask. 0, or -1 when out of memory. */
int ws_frame_header(buf *out, int opcode, int fin, unsigned long long n, const unsigned char mask[4]);
/* Appends n payload bytes masked with mask, the first being the payload's
 * byte number `offset` (a payload may be appended in pieces). 0 or -1. */
int ws_mask_append(buf *out, const void *data, size_t n, const unsigned char mask[4], unsigned long long offset);
/* One whole client frame with a fresh masking key. 0, or -1 (memory, no
 * random bytes). */
int ws_frame(buf *out, int opcode, int fin, const void *data, size_t n);

/* ---- the server's frames ---- */

/* What the decoder reports; each returns 0 to go on, anything else stops
 * the decoding (ws_decode returns 1; the decoder is not fed again). */
typedef struct ws_events {
  int (*start)(void *ctx, int opcode);                  /* a WS_TEXT or WS_BINARY message begins */
  int (*payload)(void *ctx, const char *data, size_t n); /* its next bytes (n > 0) */
  int (*end)(void *ctx);                                /* it ended */
  /* A whole WS_PING, WS_PONG or WS_CLOSE frame. A close is the last thing
   * reported: bytes after it are refused. */
  int (*control)(void *ctx, int opcode, const char *data, size_t n);
} ws_events;

typedef struct ws_decoder {
  int state;
  unsigned char header[WS_FRAME_HEADER_MAX];
  size_t header_len, header_need;
  int opcode, fin;
  unsigned long long left; /* payload bytes of this frame still to come */
  int in_message;          /* a data message has begun and not ended */
  char control[WS_CONTROL_MAX];
  size_t control_len;
  char why[160];           /* why the stream was refused */
} ws_decoder;

void ws_decoder_init(ws_decoder *d);
/* Feeds the next n bytes of the server's stream. Returns 0, 1 when a
 * callback stopped it, or -1 when the stream breaks the protocol (d->why). */
int ws_decode(ws_decoder *d, const char *data, size_t n, const ws_events *ev, void *ctx);
/* A close frame's payload: its status code (1005 when it has none) and its
 * reason (UTF-8, not NUL-terminated). -1 for a one-byte payload. */
int ws_close_parse(const char *data, size_t n, int *code, const char **reason, size_t *reason_len);

#endif
