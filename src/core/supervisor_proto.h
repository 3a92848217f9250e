/* supervisor_proto: the request side of the protocol spoken with the sandbox
 * supervisor (sandbox/supervisor/, specified in its DESIGN.md). Pure C, no
 * Lua: the host encodes with it, the supervisor parses with it, so both ends
 * share one implementation of the wire format.
 *
 * A request is one header line and COUNT fields:
 *   <op> SP <id> SP <count> LF  then COUNT netstrings  <len> ":" <tag><data> ","
 * <op> is a lower-case word of at most 15 letters, <id> a decimal 1..2^63-1 (the
 * command a kill/signal targets), <count> at most SV_MAX_FIELDS, <len> the
 * length of tag + data in decimal without leading zeros, at most SV_MAX_FIELD.
 * The tag is one byte saying what the field is (SV_TAG_*); fields of one tag
 * may repeat (argv, env) and keep their order.
 *
 * The answers (R, O, E, F, X frames) are parsed by src/core/supervisor_frames.h. */
#ifndef LUAGENT_SUPERVISOR_PROTO_H
#define LUAGENT_SUPERVISOR_PROTO_H

#include <stddef.h>

#include "buf.h"

/* The protocol's version: the supervisor's ready frame says it ("R 2"), and
 * the host refuses a supervisor that speaks another. */
#define SV_PROTOCOL_VERSION "2"

#define SV_MAX_FIELDS 4096
#define SV_MAX_FIELD (64u * 1024 * 1024)     /* one field: stdin, code */
#define SV_MAX_REQUEST (130u * 1024 * 1024)  /* all fields of one request together */
#define SV_MAX_HEADER 64                      /* the header line, LF included */

/* field tags */
#define SV_TAG_ARG 'a'      /* one argv element (run, spawn), in order */
#define SV_TAG_ENV 'e'      /* NAME=value added to the command's environment */
#define SV_TAG_CWD 'd'      /* working directory */
#define SV_TAG_STDIN 'i'    /* the command's stdin bytes (then EOF); put: the file's bytes */
#define SV_TAG_TIMEOUT 't'  /* milliseconds, decimal; absent or 0: none */
#define SV_TAG_CODE 'c'     /* python code */
#define SV_TAG_SIGNAL 's'   /* signal number, decimal */
#define SV_TAG_PATH 'p'     /* pack, list: the path to walk; read, put: the file */
#define SV_TAG_MAXBYTES 'b' /* pack, read: bytes of file data at most, decimal; 0 none */
#define SV_TAG_MAXENTRIES 'n' /* pack: entries at most, decimal; 0 none */
#define SV_TAG_KEEPSTDIN 'k'  /* spawn: stdin stays open (after 'i', if any) for write/eof requests */
#define SV_TAG_TARGET 'w'     /* write, eof: the id of the spawn whose stdin it is, decimal */
#define SV_TAG_MODE 'm'       /* put: the file's mode bits, decimal (absent: 0644) */

/* Streamed stdin: serve refuses a write while this many bytes given to the
 * spawn's stdin have not reached its pipe yet (a slow reader holds back its
 * writer, never serve); a writer sends the next bytes after the X of the last. */
#define SV_STDIN_WINDOW (4u * 1024 * 1024)

typedef struct sv_field {
  char tag;
  const char *data; /* not NUL-terminated; points into the parsed bytes */
  size_t len;
} sv_field;

typedef struct sv_request {
  char op[16];
  long long id;
  size_t nfields;
  sv_field *fields; /* malloc'd array of nfields (NULL when 0) */
} sv_request;

/* ---- encoding (host side) ---- */

/* Appends one request to out. Returns 0, or -1 when the op, id or a field
 * is outside the limits above (nothing is appended then) or memory runs out. */
int sv_encode(buf *out, const char *op, long long id, const sv_field *fields, size_t nfields);

/* What sv_encode_run asks for: a run, a spawn, or a spawn whose stdin stays
 * open after stdin_data for write and eof requests. */
enum sv_run_mode { SV_RUN, SV_SPAWN, SV_SPAWN_STDIN };

/* Appends a run or spawn request (mode): argv and env are NULL-terminated
 * (env entries "NAME=value", may be NULL), cwd may be NULL, stdin_data may be
 * NULL, timeout_ms 0 for none. Returns 0 or -1 as sv_encode. */
int sv_encode_run(buf *out, long long id, enum sv_run_mode mode, const char *const *argv, const char *const *env,
                  const char *cwd, const char *stdin_data, size_t stdin_len, long long timeout_ms);
/* Appends a write of data[0..len) (len may be 0) to the open stdin of spawn
 * target; its X (code 0) says the bytes are in the spawn's pipe. */
int sv_encode_write(buf *out, long long id, long long target, const char *data, size_t len);
/* Appends an eof: the stdin of spawn target is closed after what was written
 * before; its X (code 0) says it is closed. */
int sv_encode_eof(buf *out, long long id, long long target);
/* Appends python code to run in the persistent interpreter. */
int sv_encode_python(buf *out, long long id, const char *code, size_t len, long long timeout_ms);
/* Appends a kill of command id (its whole process tree). */
int sv_encode_kill(buf *out, long long id);
/* Appends a signal to command id's process group. */
int sv_encode_signal(buf *out, long long id, int signo);
/* Appends a pack (tar stream) of path; 0 for no limit. */
int sv_encode_pack(buf *out, long long id, const char *path, long long max_bytes, long long max_entries);

/* ---- parsing (supervisor side) ---- */

/* Parses one request from the start of data[0..n). Returns:
 *   1  a whole request: *req filled (fields point into data; free with
 *      sv_request_free), *used = its length in bytes;
 *   0  incomplete: *used = how many bytes at least are needed before trying again;
 *  -1  not the protocol: why (a static string) in *error. */
int sv_parse(const char *data, size_t n, sv_request *req, size_t *used, const char **error);
void sv_request_free(sv_request *req);

/* The first field with this tag, or NULL. */
const sv_field *sv_field_find(const sv_request *req, char tag);
/* The decimal value of the first field with this tag: 0 and *value set, 1
 * when absent (*value untouched), -1 when not a decimal >= 0. */
int sv_field_number(const sv_request *req, char tag, long long *value);

#endif
