/* lua_engine_io: luagent.engine_io — the raw streaming half of the Docker Engine API
 * client. JSON calls are plain http.request calls made by
 * lua/luagent/engine.lua; what must not pass through Lua strings chunk by
 * chunk is here.
 *
 *   engine_io.endpoint([docker_host]) -> {unix_socket, url, ca_file, cert_file,
 *       key_file, description} | nil, err      from DOCKER_HOST & co.
 *   engine_io.exec_start(opts) -> stream      POST /exec/ID/start; opts: http
 *       options (url, unix_socket, TLS, body) + max_output (bytes per stream)
 *     stream:wait([seconds]) -> true when the command's output ended,
 *                               false if the seconds passed first (yields)
 *     stream:result() -> {stdout, stderr, truncated, stdout_bytes, stderr_bytes}
 *                      | nil, err   (after wait returned true)
 *     stream:abort()    stop reading; result() then gives the output so far
 *   engine_io.put_archive(opts) -> true | nil, err   opts.entries (see luagent.tar),
 *       opts.uid/gid own the files; streamed with an exact Content-Length
 *   engine_io.get_archive(opts) -> report | nil, err  extracts safely into opts.dest
 *       (opts.strip, max_bytes, max_entries as in tar.extract)
 *   engine_io.save_archive(opts) -> bytes | nil, err  the raw tar into opts.path
 *       (at most opts.max_bytes; written to a temporary file, then renamed)
 *   engine_io.read_file(opts) -> content | nil, err   the first file of the archive,
 *       at most opts.max_bytes
 *   engine_io.runner(opts) -> channel | nil, err   a hijacked attach to an exec of
 *       sandbox/runner.py (opts: unix_socket, path = "/vX/exec/ID/start", timeout);
 *       returns once the runner said it is ready
 *     channel:send(id, message [, max_output]) -> true | nil, err   registers id, queues bytes
 *     channel:wait(id [, seconds]) -> true (ended) | false (time passed) | nil, err (runner gone)
 *     channel:result(id) -> {stdout, stderr, exit_code, flags, failure, truncated, *_bytes}
 *     channel:alive() -> boolean, reason     channel:close()
 * Engine errors come back as {kind = "docker", status, message = the engine's
 * own message}. */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "docker.h"
#include "runner.h"
#include "host.h"
#include "lua_http.h"
#include "lua_tar.h"
#include "lua_util.h"

static const char STREAM_CLASS[] = "luagent.engine_io.exec_stream";

/* Pushes nil, {kind = "docker", status, message} from an engine error body
 * ({"message": "..."}), or the transport failure. */
static int push_engine_failure(lua_State *L, http_xfer *x) {
  if (http_failed(x) && !http_status(x)) return lhttp_push_failure(L, x);
  const buf *error_body = http_body(x);
  const char *body = error_body->data ? error_body->data : "";
  const char *msg = strstr(body, "\"message\":\"");
  char text[1024];
  if (msg) {
    msg += 11;
    size_t n = 0;
    for (const char *p = msg; *p && *p != '"' && n + 1 < sizeof text; p++) {
      if (*p == '\\' && p[1]) p++;
      text[n++] = *p;
    }
    text[n] = '\0';
  } else {
    snprintf(text, sizeof text, "%.*s", (int)strcspn(body, "\n"), body);
  }
  long status = http_status(x);
  const char *kind = status == 404 ? "not_found" : status == 409 ? "conflict" : "docker"; /* as engine.lua */
  luagent_fail(L, kind, "Docker engine says: %s (HTTP %ld)", text[0] ? text : "no message", status);
  luagent_error_set_integer(L, "status", http_status(x));
  luagent_error_set_string(L, "engine_message", text);
  return 2;
}

static int is_success(long status) { return status >= 200 && status < 300; }

/* ---- engine_io.endpoint ---- */

static int l_endpoint(lua_State *L) {
  const char *docker_host = luaL_optstring(L, 1, getenv("DOCKER_HOST"));
  docker_endpoint e;
  char err[512];
  if (docker_endpoint_parse(docker_host, getenv("DOCKER_TLS_VERIFY"), getenv("DOCKER_CERT_PATH"),
                            getenv("HOME"), &e, err, sizeof err) != 0)
    return luagent_fail(L, "config", "%s", err);
  lua_createtable(L, 0, 6);
  if (e.unix_socket[0]) luagent_error_set_string(L, "unix_socket", e.unix_socket);
  luagent_error_set_string(L, "url", e.base_url);
  luagent_error_set_string(L, "description", e.description);
  if (e.tls) {
    luagent_error_set_string(L, "ca_file", e.ca_file);
    luagent_error_set_string(L, "cert_file", e.cert_file);
    luagent_error_set_string(L, "key_file", e.key_file);
  }
  return 1;
}

/* ---- exec streams ---- */

typedef struct exec_stream {
  http_xfer *x;
  docker_capture capture;
  int bad_frame;
  int aborted;      /* stopped by us: the output so far is the result */
  wait_slot slot;
  loop_timer timer;
  loop *lp;
} exec_stream;

static size_t exec_sink(void *ctx, const char *data, size_t n) {
  exec_stream *s = ctx;
  if (docker_capture_feed(&s->capture, data, n) != 0) {
    s->bad_frame = 1;
    return 0;
  }
  return n;
}

static void exec_done(http_xfer *x, void *ctx) {
  (void)x;
  exec_stream *s = ctx;
  loop_timer_stop(s->lp, &s->timer);
  wait_slot_complete(&s->slot);
}

static void exec_timer(loop_timer *t) {
  exec_stream *s = (exec_stream *)((char *)t - offsetof(exec_stream, timer));
  wait_slot_complete(&s->slot);
}

static void exec_cancel(wait_slot *slot) {
  exec_stream *s = (exec_stream *)((char *)slot - offsetof(exec_stream, slot));
  loop_timer_stop(s->lp, &s->timer);
}

static exec_stream *check_stream(lua_State *L) { return luaL_checkudata(L, 1, STREAM_CLASS); }

static int stream_gc(lua_State *L) {
  exec_stream *s = check_stream(L);
  loop_timer_stop(s->lp, &s->timer);
  http_free(s->x);
  s->x = NULL;
  docker_capture_free(&s->capture);
  return 0;
}

/* engine_io.exec_start(opts) -> stream */
static int l_exec_start(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  http_request req;
  lhttp_read_options(L, 1, &req);
  static const char *const headers[] = {"Content-Type: application/json", NULL};
  req.headers = headers;
  req.method = "POST";
  req.sink_success_only = 1;
  size_t cap = (size_t)opt_integer(L, 1, "max_output", 1 << 20);
  exec_stream *s = lua_newuserdatauv(L, sizeof *s, 1);
  memset(s, 0, sizeof *s);
  luaL_setmetatable(L, STREAM_CLASS);
  lua_getfield(L, 1, "body");
  lua_setiuservalue(L, -2, 1); /* the request body must outlive the transfer */
  s->lp = host_of(L)->loop;
  docker_capture_init(&s->capture, cap);
  loop_timer_init(&s->timer, exec_timer);
  wait_slot_init(&s->slot, exec_cancel);
  http_sink sink = {exec_sink, s};
  char err[256];
  s->x = http_start(s->lp, &req, &sink, exec_done, s, err, sizeof err);
  if (!s->x) return luaL_error(L, "%s", err);
  return 1;
}

static int stream_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  exec_stream *s = (exec_stream *)ctx;
  luagent_check_cancelled(L, &s->slot);
  lua_pushboolean(L, http_finished(s->x));
  return 1;
}

/* stream:wait([seconds]) -> finished? */
static int l_stream_wait(lua_State *L) {
  exec_stream *s = check_stream(L);
  lua_Number seconds = luaL_optnumber(L, 2, -1);
  lua_settop(L, 1);
  if (http_finished(s->x)) {
    lua_pushboolean(L, 1);
    return 1;
  }
  wait_slot_init(&s->slot, exec_cancel);
  if (seconds >= 0) loop_timer_start(s->lp, &s->timer, seconds);
  return host_await(L, &s->slot, (lua_KContext)s, stream_wait_k);
}

static void set_output(lua_State *L, const capped_output *c, const char *name, const char *bytes_name, int *truncated) {
  buf out = BUF_INIT;
  *truncated |= capped_result(c, &out);
  lua_pushlstring(L, out.data ? out.data : "", out.len);
  lua_setfield(L, -2, name);
  lua_pushinteger(L, (lua_Integer)c->total);
  lua_setfield(L, -2, bytes_name);
  buf_free(&out);
}

/* stream:result() -> {stdout, stderr, truncated, stdout_bytes, stderr_bytes} | nil, err */
static int l_stream_result(lua_State *L) {
  exec_stream *s = check_stream(L);
  if (!http_finished(s->x) && !s->aborted)
    return luaL_error(L, "stream:result() before the stream ended (call wait first)");
  if (s->bad_frame) return luagent_fail(L, "protocol", "malformed exec stream from the Docker engine");
  if (!s->aborted && (!is_success(http_status(s->x)) || (http_failed(s->x) && http_status(s->x) == 0)))
    return push_engine_failure(L, s->x);
  int truncated = 0;
  lua_createtable(L, 0, 5);
  set_output(L, &s->capture.out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  set_output(L, &s->capture.out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
  lua_pushboolean(L, truncated);
  lua_setfield(L, -2, "truncated");
  return 1;
}

static int l_stream_abort(lua_State *L) {
  exec_stream *s = check_stream(L);
  if (!http_finished(s->x)) s->aborted = 1;
  http_abort(s->x);
  loop_timer_stop(s->lp, &s->timer);
  return 0;
}

/* ---- archives ---- */

typedef struct archive_job {
  http_xfer *x;        /* set by the finish step */
  tar_writer *writer;  /* put: the stream being uploaded */
  tar_extract *extract;/* get: safe extraction */
  int fd;              /* save: the temporary file */
  long long saved;
  long long save_limit; /* save: the most it may write (0: no limit) */
  char *path, *temp;   /* save: where it goes, and where it is written first */
  tar_reader *reader;  /* read_file */
  buf file;
  size_t entries_seen;
  int is_folder;
  size_t max_bytes;
  int too_large;
  int sink_failed;
  char sink_error[256];
} archive_job;

static const char JOB_CLASS[] = "luagent.engine_io.archive_job";

static int job_gc(lua_State *L) {
  archive_job *j = luaL_checkudata(L, 1, JOB_CLASS);
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  if (j->temp) unlink(j->temp); /* a snapshot that did not finish leaves nothing */
  free(j->temp);
  free(j->path);
  j->temp = j->path = NULL;
  buf_free(&j->file);
  tar_reader_free(j->reader);
  j->reader = NULL;
  return 0;
}

static archive_job *new_job(lua_State *L) {
  archive_job *j = lua_newuserdatauv(L, sizeof *j, 0);
  memset(j, 0, sizeof *j);
  j->fd = -1;
  luaL_setmetatable(L, JOB_CLASS);
  return j;
}

static size_t writer_read(void *ctx, char *dst, size_t n) { return tar_writer_read(ctx, dst, n); }

static size_t extract_sink(void *ctx, const char *data, size_t n) {
  archive_job *j = ctx;
  if (tar_extract_feed(j->extract, data, n) == 0) return n;
  j->sink_failed = 1;
  return 0;
}

static size_t save_sink(void *ctx, const char *data, size_t n) {
  archive_job *j = ctx;
  if (j->save_limit && j->saved + (long long)n > j->save_limit) {
    snprintf(j->sink_error, sizeof j->sink_error, "the archive is larger than the limit of %lld bytes", j->save_limit);
    j->sink_failed = 1;
    return 0;
  }
  for (size_t done = 0; done < n;) {
    ssize_t w = write(j->fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      snprintf(j->sink_error, sizeof j->sink_error, "%s", strerror(errno));
      j->sink_failed = 1;
      return 0;
    }
    done += (size_t)w;
  }
  j->saved += (long long)n;
  return n;
}

static size_t read_file_sink(void *ctx, const char *data, size_t n) {
  archive_job *j = ctx;
  if (tar_reader_feed(j->reader, data, n) == 0) return n;
  j->sink_failed = 1;
  return 0;
}

/* The archive of one file holds that file first; a folder's starts with the
 * folder itself, and then no file in it is the answer. */
static int first_file_entry(void *ctx, const tar_entry_info *e) {
  archive_job *j = ctx;
  if (j->entries_seen++ == 0 && e->type == '5') j->is_folder = 1;
  if (j->is_folder || e->type != '0' || j->file.data) return 1; /* only the first regular file */
  buf_append(&j->file, "", 0);
  return 0;
}

static int first_file_data(void *ctx, const char *data, size_t n) {
  archive_job *j = ctx;
  if (j->file.len + n > j->max_bytes) {
    j->too_large = 1;
    return -1;
  }
  return buf_append(&j->file, data, n);
}

static int no_entry_end(void *ctx) {
  (void)ctx;
  return 0;
}

/* The engine refused, or the transfer broke (even after a 200: a cut
 * archive is not a complete one): pushes nil, err; returns 2. */
static int engine_failed(lua_State *L, http_xfer *x, archive_job *j) {
  j->x = x;
  if (j->sink_failed) return 0; /* the sink knows better what went wrong */
  if (!is_success(http_status(x))) return push_engine_failure(L, x);
  if (http_failed(x)) return lhttp_push_failure(L, x);
  return 0;
}

static int put_finish(lua_State *L, http_xfer *x, void *ud) {
  archive_job *j = ud;
  const char *werr = tar_writer_error(j->writer);
  if (werr && werr[0]) return luagent_fail(L, "io", "staging failed: %s", werr);
  int n = engine_failed(L, x, j);
  if (n) return n;
  lua_pushboolean(L, 1);
  return 1;
}

static int get_finish(lua_State *L, http_xfer *x, void *ud) {
  archive_job *j = ud;
  int n = engine_failed(L, x, j);
  if (n) return n;
  if (j->sink_failed || tar_extract_finish(j->extract) != 0)
    return luagent_fail(L, "tar", "extraction failed: %s", tar_extract_error(j->extract));
  ltar_push_report(L, j->extract);
  return 1;
}

/* A snapshot that failed leaves nothing behind, now (not when collected). */
static void discard_temp(archive_job *j) {
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  if (j->temp) unlink(j->temp);
  free(j->temp);
  j->temp = NULL;
}

static int save_finish(lua_State *L, http_xfer *x, void *ud) {
  archive_job *j = ud;
  int n = engine_failed(L, x, j);
  if (n || j->sink_failed) discard_temp(j);
  if (n) return n;
  if (j->sink_failed) return luagent_fail(L, "io", "cannot write the archive: %s", j->sink_error);
  int rc = close(j->fd);
  j->fd = -1;
  if (rc != 0 || rename(j->temp, j->path) != 0) {
    int saved = errno;
    discard_temp(j);
    return luagent_fail(L, "io", "cannot write the archive %s: %s", j->path, strerror(saved));
  }
  free(j->temp);
  j->temp = NULL;
  lua_pushinteger(L, (lua_Integer)j->saved);
  return 1;
}

static int read_finish(lua_State *L, http_xfer *x, void *ud) {
  archive_job *j = ud;
  int n = engine_failed(L, x, j);
  if (n) return n;
  if (j->too_large) return luagent_fail(L, "too_large", "the file is larger than %zu bytes", j->max_bytes);
  if (j->sink_failed || tar_reader_finish(j->reader) != 0)
    return luagent_fail(L, "tar", "bad archive from the engine: %s", tar_reader_error(j->reader));
  if (j->is_folder) return luagent_fail(L, "not_a_file", "it is a folder, not a file");
  if (!j->file.data) return luagent_fail(L, "not_a_file", "not a regular file");
  lua_pushlstring(L, j->file.data, j->file.len);
  return 1;
}

static int get_with_sink(lua_State *L, archive_job *j, size_t (*write)(void *, const char *, size_t),
                         lhttp_finish_fn finish) {
  http_request req;
  lhttp_read_options(L, 1, &req);
  req.method = "GET";
  req.sink_success_only = 1;
  http_sink sink = {write, j};
  return lhttp_perform(L, 1, &req, &sink, finish, j);
}

/* engine_io.put_archive(opts) -> true | nil, err */
static int l_put_archive(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  http_request req;
  lhttp_read_options(L, 1, &req);
  unsigned uid = (unsigned)opt_integer(L, 1, "uid", 0), gid = (unsigned)opt_integer(L, 1, "gid", 0);
  lua_getfield(L, 1, "entries");
  tar_writer *w = ltar_writer_from_entries(L, 2, uid, gid);
  if (!w) return 2;
  archive_job *j = new_job(L);
  j->writer = w;
  http_source source = {writer_read, w, tar_writer_size(w)};
  req.method = "PUT";
  req.body_source = &source;
  return lhttp_perform(L, 1, &req, NULL, put_finish, j);
}

/* engine_io.get_archive(opts) -> report | nil, err */
static int l_get_archive(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *dest = opt_string(L, 1, "dest", NULL, NULL);
  luaL_argcheck(L, dest != NULL, 1, "option 'dest' is required");
  tar_extract *x = ltar_extract_new(L, dest, 1);
  if (!x) return 2;
  archive_job *j = new_job(L);
  j->extract = x;
  return get_with_sink(L, j, extract_sink, get_finish);
}

/* engine_io.save_archive(opts) -> bytes | nil, err */
static int l_save_archive(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  luaL_argcheck(L, path != NULL, 1, "option 'path' is required");
  archive_job *j = new_job(L);
  j->save_limit = (long long)opt_integer(L, 1, "max_bytes", 0);
  /* written beside the target and renamed at the end: a broken transfer
   * never replaces a good snapshot with half of one */
  j->path = strdup(path);
  j->temp = malloc(strlen(path) + 16);
  if (!j->path || !j->temp) return luaL_error(L, "out of memory");
  sprintf(j->temp, "%s.tmp-XXXXXX", path);
  j->fd = mkstemp(j->temp);
  if (j->fd < 0) {
    free(j->temp);
    j->temp = NULL;
    return luagent_fail(L, "io", "cannot create %s: %s", path, strerror(errno));
  }
  return get_with_sink(L, j, save_sink, save_finish);
}

/* engine_io.read_file(opts) -> content | nil, err */
static int l_read_file(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  archive_job *j = new_job(L);
  j->max_bytes = (size_t)opt_integer(L, 1, "max_bytes", 64 << 20);
  static const tar_reader_callbacks cb = {first_file_entry, first_file_data, no_entry_end};
  j->reader = tar_reader_new(&cb, j);
  if (!j->reader) return luaL_error(L, "out of memory");
  return get_with_sink(L, j, read_file_sink, read_finish);
}

/* ---- the runner channel ---- */

static const char CHANNEL_CLASS[] = "luagent.engine_io.runner";

typedef struct runner_result {
  long long id;
  capped_output out[3];
  buf failure;
  int done;
  int code;
  char flags[16];
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  struct runner_result *next;
} runner_result;

typedef struct runner_channel {
  docker_attach *attach;
  runner_parser parser;
  int ready;
  int closed;
  char reason[512];
  capped_output diagnostics; /* the runner's own stderr */
  wait_slot ready_slot;
  loop_timer ready_timer;
  runner_result *results;
  loop *lp;
} runner_channel;

static runner_result *find_result(runner_channel *ch, long long id) {
  for (runner_result *r = ch->results; r; r = r->next)
    if (r->id == id) return r;
  return NULL;
}

static void free_result(runner_result *r) {
  loop_timer_stop(r->lp, &r->timer);
  capped_free(&r->out[DOCKER_STDOUT]);
  capped_free(&r->out[DOCKER_STDERR]);
  buf_free(&r->failure);
  free(r);
}

static void result_timer(loop_timer *t) {
  runner_result *r = (runner_result *)((char *)t - offsetof(runner_result, timer));
  wait_slot_complete(&r->slot);
}

static void result_cancel(wait_slot *slot) {
  runner_result *r = (runner_result *)((char *)slot - offsetof(runner_result, slot));
  loop_timer_stop(r->lp, &r->timer);
}

static void on_runner_ready(void *ctx, const char *version) {
  (void)version;
  runner_channel *ch = ctx;
  ch->ready = 1;
  wait_slot_complete(&ch->ready_slot);
}

static void on_runner_output(void *ctx, long long id, int stream, const char *data, size_t n) {
  runner_result *r = find_result(ctx, id);
  if (r) capped_write(&r->out[stream], data, n);
}

static void on_runner_failed(void *ctx, long long id, const char *data, size_t n) {
  runner_result *r = find_result(ctx, id);
  if (r) buf_append(&r->failure, data, n);
}

static void on_runner_exited(void *ctx, long long id, int code, const char *flags) {
  runner_result *r = find_result(ctx, id);
  if (!r) return;
  r->done = 1;
  r->code = code;
  snprintf(r->flags, sizeof r->flags, "%s", flags);
  loop_timer_stop(r->lp, &r->timer);
  wait_slot_complete(&r->slot);
}

static const runner_events RUNNER_EVENTS = {on_runner_ready, on_runner_output, on_runner_failed,
                                            on_runner_exited};

static void channel_closed(runner_channel *ch, const char *why) {
  if (ch->closed) return;
  ch->closed = 1;
  snprintf(ch->reason, sizeof ch->reason, "%s", why ? why : "the runner ended");
  loop_timer_stop(ch->lp, &ch->ready_timer);
  wait_slot_complete(&ch->ready_slot);
  for (runner_result *r = ch->results; r; r = r->next) {
    loop_timer_stop(ch->lp, &r->timer);
    wait_slot_complete(&r->slot);
  }
}

static void attach_open(void *ctx) { (void)ctx; }

static int attach_data(void *ctx, int stream, const char *data, size_t n) {
  runner_channel *ch = ctx;
  if (stream == DOCKER_STDERR) return capped_write(&ch->diagnostics, data, n);
  if (runner_parser_feed(&ch->parser, data, n, &RUNNER_EVENTS, ch) != 0) {
    char why[300];
    snprintf(why, sizeof why, "the runner said something outside its protocol: %.200s",
             ch->parser.line.data ? ch->parser.line.data : "");
    channel_closed(ch, why);
    return -1;
  }
  return 0;
}

static void attach_close(void *ctx, const char *why) { channel_closed(ctx, why); }

static const attach_callbacks ATTACH_CALLBACKS = {attach_open, attach_data, attach_close};

static runner_channel *check_channel(lua_State *L) { return luaL_checkudata(L, 1, CHANNEL_CLASS); }

static void channel_release(runner_channel *ch) {
  docker_attach_free(ch->attach);
  ch->attach = NULL;
  channel_closed(ch, "closed by the host");
  loop_timer_stop(ch->lp, &ch->ready_timer);
  while (ch->results) {
    runner_result *next = ch->results->next;
    free_result(ch->results);
    ch->results = next;
  }
  runner_parser_free(&ch->parser);
  capped_free(&ch->diagnostics);
}

static int channel_gc(lua_State *L) {
  channel_release(check_channel(L));
  return 0;
}

/* Pushes nil, {kind = "runner", message}: why the runner is gone, with the
 * end of what it printed on stderr. */
static int channel_failure(lua_State *L, runner_channel *ch) {
  buf diag = BUF_INIT;
  capped_result(&ch->diagnostics, &diag);
  const char *tail = diag.len > 400 ? diag.data + diag.len - 400 : diag.data;
  luagent_fail(L, "runner", "the sandbox runner is gone: %s%s%s", ch->reason, diag.len ? "; it said: " : "",
               diag.len ? tail : "");
  buf_free(&diag);
  return 2;
}

static void ready_timeout(loop_timer *t) {
  runner_channel *ch = (runner_channel *)((char *)t - offsetof(runner_channel, ready_timer));
  if (!ch->ready) channel_closed(ch, "it did not say it was ready in time");
}

static int runner_ready_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  runner_channel *ch = (runner_channel *)ctx;
  luagent_check_cancelled(L, &ch->ready_slot);
  loop_timer_stop(ch->lp, &ch->ready_timer);
  if (!ch->ready) return channel_failure(L, ch);
  lua_settop(L, 2);
  return 1;
}

/* engine_io.runner{unix_socket, path, body, timeout} -> channel | nil, err */
static int l_runner(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *socket_path = opt_string(L, 1, "unix_socket", NULL, NULL);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  const char *body = opt_string(L, 1, "body", "{\"Detach\":false,\"Tty\":false}", NULL);
  luaL_argcheck(L, socket_path && path, 1, "options 'unix_socket' and 'path' are required");
  runner_channel *ch = lua_newuserdatauv(L, sizeof *ch, 0);
  memset(ch, 0, sizeof *ch);
  luaL_setmetatable(L, CHANNEL_CLASS);
  ch->lp = host_of(L)->loop;
  runner_parser_init(&ch->parser);
  capped_init(&ch->diagnostics, 65536);
  wait_slot_init(&ch->ready_slot, NULL);
  loop_timer_init(&ch->ready_timer, ready_timeout);
  char err[512];
  ch->attach = docker_attach_start(ch->lp, socket_path, path, body, &ATTACH_CALLBACKS, ch, err, sizeof err);
  if (!ch->attach) return luagent_fail(L, "docker_unreachable", "%s", err);
  loop_timer_start(ch->lp, &ch->ready_timer, opt_number(L, 1, "timeout", 15));
  return host_await(L, &ch->ready_slot, (lua_KContext)ch, runner_ready_k);
}

/* channel:send(id, message [, max_output]) -> true | nil, err */
static int l_channel_send(lua_State *L) {
  runner_channel *ch = check_channel(L);
  long long id = luaL_checkinteger(L, 2);
  size_t n;
  const char *message = luaL_checklstring(L, 3, &n);
  size_t cap = (size_t)luaL_optinteger(L, 4, 1 << 20);
  if (ch->closed) return channel_failure(L, ch);
  if (id > 0 && !find_result(ch, id)) {
    runner_result *r = calloc(1, sizeof *r);
    if (!r) return luaL_error(L, "out of memory");
    r->id = id;
    r->lp = ch->lp;
    capped_init(&r->out[DOCKER_STDOUT], cap);
    capped_init(&r->out[DOCKER_STDERR], cap);
    wait_slot_init(&r->slot, result_cancel);
    loop_timer_init(&r->timer, result_timer);
    r->next = ch->results;
    ch->results = r;
  }
  if (docker_attach_write(ch->attach, message, n) != 0) return channel_failure(L, ch);
  lua_pushboolean(L, 1);
  return 1;
}

static int channel_wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  runner_result *r = (runner_result *)ctx;
  luagent_check_cancelled(L, &r->slot);
  loop_timer_stop(r->lp, &r->timer);
  runner_channel *ch = check_channel(L);
  if (r->done) {
    lua_pushboolean(L, 1);
    return 1;
  }
  if (ch->closed) return channel_failure(L, ch);
  lua_pushboolean(L, 0);
  return 1;
}

/* channel:wait(id [, seconds]) -> true | false | nil, err */
static int l_channel_wait(lua_State *L) {
  runner_channel *ch = check_channel(L);
  runner_result *r = find_result(ch, luaL_checkinteger(L, 2));
  lua_Number seconds = luaL_optnumber(L, 3, -1);
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  lua_settop(L, 1);
  if (r->done || ch->closed) return channel_wait_k(L, LUA_OK, (lua_KContext)r);
  wait_slot_init(&r->slot, result_cancel);
  if (seconds >= 0) loop_timer_start(ch->lp, &r->timer, seconds);
  return host_await(L, &r->slot, (lua_KContext)r, channel_wait_k);
}

/* channel:result(id) -> {...}; forgets the id */
static int l_channel_result(lua_State *L) {
  runner_channel *ch = check_channel(L);
  long long id = luaL_checkinteger(L, 2);
  runner_result **link = &ch->results;
  while (*link && (*link)->id != id) link = &(*link)->next;
  runner_result *r = *link;
  luaL_argcheck(L, r != NULL, 2, "no command with this id was sent");
  *link = r->next;
  int truncated = 0;
  lua_createtable(L, 0, 8);
  set_output(L, &r->out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  set_output(L, &r->out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
  lua_pushboolean(L, truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushboolean(L, r->done);
  lua_setfield(L, -2, "done");
  if (r->done) {
    lua_pushinteger(L, r->code);
    lua_setfield(L, -2, "exit_code");
    lua_pushstring(L, r->flags);
    lua_setfield(L, -2, "flags");
  }
  if (r->failure.len) {
    lua_pushlstring(L, r->failure.data, r->failure.len);
    lua_setfield(L, -2, "failure");
  }
  free_result(r);
  return 1;
}

static int l_channel_alive(lua_State *L) {
  runner_channel *ch = check_channel(L);
  lua_pushboolean(L, !ch->closed);
  if (!ch->closed) return 1;
  lua_pushstring(L, ch->reason);
  return 2;
}

/* Closes the connection; results stay readable until the channel is collected
 * (a task may still be returning from wait()). */
static int l_channel_close(lua_State *L) {
  runner_channel *ch = check_channel(L);
  docker_attach_free(ch->attach);
  ch->attach = NULL;
  channel_closed(ch, "closed by the host");
  return 0;
}

int luaopen_luagent_engine_io(lua_State *L) {
  static const luaL_Reg stream_methods[] = {{"wait", l_stream_wait},   {"result", l_stream_result},
                                            {"abort", l_stream_abort}, {"__gc", stream_gc},
                                            {"__close", stream_gc},    {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"endpoint", l_endpoint},       {"exec_start", l_exec_start},
                                   {"put_archive", l_put_archive}, {"get_archive", l_get_archive},
                                   {"save_archive", l_save_archive}, {"read_file", l_read_file},
                                   {"runner", l_runner}, {NULL, NULL}};
  luaL_requiref(L, "luagent.tar", luaopen_luagent_tar, 0); /* the writer/extract classes */
  lua_pop(L, 1);
  luagent_new_class(L, STREAM_CLASS, stream_methods);
  static const luaL_Reg channel_methods[] = {{"send", l_channel_send},     {"wait", l_channel_wait},
                                             {"result", l_channel_result}, {"alive", l_channel_alive},
                                             {"close", l_channel_close},   {"__gc", channel_gc},
                                             {NULL, NULL}};
  luagent_new_class(L, CHANNEL_CLASS, channel_methods);
  if (luaL_newmetatable(L, JOB_CLASS)) {
    lua_pushcfunction(L, job_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
