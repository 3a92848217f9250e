/* lua_process: luagent.process — child processes for Lua tasks (the core is
 * process.c). Low-level: the watcher (`luagent run --watch`) and stdio
 * servers use it; a recipe runs its code in a sandbox instead.
 *
 *   process.spawn{argv = {"prog", "arg"...}, env = {NAME = value} | nil (inherit),
 *                 cwd = DIR, stdin = "pipe" | "null" | "inherit",
 *                 stdout = ..., stderr = ... (each "inherit" by default),
 *                 new_group = false}
 *       -> proc | nil, err     err.kind: not_found (the program, named), permission, io
 *   process.environ()          -> {NAME = value} of this process's environment
 *
 *   proc:write(data)           -> true | nil, err (io: the child closed its stdin)
 *                                 yields until every byte is written
 *   proc:close_stdin()         the child reads end-of-file; idempotent
 *   proc:read(stream [, max])  -> data (at most max bytes, default 65536)
 *                                 | nil at end-of-file; stream "stdout" | "stderr"
 *   proc:wait([timeout])       -> exit_code, signal | nil, err (timeout)
 *                                 exit_code is 128 + N when signal N ended it
 *                                 (signal: its number, else nil)
 *   proc:kill([sig])           -> true | false (nobody was there); sig "TERM"
 *                                 (default), "INT", "KILL", ... or a number; to
 *                                 the whole group with new_group
 *   proc:pid()                 -> integer
 *   proc:close()               also <close> and __gc; idempotent
 *   tostring(proc)             "process 123 'prog' (running | exited 0 | killed by TERM | closed)"
 *
 * read, write and wait yield inside a task (elsewhere they drive the loop),
 * so many processes run at once from many tasks; one task at a time may read
 * a stream and one may write stdin (a second raises), any number may wait.
 * A child's end is noticed through its pidfd, or where Linux has none
 * through the SIGCHLD self-pipe (process.h); reaping is by pid only.
 *
 * Handle discipline: close() kills a running child (SIGKILL, to its whole
 * group with new_group; a group is killed even after its leader ended, so
 * nothing it started lives on), closes our pipe ends, wakes every task
 * waiting on it with nil, err (kind closed), and reaps it — at once when it
 * is already gone, else as soon as the loop sees it end (a closed handle's
 * process is kept until then, and at the latest killed and let go when the
 * Lua state closes). The same close is __gc: a kill and a non-blocking
 * reap, never a wait. After close every method but close raises
 * "process is closed".
 *
 * For the tests only: spawn option `_no_pidfd = true` takes the SIGCHLD
 * path even where Linux has pidfds.
 *
 * This file is the module and the handle's methods; a spawned process's
 * waits, watches and reaping are lua_process_entry.c (lua_process.h). */
#include <errno.h>
#include <lauxlib.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "lua_process.h"

extern char **environ;

typedef struct lprocess {
  luagent_handle handle;
  proc_entry *e;
} lprocess;

static const char REGISTRY_CLASS[] = "luagent.process.registry";
static const char *const STREAMS[] = {"stdin", "stdout", "stderr", NULL};

static int proc_close(lua_State *L);
static int proc_tostring(lua_State *L);
static int l_proc_write(lua_State *L);
static int l_proc_close_stdin(lua_State *L);
static int l_proc_read(lua_State *L);
static int l_proc_wait(lua_State *L);
static int l_proc_kill(lua_State *L);
static int l_proc_pid(lua_State *L);

static const luaL_Reg PROC_METHODS[] = {{"write", l_proc_write}, {"close_stdin", l_proc_close_stdin},
                                        {"read", l_proc_read},   {"wait", l_proc_wait},
                                        {"kill", l_proc_kill},   {"pid", l_proc_pid},
                                        {NULL, NULL}};
static const luagent_handle_class PROC = {"luagent.process", "process", PROC_METHODS, proc_close, proc_tostring};

/* ---- the handle ---- */

static proc_entry *check_proc(lua_State *L) { return ((lprocess *)luagent_check_open(L, 1, &PROC))->e; }

static int proc_close(lua_State *L) {
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (!luagent_handle_release(h)) return 0;
  if (h->e) pentry_close(h->e);
  h->e = NULL;
  return 0;
}

static int proc_tostring(lua_State *L) {
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (!h->e) {
    lua_pushstring(L, "process (closed)");
    return 1;
  }
  process *p = &h->e->p;
  process_reap(p);
  if (!p->reaped) {
    lua_pushfstring(L, "process %d '%s' (running)", (int)p->pid, h->e->name);
  } else if (p->signal) {
    const char *name = process_signal_name(p->signal);
    if (name) lua_pushfstring(L, "process %d '%s' (killed by %s)", (int)p->pid, h->e->name, name);
    else lua_pushfstring(L, "process %d '%s' (killed by signal %d)", (int)p->pid, h->e->name, p->signal);
  } else {
    lua_pushfstring(L, "process %d '%s' (exited %d)", (int)p->pid, h->e->name, p->exit_code);
  }
  return 1;
}

/* The start of every continuation: the op stops waiting, a cancelled wait
 * raises, and a handle closed meanwhile is nil, err (kind closed) saying
 * what the task was `doing`. Returns the entry, or NULL with nil, err pushed. */
static proc_entry *resume_op(lua_State *L, proc_op *op, const char *doing) {
  pentry_op_detach(op);
  sched_check_cancelled(L, &op->slot);
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (!h->handle.closed) return h->e;
  luagent_fail(L, "closed", "the process handle was closed while %s", doing);
  return NULL;
}

/* ---- write ---- */

static int write_k(lua_State *L, int status, lua_KContext ctx);

/* Writes what is left of the string at 2; waits when the pipe is full. */
static int write_some(lua_State *L, proc_entry *e, proc_op *op) {
  size_t len;
  const char *data = lua_tolstring(L, 2, &len);
  while (op->written < len) {
    ssize_t n = write(e->p.fd[0], data + op->written, len - op->written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (pentry_wait_for_io(e, op, 0, POLLOUT) != 0)
        return luagent_fail(L, "io", "cannot wait for process '%s': out of memory", e->name);
      return sched_await(L, &op->slot, (lua_KContext)op, write_k);
    }
    if (n < 0 && errno == EPIPE)
      return luagent_fail(L, "io", "process '%s' closed its stdin (it may have ended) after %zu of %zu bytes",
                          e->name, op->written, len);
    if (n < 0) return luagent_fail(L, "io", "writing to process '%s': %s", e->name, strerror(errno));
    op->written += (size_t)n;
  }
  lua_pushboolean(L, 1);
  return 1;
}

static int write_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  proc_op *op = (proc_op *)ctx;
  proc_entry *e = resume_op(L, op, "writing to its stdin");
  if (!e) return 2;
  if (e->p.fd[0] < 0) return luagent_fail(L, "closed", "stdin of process '%s' was closed while writing", e->name);
  return write_some(L, e, op);
}

/* proc:write(data) -> true | nil, err */
static int l_proc_write(lua_State *L) {
  proc_entry *e = check_proc(L);
  luaL_checkstring(L, 2);
  lua_settop(L, 2);
  if (!e->piped[0]) return luaL_error(L, "process '%s': stdin is not a pipe (spawn it with stdin = \"pipe\")", e->name);
  if (e->p.fd[0] < 0) return luaL_error(L, "process '%s': stdin is closed (close_stdin was called)", e->name);
  if (e->io_op[0]) return luaL_error(L, "process '%s': another task is writing to its stdin", e->name);
  return write_some(L, e, pentry_new_op(L, e, 0));
}

/* proc:close_stdin() */
static int l_proc_close_stdin(lua_State *L) {
  proc_entry *e = check_proc(L);
  if (e->io_op[0]) pentry_op_wake(e->io_op[0]);
  process_close_stream(&e->p, 0);
  return 0;
}

/* ---- read ---- */

static int read_k(lua_State *L, int status, lua_KContext ctx);

/* Reads from stream (at 2; max at 3); waits while nothing is there. */
static int read_some(lua_State *L, proc_entry *e, int stream, proc_op *op) {
  size_t max = (size_t)lua_tointeger(L, 3);
  int fd = e->p.fd[stream];
  if (fd < 0) {
    lua_pushnil(L);
    return 1;
  }
  luaL_Buffer b;
  char *dst = luaL_buffinitsize(L, &b, max);
  ssize_t n;
  while ((n = read(fd, dst, max)) < 0 && errno == EINTR) {
  }
  if (n > 0) {
    luaL_pushresultsize(&b, (size_t)n);
    return 1;
  }
  luaL_pushresultsize(&b, 0);
  lua_pop(L, 1);
  if (n == 0) {
    process_close_stream(&e->p, stream);
    lua_pushnil(L);
    return 1;
  }
  if (errno != EAGAIN && errno != EWOULDBLOCK)
    return luagent_fail(L, "io", "reading %s of process '%s': %s", STREAMS[stream], e->name, strerror(errno));
  if (!op) op = pentry_new_op(L, e, stream);
  if (pentry_wait_for_io(e, op, stream, POLLIN) != 0)
    return luagent_fail(L, "io", "cannot wait for process '%s': out of memory", e->name);
  return sched_await(L, &op->slot, (lua_KContext)op, read_k);
}

static int read_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  proc_op *op = (proc_op *)ctx;
  proc_entry *e = resume_op(L, op, op->kind == 1 ? "reading its stdout" : "reading its stderr");
  return e ? read_some(L, e, op->kind, op) : 2;
}

/* proc:read(stream [, max]) -> data | nil */
static int l_proc_read(lua_State *L) {
  proc_entry *e = check_proc(L);
  int stream = luaL_checkoption(L, 2, NULL, STREAMS);
  lua_Integer max = luaL_optinteger(L, 3, 65536);
  luaL_argcheck(L, stream != 0, 2, "read \"stdout\" or \"stderr\" (stdin is written)");
  luaL_argcheck(L, max > 0 && max <= (1 << 26), 3, "max must be between 1 and 64 MiB");
  if (!e->piped[stream])
    return luaL_error(L, "process '%s': %s is not a pipe (spawn it with %s = \"pipe\")", e->name, STREAMS[stream],
                      STREAMS[stream]);
  if (e->io_op[stream]) return luaL_error(L, "process '%s': another task is reading its %s", e->name, STREAMS[stream]);
  lua_settop(L, 2);
  lua_pushinteger(L, max);
  return read_some(L, e, stream, NULL);
}

/* ---- wait, kill, pid ---- */

static int push_exit(lua_State *L, const process *p) {
  lua_pushinteger(L, p->exit_code);
  if (p->signal) lua_pushinteger(L, p->signal);
  else lua_pushnil(L);
  return 2;
}

static int wait_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  proc_op *op = (proc_op *)ctx;
  proc_entry *e = resume_op(L, op, "waiting for it");
  if (!e) return 2;
  if (process_reap(&e->p)) return push_exit(L, &e->p);
  if (op->timed_out)
    return luagent_fail(L, "timeout", "process '%s' (pid %d) still runs after %g s", e->name, (int)e->p.pid,
                        lua_tonumber(L, 2));
  return luagent_fail(L, "io", "process '%s': woken without an end or a timeout", e->name);
}

/* proc:wait([timeout]) -> exit_code, signal | nil, err */
static int l_proc_wait(lua_State *L) {
  proc_entry *e = check_proc(L);
  lua_Number timeout = luaL_optnumber(L, 2, -1);
  lua_settop(L, 2);
  if (process_reap(&e->p)) return push_exit(L, &e->p);
  proc_op *op = pentry_new_op(L, e, OP_EXIT);
  if (pentry_wait_for_exit(e, op) != 0)
    return luagent_fail(L, "io", "cannot wait for process '%s': no way to watch it end", e->name);
  if (process_reap(&e->p)) { /* it ended before the watch started */
    pentry_op_detach(op);
    return push_exit(L, &e->p);
  }
  if (timeout >= 0) loop_timer_start(op->lp, &op->timer, timeout);
  return sched_await(L, &op->slot, (lua_KContext)op, wait_k);
}

/* proc:kill([sig]) -> true | false */
static int l_proc_kill(lua_State *L) {
  proc_entry *e = check_proc(L);
  int sig = SIGTERM;
  if (lua_type(L, 2) == LUA_TNUMBER) {
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_argcheck(L, n > 0 && n < NSIG, 2, "not a signal number");
    sig = (int)n;
  } else if (!lua_isnoneornil(L, 2)) {
    sig = process_signal_number(luaL_checkstring(L, 2));
    luaL_argcheck(L, sig != 0, 2, "unknown signal (use \"TERM\", \"INT\", \"KILL\", ... or a number)");
  }
  process_reap(&e->p);
  lua_pushboolean(L, process_kill(&e->p, sig));
  return 1;
}

static int l_proc_pid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_proc(L)->p.pid);
  return 1;
}

/* ---- spawn ---- */

static process_stdio check_stdio(lua_State *L, const char *field) {
  static const char *const MODES[] = {"inherit", "pipe", "null", NULL};
  const char *mode = opt_string(L, 1, field, "inherit", NULL);
  for (int i = 0; MODES[i]; i++)
    if (strcmp(mode, MODES[i]) == 0) return (process_stdio)i;
  return (process_stdio)luaL_error(L, "option '%s' must be \"pipe\", \"null\" or \"inherit\", not '%s'", field, mode);
}

/* Pushes a userdata array of `n` + 1 string pointers (NULL-terminated) into
 * the strings of the table at `t`, which must stay on the stack. */
static const char **string_array(lua_State *L, int t, int n) {
  const char **a = lua_newuserdatauv(L, sizeof(char *) * ((size_t)n + 1), 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, t, i);
    a[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1); /* the table keeps the string */
  }
  a[n] = NULL;
  return a;
}

/* The argv option as a list of strings (numbers converted), on the stack. */
static int check_argv(lua_State *L) {
  if (lua_getfield(L, 1, "argv") != LUA_TTABLE) luaL_error(L, "option 'argv' must be a list of strings: {\"prog\", ...}");
  int argv = lua_gettop(L);
  int n = (int)lua_rawlen(L, argv);
  if (n == 0) luaL_error(L, "option 'argv' is empty: name the program to run");
  lua_createtable(L, n, 0);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, argv, i);
    if (!lua_isstring(L, -1)) luaL_error(L, "option 'argv': item %d is a %s, not a string", i, luaL_typename(L, -1));
    lua_tostring(L, -1);
    lua_rawseti(L, -2, i);
  }
  lua_remove(L, argv);
  return n;
}

/* The env option as a list of "NAME=value" strings on the stack; -1 without one. */
static int check_env(lua_State *L) {
  int type = lua_getfield(L, 1, "env");
  if (type == LUA_TNIL) {
    lua_pop(L, 1);
    return -1;
  }
  if (type != LUA_TTABLE) luaL_error(L, "option 'env' must be a table {NAME = value} or nil (inherit)");
  int env = lua_gettop(L);
  lua_newtable(L);
  int n = 0;
  lua_pushnil(L);
  while (lua_next(L, env)) {
    if (lua_type(L, -2) != LUA_TSTRING || !lua_isstring(L, -1) || strchr(lua_tostring(L, -2), '='))
      luaL_error(L, "option 'env': every entry must be NAME = \"value\" (a name without '=')");
    lua_pushfstring(L, "%s=%s", lua_tostring(L, -2), lua_tostring(L, -1));
    lua_rawseti(L, env + 1, ++n);
    lua_pop(L, 1);
  }
  lua_remove(L, env);
  return n;
}

static proc_registry *registry_of(lua_State *L) {
  return luaL_checkudata(L, lua_upvalueindex(1), REGISTRY_CLASS);
}

static const char *failure_kind(int code) {
  if (code == ENOENT || code == ENOTDIR) return "not_found";
  if (code == EACCES || code == EPERM) return "permission";
  return "io";
}

/* process.spawn{...} -> proc | nil, err */
static int l_spawn(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_settop(L, 1);
  proc_registry *reg = registry_of(L);
  process_options o;
  memset(&o, 0, sizeof o);
  int argc = check_argv(L); /* 2: the argv strings */
  o.argv = string_array(L, 2, argc);
  int envc = check_env(L);
  if (envc >= 0) o.envp = string_array(L, lua_gettop(L), envc);
  o.cwd = opt_string(L, 1, "cwd", NULL, NULL);
  o.stdio[0] = check_stdio(L, "stdin");
  o.stdio[1] = check_stdio(L, "stdout");
  o.stdio[2] = check_stdio(L, "stderr");
  o.new_group = opt_boolean(L, 1, "new_group", 0);
  o.no_pidfd = opt_boolean(L, 1, "_no_pidfd", 0);
  lprocess *h = luagent_new_handle(L, &PROC, sizeof *h, 0); /* first, and closed: nothing to lose if it raises */
  process p;
  char err[512];
  int code = process_spawn(&p, &o, err, sizeof err);
  if (code) {
    lua_pushnil(L);
    luagent_push_error(L, failure_kind(code), "%s", err);
    luagent_error_set_string(L, "program", o.argv[0]);
    return 2;
  }
  h->e = pentry_new(reg, &p, &o);
  if (!h->e) {
    process_kill(&p, SIGKILL);
    process_reap(&p);
    process_release(&p); /* not the handle's yet */
    return luaL_error(L, "out of memory");
  }
  luagent_handle_open(h);
  return 1;
}

/* process.environ() -> {NAME = value} */
static int l_environ(lua_State *L) {
  lua_newtable(L);
  for (char **v = environ; v && *v; v++) {
    const char *eq = strchr(*v, '=');
    if (!eq) continue;
    lua_pushlstring(L, *v, (size_t)(eq - *v));
    lua_pushstring(L, eq + 1);
    lua_rawset(L, -3);
  }
  return 1;
}

/* The Lua state closes: every process still known is killed and let go. */
static int registry_gc(lua_State *L) {
  pentry_close_all(luaL_checkudata(L, 1, REGISTRY_CLASS));
  return 0;
}

int luaopen_luagent_process(lua_State *L) {
  static const luaL_Reg funcs[] = {{"spawn", l_spawn}, {"environ", l_environ}, {NULL, NULL}};
  static const luaL_Reg registry_methods[] = {{"__gc", registry_gc}, {NULL, NULL}};
  luagent_register_handle(L, &PROC);
  pentry_register(L);
  luagent_new_class(L, REGISTRY_CLASS, registry_methods);
  luaL_newlibtable(L, funcs);
  proc_registry *reg = lua_newuserdatauv(L, sizeof *reg, 0);
  memset(reg, 0, sizeof *reg);
  reg->lp = host_of(L)->loop;
  luaL_setmetatable(L, REGISTRY_CLASS);
  luaL_setfuncs(L, funcs, 1);
  return 1;
}
