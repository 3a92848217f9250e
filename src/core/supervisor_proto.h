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
#define SV_PROTOCOL_VERSION "3"

#define SV_MAX_FIELDS 4096
#define SV_MAX_FIELD (64u * 1024 * 1024)     /* one field: stdin, code */
#define SV_MAX_REQUEST (130u * 1024 * 1024)  /* all fields of one request together */
#define SV_MAX_HEADER 64                      /* the header line, LF included */

/* field tags (what each carries: supervisor_ops.def) */
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
#define SV_TAG_TTY 'y'        /* spawn: a pseudo-terminal for stdin, stdout and stderr */
#define SV_TAG_COLS 'x'       /* spawn (tty), resize: the terminal's columns, decimal; 0: 80 */
#define SV_TAG_ROWS 'r'       /* spawn (tty), resize: the terminal's rows, decimal; 0: 24 */

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

/* Appends one request to out, fields as they are (sv_encode_op checks them
 * first). Returns 0, or -1 when the op, id or a field is outside the limits
 * above (nothing is appended then) or memory runs out. */
int sv_encode(buf *out, const char *op, long long id, const sv_field *fields, size_t nfields);

/* ---- the operations (supervisor_ops.def) ---- */

/* How a field's value is given (sv_value) and checked before it goes. */
enum sv_field_kind {
  SVF_STRINGS, /* list: strings without NUL, one field each, in order */
  SVF_ENV,     /* list: "NAME=value" entries (a name before the '=') */
  SVF_STRING,  /* data, len: text without NUL */
  SVF_BYTES,   /* data, len: any bytes */
  SVF_FLAG,    /* flag: sent (empty) when set */
  SVF_SECONDS, /* number: seconds >= 0, sent as whole milliseconds rounded up; 0 is not sent */
  SVF_COUNT,   /* number: a whole number >= 0, always sent (0 when absent) */
  SVF_ID,      /* number: a command's id >= 1 */
  SVF_SIGNAL,  /* number: 1..64 */
  SVF_MODE     /* number: file mode bits 0..07777, always sent (0644 when absent) */
};

enum sv_answer { SV_ANSWERED, SV_CONTROL };

typedef struct sv_field_spec {
  const char *name;
  char tag;
  int kind; /* enum sv_field_kind */
} sv_field_spec;

typedef struct sv_op_spec {
  const char *name;
  int answer;         /* enum sv_answer */
  const char *fields; /* "argv! env cwd ..." */
} sv_op_spec;

/* Every field and every op, in declaration order, ending with a NULL name. */
extern const sv_field_spec SV_FIELDS[];
extern const sv_op_spec SV_OPS[];

const sv_op_spec *sv_op_find(const char *name);

/* An op's fields, in order: at most max of them into specs (and required[i]
 * whether the request needs the i-th). Returns how many the op has. */
size_t sv_op_fields(const sv_op_spec *op, const sv_field_spec **specs, int *required, size_t max);

/* The value of one field, as its kind gives it. present 0: not given. */
typedef struct sv_value {
  int present;
  const char *data; /* STRING, BYTES */
  size_t len;
  const char *const *list; /* STRINGS, ENV: count strings */
  size_t count;
  double number; /* SECONDS, COUNT, ID, SIGNAL, MODE */
  int flag;      /* FLAG */
} sv_value;

#define SV_MAX_OP_FIELDS 16

/* Appends the request op with values[i] for the op's i-th field (as
 * sv_op_fields lists them). Returns 0; -1 when a value is missing or wrong
 * for its kind (*why names the field and what is wrong: the caller's
 * mistake); -2 when the request is over the limits above. Nothing is
 * appended unless it returns 0. */
int sv_encode_op(buf *out, const sv_op_spec *op, long long id, const sv_value *values, const char **why);

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
