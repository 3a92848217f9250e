/* lua_docker: luagent.docker — the streaming parts of the Docker Engine API
 * client. JSON calls are plain http.request calls made by
 * lua/luagent/engine.lua; what must not pass through Lua strings chunk by
 * chunk is here.
 *
 *   docker.endpoint([docker_host]) -> {unix_socket, url, ca_file, cert_file,
 *       key_file, description} | nil, err      from DOCKER_HOST & co.
 *   docker.exec_start(opts) -> stream      POST /exec/ID/start; opts: http
 *       options (url, unix_socket, TLS, body) + max_output (bytes per stream)
 *     stream:wait([seconds]) -> true when the command's output ended,
 *                               false if the seconds passed first (yields)
 *     stream:result() -> {stdout, stderr, truncated, stdout_bytes, stderr_bytes}
 *                      | nil, err   (after wait returned true)
 *     stream:abort()    stop reading; result() then gives the output so far
 *   docker.put_archive(opts) -> true | nil, err   opts.entries (see luagent.tar),
 *       opts.uid/gid own the files; streamed with an exact Content-Length
 *   docker.get_archive(opts) -> report | nil, err  extracts safely into opts.dest
 *       (opts.strip as in tar.extract)
 *   docker.save_archive(opts) -> bytes | nil, err  the raw tar into opts.path
 *   docker.read_file(opts) -> content | nil, err   the first file of the archive,
 *       at most opts.max_bytes
 * Engine errors come back as {kind = "docker", status, message = the engine's
 * own message}. */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "docker.h"
#include "host.h"
#include "lua_http.h"
#include "lua_tar.h"
#include "lua_util.h"

static const char STREAM_CLASS[] = "luagent.docker.exec_stream";

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

/* ---- docker.endpoint ---- */

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
  docker_demux demux;
  int bad_frame;
  int aborted;      /* stopped by us: the output so far is the result */
  wait_slot slot;
  loop_timer timer;
  loop *lp;
} exec_stream;

static size_t exec_sink(void *ctx, const char *data, size_t n) {
  exec_stream *s = ctx;
  if (docker_demux_feed(&s->demux, data, n) != 0) {
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
  docker_demux_free(&s->demux);
  return 0;
}

/* docker.exec_start(opts) -> stream */
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
  docker_demux_init(&s->demux, cap);
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
  set_output(L, &s->demux.out[DOCKER_STDOUT], "stdout", "stdout_bytes", &truncated);
  set_output(L, &s->demux.out[DOCKER_STDERR], "stderr", "stderr_bytes", &truncated);
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
  int fd;              /* save: the target file */
  long long saved;
  tar_reader *reader;  /* read_file */
  buf file;
  size_t max_bytes;
  int too_large;
  int sink_failed;
  char sink_error[256];
} archive_job;

static const char JOB_CLASS[] = "luagent.docker.archive_job";

static int job_gc(lua_State *L) {
  archive_job *j = luaL_checkudata(L, 1, JOB_CLASS);
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
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

static int first_file_entry(void *ctx, const tar_entry_info *e) {
  archive_job *j = ctx;
  if (e->type != '0' || j->file.data) return 1; /* only the first regular file */
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

/* The engine refused, or the transfer broke: pushes nil, err; returns 2. */
static int engine_failed(lua_State *L, http_xfer *x, archive_job *j) {
  j->x = x;
  if (j->sink_failed) return 0; /* the sink knows better what went wrong */
  if (!is_success(http_status(x)) || (http_failed(x) && !http_status(x))) return push_engine_failure(L, x);
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

static int save_finish(lua_State *L, http_xfer *x, void *ud) {
  archive_job *j = ud;
  int n = engine_failed(L, x, j);
  if (n) return n;
  if (j->sink_failed) return luagent_fail(L, "io", "cannot write the archive: %s", j->sink_error);
  int rc = close(j->fd);
  j->fd = -1;
  if (rc != 0) return luagent_fail(L, "io", "cannot write the archive: %s", strerror(errno));
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

/* docker.put_archive(opts) -> true | nil, err */
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

/* docker.get_archive(opts) -> report | nil, err */
static int l_get_archive(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *dest = opt_string(L, 1, "dest", NULL, NULL);
  luaL_argcheck(L, dest != NULL, 1, "option 'dest' is required");
  tar_extract *x = ltar_extract_new(L, dest, opt_string(L, 1, "strip", NULL, NULL));
  if (!x) return 2;
  archive_job *j = new_job(L);
  j->extract = x;
  return get_with_sink(L, j, extract_sink, get_finish);
}

/* docker.save_archive(opts) -> bytes | nil, err */
static int l_save_archive(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  luaL_argcheck(L, path != NULL, 1, "option 'path' is required");
  archive_job *j = new_job(L);
  j->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (j->fd < 0) return luagent_fail(L, "io", "cannot create %s: %s", path, strerror(errno));
  return get_with_sink(L, j, save_sink, save_finish);
}

/* docker.read_file(opts) -> content | nil, err */
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

int luaopen_luagent_docker(lua_State *L) {
  static const luaL_Reg stream_methods[] = {{"wait", l_stream_wait},   {"result", l_stream_result},
                                            {"abort", l_stream_abort}, {"__gc", stream_gc},
                                            {"__close", stream_gc},    {NULL, NULL}};
  static const luaL_Reg funcs[] = {{"endpoint", l_endpoint},       {"exec_start", l_exec_start},
                                   {"put_archive", l_put_archive}, {"get_archive", l_get_archive},
                                   {"save_archive", l_save_archive}, {"read_file", l_read_file},
                                   {NULL, NULL}};
  luaL_requiref(L, "luagent.tar", luaopen_luagent_tar, 0); /* the writer/extract classes */
  lua_pop(L, 1);
  luagent_new_class(L, STREAM_CLASS, stream_methods);
  if (luaL_newmetatable(L, JOB_CLASS)) {
    lua_pushcfunction(L, job_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_pop(L, 1);
  luaL_newlib(L, funcs);
  return 1;
}
