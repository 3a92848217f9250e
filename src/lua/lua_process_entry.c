/* lua_process_entry: a spawned process's entry (see lua_process.h): the
 * loop watches on its pipe ends and its end (its pidfd, or the SIGCHLD
 * self-pipe shared by a state's processes where there is none), the tasks
 * waiting on it, reaping, and freeing it once it is reaped and its handle
 * closed. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_process.h"

static int op_close(lua_State *L);
static const luaL_Reg NO_METHODS[] = {{NULL, NULL}};
static const luagent_handle_class OP = {"luagent.process.wait", "process wait", NO_METHODS, op_close, NULL};

/* ---- waits ---- */

static void watch_exit(proc_entry *e);
static void unwatch_exit(proc_entry *e);

void pentry_op_detach(proc_op *op) {
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

void pentry_op_wake(proc_op *op) {
  pentry_op_detach(op);
  wait_slot_complete(&op->slot);
}

static void op_cancel(wait_slot *slot) { pentry_op_detach((proc_op *)((char *)slot - offsetof(proc_op, slot))); }

static void op_timer(loop_timer *t) {
  proc_op *op = (proc_op *)((char *)t - offsetof(proc_op, timer));
  op->timed_out = 1;
  pentry_op_wake(op);
}

static int op_close(lua_State *L) {
  proc_op *op = luagent_check_handle(L, 1, &OP);
  if (luagent_handle_release(op)) pentry_op_detach(op);
  return 0;
}

proc_op *pentry_new_op(lua_State *L, proc_entry *e, int kind) {
  proc_op *op = luagent_new_handle(L, &OP, sizeof *op, 0);
  op->lp = e->reg->lp;
  op->kind = kind;
  loop_timer_init(&op->timer, op_timer);
  wait_slot_init(&op->slot, op_cancel);
  luagent_handle_open(op);
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
  while (e->exit_ops) pentry_op_wake(e->exit_ops);
  for (int i = 0; i < 3; i++) {
    if (e->io_op[i]) pentry_op_wake(e->io_op[i]);
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
  while (e->exit_ops) pentry_op_wake(e->exit_ops);
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
  if (iw->e->io_op[iw->stream]) pentry_op_wake(iw->e->io_op[iw->stream]);
}

int pentry_wait_for_io(proc_entry *e, proc_op *op, int stream, short events) {
  op_rearm(op, e);
  e->io_op[stream] = op;
  e->io[stream] = (io_watch){{.fd = e->p.fd[stream], .events = events, .ready = on_io}, e, stream};
  if (loop_watch_start(e->reg->lp, &e->io[stream].w) == 0) return 0;
  pentry_op_detach(op);
  return -1;
}

void pentry_close(proc_entry *e) {
  process_kill(&e->p, SIGKILL);
  for (int i = 0; i < 3; i++) {
    if (e->io_op[i]) pentry_op_wake(e->io_op[i]);
    process_close_stream(&e->p, i);
  }
  while (e->exit_ops) pentry_op_wake(e->exit_ops);
  if (process_reap(&e->p)) {
    entry_free(e);
    return;
  }
  e->orphan = 1;
  watch_exit(e);
  check_exit(e); /* it may have ended before the watch started */
}

proc_entry *pentry_new(proc_registry *reg, const process *p, const process_options *o) {
  proc_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->p = *p;
  e->reg = reg;
  snprintf(e->name, sizeof e->name, "%s", o->argv[0]);
  for (int i = 0; i < 3; i++) e->piped[i] = o->stdio[i] == PROCESS_PIPE;
  e->next = reg->entries;
  reg->entries = e;
  return e;
}

int pentry_wait_for_exit(proc_entry *e, proc_op *op) {
  watch_exit(e);
  if (!e->exit_watching) return -1;
  op->e = e;
  op->next = e->exit_ops;
  e->exit_ops = op;
  return 0;
}

void pentry_close_all(proc_registry *reg) {
  while (reg->entries) {
    proc_entry *e = reg->entries;
    process_kill(&e->p, SIGKILL);
    process_reap(&e->p);
    entry_free(e);
  }
  if (reg->sigchld_users) loop_watch_stop(reg->lp, &reg->sigchld);
  reg->sigchld_users = 0;
}

void pentry_register(lua_State *L) { luagent_register_handle(L, &OP); }
