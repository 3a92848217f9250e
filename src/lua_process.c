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
 * A child's end is noticed through its pidfd, or where the kernel has none
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
 * path even where the kernel has pidfds. */
#include <errno.h>
#include <lauxlib.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host.h"
#include "lua_util.h"
#include "process.h"

extern char **environ;

typedef struct proc_op proc_op;
typedef struct proc_registry proc_registry;
typedef struct proc_entry proc_entry;

/* A watch on one of our pipe ends, knowing whose it is. */
typedef struct io_watch {
  loop_watch w;
  proc_entry *e;
  int stream;
} io_watch;

/* One spawned process: the core state, the loop watches on its descriptors
 * and the tasks waiting for it. Heap-allocated: it outlives a closed handle
 * until the process is reaped. */
struct proc_entry {
  process p;
  proc_registry *reg;
  loop_watch exit_watch;  /* on the pidfd, while someone needs to know it ended */
  int exit_watching;
  io_watch io[3];         /* on our pipe ends, while a task waits for them */
  int piped[3];           /* the stream was a pipe (a closed one reads as EOF) */
  proc_op *io_op[3];      /* the task reading (1, 2) or writing (0) that stream */
  proc_op *exit_ops;      /* tasks waiting in wait() */
  int orphan;             /* the handle is closed: free it once reaped */
  char name[96];          /* argv[0], for messages */
  proc_entry *next;
};

/* Every entry of one Lua state, and the SIGCHLD watch shared by those
 * without a pidfd. Lives in the registry; freed (last) when the state closes. */
struct proc_registry {
  loop *lp;
  proc_entry *entries;
  loop_watch sigchld;
  int sigchld_users;
};

enum { OP_EXIT = 3 };

/* A task waiting on an entry: a userdata on that task's stack, so a wait
 * that is unwound (cancelled, the coroutine collected) detaches itself. */
struct proc_op {
  luagent_handle handle; /* closed: detached */
  wait_slot slot;
  loop_timer timer;
  loop *lp;
  proc_entry *e; /* NULL once detached */
  int kind;      /* a stream (0..2) or OP_EXIT */
  int timed_out;
  size_t written;
  proc_op *next; /* in e->exit_ops */
};

typedef struct lprocess {
  luagent_handle handle;
  proc_entry *e;
} lprocess;

static const char REGISTRY_CLASS[] = "luagent.process.registry";
static const char *const STREAMS[] = {"stdin", "stdout", "stderr", NULL};

static int proc_close(lua_State *L);
static int proc_tostring(lua_State *L);
static int op_close(lua_State *L);
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
static const luaL_Reg NO_METHODS[] = {{NULL, NULL}};
static const luagent_handle_class OP = {"luagent.process.wait", "process wait", NO_METHODS, op_close, NULL};

/* ---- waits ---- */

static void watch_exit(proc_entry *e);
static void unwatch_exit(proc_entry *e);

/* The op no longer waits: no watch, no timer, no link from the entry. */
static void op_detach(proc_op *op) {
  proc_entry *e = op->e;
  loop_timer_stop(op->lp, &op->timer);
  if (!e) return;
  op->e = NULL;
  if (op->kind == OP_EXIT) {
    for (proc_op **link = &e->exit_ops; *link; link = &(*link)->next) {
      if (*link == op) {
        *link = op->next;
        break;
      }
    }
    if (!e->exit_ops && !e->orphan) unwatch_exit(e);
  } else if (e->io_op[op->kind] == op) {
    e->io_op[op->kind] = NULL;
    loop_watch_stop(e->reg->lp, &e->io[op->kind].w);
  }
}

/* Detaches the op and lets its task run on (it looks at why itself). */
static void op_wake(proc_op *op) {
  op_detach(op);
  wait_slot_complete(&op->slot);
}

static void op_cancel(wait_slot *slot) { op_detach((proc_op *)((char *)slot - offsetof(proc_op, slot))); }

static void op_timer(loop_timer *t) {
  proc_op *op = (proc_op *)((char *)t - offsetof(proc_op, timer));
  op->timed_out = 1;
  op_wake(op);
}

static int op_close(lua_State *L) {
  proc_op *op = luagent_check_handle(L, 1, &OP);
  if (!op->handle.closed) {
    op->handle.closed = 1;
    op_detach(op);
  }
  return 0;
}

static proc_op *new_op(lua_State *L, proc_entry *e, int kind) {
  proc_op *op = luagent_new_handle(L, &OP, sizeof *op, 0);
  op->lp = e->reg->lp;
  op->kind = kind;
  loop_timer_init(&op->timer, op_timer);
  wait_slot_init(&op->slot, op_cancel);
  return op;
}

/* Makes op wait again (after a wakeup that was not enough). */
static void op_rearm(proc_op *op, proc_entry *e) {
  wait_slot_init(&op->slot, op_cancel);
  op->e = e;
}

/* ---- entries ---- */

static void entry_free(proc_entry *e) {
  proc_registry *reg = e->reg;
  while (e->exit_ops) op_wake(e->exit_ops);
  for (int i = 0; i < 3; i++) {
    if (e->io_op[i]) op_wake(e->io_op[i]);
    loop_watch_stop(reg->lp, &e->io[i].w);
  }
  e->orphan = 0;
  unwatch_exit(e);
  process_release(&e->p);
  for (proc_entry **link = &reg->entries; *link; link = &(*link)->next) {
    if (*link == e) {
      *link = e->next;
      break;
    }
  }
  free(e);
}

/* The process may have ended: reap it; wake whoever waited; let an orphan go. */
static void check_exit(proc_entry *e) {
  if (!process_reap(&e->p)) return;
  while (e->exit_ops) op_wake(e->exit_ops);
  if (e->orphan) entry_free(e);
  else unwatch_exit(e);
}

static void on_pidfd(loop_watch *w, short revents) {
  (void)revents;
  check_exit((proc_entry *)((char *)w - offsetof(proc_entry, exit_watch)));
}

static void on_sigchld(loop_watch *w, short revents) {
  (void)revents;
  proc_registry *reg = (proc_registry *)((char *)w - offsetof(proc_registry, sigchld));
  process_sigchld_drain();
  for (proc_entry *e = reg->entries, *next; e; e = next) {
    next = e->next;
    if (e->exit_watching) check_exit(e);
  }
}

/* Someone needs to hear when e ends. A watch that cannot start (too many
 * descriptors watched) leaves exit_watching 0; the caller sees it. */
static void watch_exit(proc_entry *e) {
  if (e->exit_watching) return;
  proc_registry *reg = e->reg;
  if (e->p.pidfd >= 0) {
    e->exit_watch = (loop_watch){.fd = e->p.pidfd, .events = POLLIN, .ready = on_pidfd};
    e->exit_watching = loop_watch_start(reg->lp, &e->exit_watch) == 0;
    return;
  }
  if (reg->sigchld_users == 0) {
    int fd = process_sigchld_fd();
    reg->sigchld = (loop_watch){.fd = fd, .events = POLLIN, .ready = on_sigchld};
    if (fd < 0 || loop_watch_start(reg->lp, &reg->sigchld) != 0) return;
  }
  reg->sigchld_users++;
  e->exit_watching = 1;
}

static void unwatch_exit(proc_entry *e) {
  if (!e->exit_watching) return;
  e->exit_watching = 0;
  if (e->p.pidfd >= 0) {
    loop_watch_stop(e->reg->lp, &e->exit_watch);
  } else if (--e->reg->sigchld_users == 0) {
    loop_watch_stop(e->reg->lp, &e->reg->sigchld);
  }
}

/* A pipe end is ready (or hung up): its reader or writer tries again. */
static void on_io(loop_watch *w, short revents) {
  (void)revents;
  io_watch *iw = (io_watch *)((char *)w - offsetof(io_watch, w));
  if (iw->e->io_op[iw->stream]) op_wake(iw->e->io_op[iw->stream]);
}

/* Makes op the one waiting for stream's pipe end to be ready for `events`.
 * Returns 0, or -1 when the loop watches too many descriptors. */
static int wait_for_io(proc_entry *e, proc_op *op, int stream, short events) {
  op_rearm(op, e);
  e->io_op[stream] = op;
  e->io[stream] = (io_watch){{.fd = e->p.fd[stream], .events = events, .ready = on_io}, e, stream};
  if (loop_watch_start(e->reg->lp, &e->io[stream].w) == 0) return 0;
  op_detach(op);
  return -1;
}

/* ---- the handle ---- */

static proc_entry *check_proc(lua_State *L) { return ((lprocess *)luagent_check_open(L, 1, &PROC))->e; }

/* Kills what still runs, closes our ends, wakes the waiters; the entry goes
 * now if the process is reaped, else when it is (an orphan). No waiting. */
static void entry_close(proc_entry *e) {
  process_kill(&e->p, SIGKILL);
  for (int i = 0; i < 3; i++) {
    if (e->io_op[i]) op_wake(e->io_op[i]);
    process_close_stream(&e->p, i);
  }
  while (e->exit_ops) op_wake(e->exit_ops);
  if (process_reap(&e->p)) {
    entry_free(e);
    return;
  }
  e->orphan = 1;
  watch_exit(e);
  check_exit(e); /* it may have ended before the watch started */
}

static int proc_close(lua_State *L) {
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (h->handle.closed) return 0;
  h->handle.closed = 1;
  if (h->e) entry_close(h->e);
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
      if (wait_for_io(e, op, 0, POLLOUT) != 0)
        return luagent_fail(L, "io", "cannot wait for process '%s': too many descriptors watched", e->name);
      return host_await(L, &op->slot, (lua_KContext)op, write_k);
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
  op_detach(op);
  luagent_check_cancelled(L, &op->slot);
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (h->handle.closed) return luagent_fail(L, "closed", "the process handle was closed while writing to its stdin");
  if (h->e->p.fd[0] < 0) return luagent_fail(L, "closed", "stdin of process '%s' was closed while writing", h->e->name);
  return write_some(L, h->e, op);
}

/* proc:write(data) -> true | nil, err */
static int l_proc_write(lua_State *L) {
  proc_entry *e = check_proc(L);
  luaL_checkstring(L, 2);
  lua_settop(L, 2);
  if (!e->piped[0]) return luaL_error(L, "process '%s': stdin is not a pipe (spawn it with stdin = \"pipe\")", e->name);
  if (e->p.fd[0] < 0) return luaL_error(L, "process '%s': stdin is closed (close_stdin was called)", e->name);
  if (e->io_op[0]) return luaL_error(L, "process '%s': another task is writing to its stdin", e->name);
  return write_some(L, e, new_op(L, e, 0));
}

/* proc:close_stdin() */
static int l_proc_close_stdin(lua_State *L) {
  proc_entry *e = check_proc(L);
  if (e->io_op[0]) op_wake(e->io_op[0]);
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
  if (!op) op = new_op(L, e, stream);
  if (wait_for_io(e, op, stream, POLLIN) != 0)
    return luagent_fail(L, "io", "cannot wait for process '%s': too many descriptors watched", e->name);
  return host_await(L, &op->slot, (lua_KContext)op, read_k);
}

static int read_k(lua_State *L, int status, lua_KContext ctx) {
  (void)status;
  proc_op *op = (proc_op *)ctx;
  op_detach(op);
  luagent_check_cancelled(L, &op->slot);
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (h->handle.closed)
    return luagent_fail(L, "closed", "the process handle was closed while reading its %s", STREAMS[op->kind]);
  return read_some(L, h->e, op->kind, op);
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
  op_detach(op);
  luagent_check_cancelled(L, &op->slot);
  lprocess *h = luagent_check_handle(L, 1, &PROC);
  if (h->handle.closed) return luagent_fail(L, "closed", "the process handle was closed while waiting for it");
  proc_entry *e = h->e;
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
  proc_op *op = new_op(L, e, OP_EXIT);
  watch_exit(e);
  if (!e->exit_watching) return luagent_fail(L, "io", "cannot wait for process '%s': no way to watch it end", e->name);
  op->e = e;
  op->next = e->exit_ops;
  e->exit_ops = op;
  if (process_reap(&e->p)) { /* it ended before the watch started */
    op_detach(op);
    return push_exit(L, &e->p);
  }
  if (timeout >= 0) loop_timer_start(op->lp, &op->timer, timeout);
  return host_await(L, &op->slot, (lua_KContext)op, wait_k);
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
  lprocess *h = luagent_new_handle(L, &PROC, sizeof *h, 0); /* first: nothing to lose if it raises */
  proc_entry *e = calloc(1, sizeof *e);
  if (!e) return luaL_error(L, "out of memory");
  char err[512];
  int code = process_spawn(&e->p, &o, err, sizeof err);
  if (code) {
    free(e);
    lua_pushnil(L);
    luagent_push_error(L, failure_kind(code), "%s", err);
    luagent_error_set_string(L, "program", o.argv[0]);
    return 2;
  }
  e->reg = reg;
  snprintf(e->name, sizeof e->name, "%s", o.argv[0]);
  for (int i = 0; i < 3; i++) e->piped[i] = o.stdio[i] == PROCESS_PIPE;
  e->next = reg->entries;
  reg->entries = e;
  h->e = e;
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

/* The Lua state closes: every process still known is killed and let go
 * (a non-blocking reap; an unreaped one is the system's after we exit). */
static int registry_gc(lua_State *L) {
  proc_registry *reg = luaL_checkudata(L, 1, REGISTRY_CLASS);
  while (reg->entries) {
    proc_entry *e = reg->entries;
    process_kill(&e->p, SIGKILL);
    process_reap(&e->p);
    entry_free(e);
  }
  if (reg->sigchld_users) loop_watch_stop(reg->lp, &reg->sigchld);
  reg->sigchld_users = 0;
  return 0;
}

int luaopen_luagent_process(lua_State *L) {
  static const luaL_Reg funcs[] = {{"spawn", l_spawn}, {"environ", l_environ}, {NULL, NULL}};
  static const luaL_Reg registry_methods[] = {{"__gc", registry_gc}, {NULL, NULL}};
  luagent_register_handle(L, &PROC);
  luagent_register_handle(L, &OP);
  luagent_new_class(L, REGISTRY_CLASS, registry_methods);
  luaL_newlibtable(L, funcs);
  proc_registry *reg = lua_newuserdatauv(L, sizeof *reg, 0);
  memset(reg, 0, sizeof *reg);
  reg->lp = host_of(L)->loop;
  luaL_setmetatable(L, REGISTRY_CLASS);
  luaL_setfuncs(L, funcs, 1);
  return 1;
}
