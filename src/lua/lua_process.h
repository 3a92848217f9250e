/* lua_process: what the two files of luagent.process share — lua_process.c
 * (the module: spawn, environ, the process handle and its methods) and
 * lua_process_entry.c (a spawned process's entry: the loop watches on its
 * pipes and its end, the tasks waiting on it, reaping, and the registry of
 * every entry of a Lua state). */
#ifndef LUAGENT_LUA_PROCESS_H
#define LUAGENT_LUA_PROCESS_H

#include <lua.h>

#include "loop.h"
#include "lua_util.h"
#include "process.h"

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
 * without a pidfd. A userdata in the module's upvalue; its __gc (last, when
 * the state closes) calls pentry_close_all. */
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

/* Registers the class of the wait userdata (proc_op). */
void pentry_register(lua_State *L);

/* A new entry for the process spawned into *p (taken over), in reg's list;
 * NULL when out of memory. */
proc_entry *pentry_new(proc_registry *reg, const process *p, const process_options *o);

/* Pushes a wait userdata for a task about to wait on e (`kind`: a stream, or
 * OP_EXIT) and returns it. */
proc_op *pentry_new_op(lua_State *L, proc_entry *e, int kind);
/* The op no longer waits: no watch, no timer, no link from its entry. */
void pentry_op_detach(proc_op *op);
/* Detaches the op and lets its task run on (it looks at why itself). */
void pentry_op_wake(proc_op *op);

/* Makes op the one waiting for stream's pipe end to be ready for `events`.
 * Returns 0, or -1 when the loop cannot watch one more (out of memory). */
int pentry_wait_for_io(proc_entry *e, proc_op *op, int stream, short events);
/* Makes op one of the tasks waiting for e to end. Returns 0, or -1 when its
 * end cannot be watched (out of memory, no SIGCHLD pipe). */
int pentry_wait_for_exit(proc_entry *e, proc_op *op);

/* The handle is closed: kills what still runs (the group with new_group),
 * closes our pipe ends, wakes every waiter; the entry is freed now if the
 * process is reaped, else once it is. Never waits. */
void pentry_close(proc_entry *e);
/* The Lua state closes: every entry's process is killed, reaped if it can be
 * without waiting, and let go. */
void pentry_close_all(proc_registry *reg);

#endif
