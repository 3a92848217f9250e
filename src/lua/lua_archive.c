/* lua_archive: the archive endpoints of luagent.engine_stream — files in and out
 * of a container as tar streams, never whole in memory.
 *
 *   engine_stream.put_archive(opts) -> true | nil, err   opts.entries (see luagent.tar),
 *       opts.uid/gid own the files; streamed with an exact Content-Length
 *   engine_stream.get_archive(opts) -> report | nil, err  extracts safely into opts.dest
 *       (opts.strip, max_bytes, max_entries as in tar.extract)
 *   engine_stream.save_archive(opts) -> bytes | nil, err  the raw tar into opts.path
 *       (at most opts.max_bytes; written to a temporary file, then renamed)
 *   engine_stream.read_file(opts) -> content | nil, err   the first file of the archive,
 *       at most opts.max_bytes
 *
 * Each call is a job: a handle (class "archive job") owning the transfer
 * (lhttp_perform) and its own small state — the tar writer of a put, the
 * extractor of a get, the temporary file of a save, the parser and content
 * of a read. A job lives for one call and is closed when it finishes; one
 * closed earlier (a cancelled task's, collected) stops its transfer and
 * frees its state, and its waiter raises "<call> job is closed". */
#include <lauxlib.h>

#include "file_sink.h"
#include "lua_docker_wire.h"
#include "lua_engine_stream.h"
#include "lua_http.h"
#include "lua_tar.h"
#include "lua_util.h"
#include "tar.h"

/* What every job starts with. */
typedef struct archive_job {
  lhttp_owner owner; /* first: the handle, and the transfer it owns */
  void (*release)(struct archive_job *j); /* frees the job's own state */
  int sink_failed;   /* the job's sink refused the bytes (it knows why) */
} archive_job;

typedef struct put_job {
  archive_job job;
  ltar_writer *writer; /* the stream being uploaded (also the job's user value) */
} put_job;

typedef struct get_job {
  archive_job job;
  ltar_extract *extract; /* safe extraction (also the job's user value) */
} get_job;

typedef struct save_job {
  archive_job job;
  file_sink sink; /* a temporary file beside the target, renamed at the end */
} save_job;

typedef struct read_job {
  archive_job job;
  tar_reader *reader;
  buf file;
  size_t entries_seen;
  size_t max_bytes;
  int is_folder;
  int too_large;
} read_job;

static int job_close(lua_State *L);
static int job_tostring(lua_State *L);
static const luaL_Reg NO_METHODS[] = {{NULL, NULL}};
static const luagent_handle_class JOB = {"luagent.engine_stream.archive_job", "archive job", NO_METHODS, job_close,
                                         job_tostring};

/* Also a half-built job's (its __gc): release frees what is there. */
static void close_job(archive_job *j) {
  if (!luagent_handle_release(j)) return;
  lhttp_owner_close(&j->owner); /* stops a transfer still running */
  j->release(j);
}

/* Idempotent; never waits. */
static int job_close(lua_State *L) {
  close_job(luagent_check_handle(L, 1, &JOB));
  return 0;
}

static int job_tostring(lua_State *L) {
  archive_job *j = luagent_check_handle(L, 1, &JOB);
  lua_pushfstring(L, "%s (%s)", j->owner.what, j->owner.handle.closed ? "closed" : "open");
  return 1;
}

/* Pushes a new job of `size` bytes named `what` (e.g. "put_archive job"),
 * closed until its call has built it and starts the transfer (start_job). */
static void *new_job(lua_State *L, size_t size, const char *what, void (*release)(archive_job *)) {
  archive_job *j = luagent_new_handle(L, &JOB, size, 1);
  j->owner.what = what;
  j->release = release;
  return j;
}

/* The job is built: opens it and runs req's transfer for it (on top). */
static int start_job(lua_State *L, archive_job *j, http_request *req, const http_sink *sink,
                     lhttp_finish_fn finish) {
  luagent_handle_open(j);
  return lhttp_perform(L, 1, req, sink, finish, lua_gettop(L));
}

/* The finish step's results, after the job let go of what it holds. */
static int finished(archive_job *j, int nresults) {
  close_job(j);
  return nresults;
}

/* The engine refused, or the transfer broke (even after a 200: a cut
 * archive is not a complete one): pushes nil, err; returns 2, else 0. */
static int engine_failed(lua_State *L, http_xfer *x, archive_job *j) {
  if (j->sink_failed) return 0; /* the sink knows better what went wrong */
  if (!lwire_is_success(http_status(x))) return lwire_push_failure(L, x);
  if (http_failed(x)) return lhttp_push_failure(L, x);
  return 0;
}

static int get_with_sink(lua_State *L, archive_job *j, size_t (*write)(void *, const char *, size_t),
                         lhttp_finish_fn finish) {
  http_request req;
  lhttp_read_options(L, 1, &req);
  req.method = "GET";
  req.sink_success_only = 1;
  http_sink sink = {write, j};
  return start_job(L, j, &req, &sink, finish);
}

/* ---- put: upload a tar built from entries ---- */

static void put_release(archive_job *j) {
  put_job *put = (put_job *)j;
  if (put->writer) ltar_writer_close(put->writer);
}

static size_t put_source(void *ctx, char *dst, size_t n) {
  put_job *j = ctx;
  if (j->writer->handle.closed) return (size_t)-1;
  return tar_writer_read(j->writer->w, dst, n);
}

static int put_finish(lua_State *L, http_xfer *x, lhttp_owner *owner) {
  put_job *j = (put_job *)owner;
  const char *werr = tar_writer_error(ltar_writer_check(L, j->writer));
  if (werr && werr[0]) return finished(&j->job, luagent_fail(L, "io", "staging failed: %s", werr));
  int n = engine_failed(L, x, &j->job);
  if (n) return finished(&j->job, n);
  lua_pushboolean(L, 1);
  return finished(&j->job, 1);
}

/* engine_stream.put_archive(opts) -> true | nil, err */
int larchive_put(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  http_request req;
  lhttp_read_options(L, 1, &req);
  unsigned uid = (unsigned)opt_integer(L, 1, "uid", 0), gid = (unsigned)opt_integer(L, 1, "gid", 0);
  lua_getfield(L, 1, "entries");
  ltar_writer *writer = ltar_writer_from_entries(L, 2, uid, gid);
  if (!writer) return 2;
  put_job *j = new_job(L, sizeof *j, "put_archive job", put_release);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1);
  j->writer = writer;
  http_source source = {put_source, j, tar_writer_size(writer->w)};
  req.method = "PUT";
  req.body_source = &source;
  return start_job(L, &j->job, &req, NULL, put_finish);
}

/* ---- get: extract safely onto the host ---- */

static void get_release(archive_job *j) {
  get_job *get = (get_job *)j;
  if (get->extract) ltar_extract_close(get->extract);
}

static size_t get_sink(void *ctx, const char *data, size_t n) {
  get_job *j = ctx;
  if (!j->extract->handle.closed && tar_extract_feed(j->extract->x, data, n) == 0) return n;
  j->job.sink_failed = 1;
  return 0;
}

static int get_finish(lua_State *L, http_xfer *x, lhttp_owner *owner) {
  get_job *j = (get_job *)owner;
  int n = engine_failed(L, x, &j->job);
  if (n) return finished(&j->job, n);
  tar_extract *extract = ltar_extract_check(L, j->extract);
  if (j->job.sink_failed || tar_extract_finish(extract) != 0)
    return finished(&j->job, luagent_fail(L, "tar", "extraction failed: %s", tar_extract_error(extract)));
  ltar_push_report(L, extract);
  return finished(&j->job, 1);
}

/* engine_stream.get_archive(opts) -> report | nil, err */
int larchive_get(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *dest = opt_string(L, 1, "dest", NULL, NULL);
  luaL_argcheck(L, dest != NULL, 1, "option 'dest' is required");
  ltar_extract *extract = ltar_extract_new(L, dest, 1);
  if (!extract) return 2;
  get_job *j = new_job(L, sizeof *j, "get_archive job", get_release);
  lua_pushvalue(L, -2);
  lua_setiuservalue(L, -2, 1);
  j->extract = extract;
  return get_with_sink(L, &j->job, get_sink, get_finish);
}

/* ---- save: the raw tar into a file ---- */

static void save_release(archive_job *job) { file_sink_discard(&((save_job *)job)->sink); }

static size_t save_sink(void *ctx, const char *data, size_t n) {
  save_job *j = ctx;
  if (file_sink_write(&j->sink, data, n) == 0) return n;
  j->job.sink_failed = 1;
  return 0;
}

static int save_finish(lua_State *L, http_xfer *x, lhttp_owner *owner) {
  save_job *j = (save_job *)owner;
  int n = engine_failed(L, x, &j->job);
  if (n) return finished(&j->job, n);
  if (j->job.sink_failed) return finished(&j->job, luagent_fail(L, "io", "cannot write the archive: %s", j->sink.error));
  if (file_sink_commit(&j->sink) != 0) return finished(&j->job, luagent_fail(L, "io", "%s", j->sink.error));
  lua_pushinteger(L, (lua_Integer)j->sink.written);
  return finished(&j->job, 1);
}

/* engine_stream.save_archive(opts) -> bytes | nil, err */
int larchive_save(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  const char *path = opt_string(L, 1, "path", NULL, NULL);
  luaL_argcheck(L, path != NULL, 1, "option 'path' is required");
  long long limit = (long long)opt_integer(L, 1, "max_bytes", 0);
  save_job *j = new_job(L, sizeof *j, "save_archive job", save_release);
  j->sink.fd = -1; /* before anything can raise: the close reads it */
  /* written beside the target and renamed at the end: a broken transfer
   * never replaces a good snapshot with half of one */
  if (file_sink_open(&j->sink, path, limit) != 0) return luagent_fail(L, "io", "%s", j->sink.error);
  return get_with_sink(L, &j->job, save_sink, save_finish);
}

/* ---- read_file: the first file of the archive, in memory ---- */

static void read_release(archive_job *job) {
  read_job *j = (read_job *)job;
  tar_reader_free(j->reader);
  j->reader = NULL;
  buf_free(&j->file);
}

static size_t read_sink(void *ctx, const char *data, size_t n) {
  read_job *j = ctx;
  if (tar_reader_feed(j->reader, data, n) == 0) return n;
  j->job.sink_failed = 1;
  return 0;
}

/* The archive of one file holds that file first; a folder's starts with the
 * folder itself, and then no file in it is the answer. */
static int first_file_entry(void *ctx, const tar_entry_info *e) {
  read_job *j = ctx;
  if (j->entries_seen++ == 0 && e->type == '5') j->is_folder = 1;
  if (j->is_folder || e->type != '0' || j->file.data) return 1; /* only the first regular file */
  buf_append(&j->file, "", 0);
  return 0;
}

static int first_file_data(void *ctx, const char *data, size_t n) {
  read_job *j = ctx;
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

static int read_result(lua_State *L, read_job *j) {
  if (j->too_large) return luagent_fail(L, "too_large", "the file is larger than %zu bytes", j->max_bytes);
  if (j->job.sink_failed || tar_reader_finish(j->reader) != 0)
    return luagent_fail(L, "tar", "bad archive from the engine: %s", tar_reader_error(j->reader));
  if (j->is_folder) return luagent_fail(L, "not_a_file", "it is a folder, not a file");
  if (!j->file.data) return luagent_fail(L, "not_a_file", "not a regular file");
  lua_pushlstring(L, j->file.data, j->file.len);
  return 1;
}

static int read_finish(lua_State *L, http_xfer *x, lhttp_owner *owner) {
  read_job *j = (read_job *)owner;
  int n = engine_failed(L, x, &j->job);
  return finished(&j->job, n ? n : read_result(L, j));
}

/* engine_stream.read_file(opts) -> content | nil, err */
int larchive_read_file(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  read_job *j = new_job(L, sizeof *j, "read_file job", read_release);
  j->max_bytes = (size_t)opt_integer(L, 1, "max_bytes", 64 << 20);
  static const tar_reader_callbacks cb = {first_file_entry, first_file_data, no_entry_end};
  j->reader = tar_reader_new(&cb, j);
  if (!j->reader) return luaL_error(L, "out of memory");
  return get_with_sink(L, &j->job, read_sink, read_finish);
}

void larchive_register(lua_State *L) { luagent_register_handle(L, &JOB); }
