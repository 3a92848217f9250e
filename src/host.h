/* host: owns the Lua state and everything recipes share — the event loop, the
 * task scheduler, the embedded Lua library, settings and interrupt handling.
 *
 * Every thread's extra space holds the host pointer, so any binding reaches it
 * in O(1) with host_of(L). */
#ifndef LUAGENT_HOST_H
#define LUAGENT_HOST_H

#include <lua.h>
#include <signal.h>

#include "loop.h"

typedef struct task task;

typedef struct host {
  lua_State *L;
  loop *loop;
  task *current;        /* task whose coroutine is running, or NULL */
  task *ready_head, *ready_tail;
  task *live;           /* unfinished tasks, doubly linked */
  size_t nlive;
  unsigned next_task_id;
  volatile sig_atomic_t interrupted; /* signal number of a pending Ctrl-C/SIGTERM */
  volatile sig_atomic_t in_loop; /* waiting in loop_run_once, not running Lua */
  int cancelling;       /* an interrupt or a failed main task is unwinding tasks */
  double cancel_deadline;
  const char *lua_dir;  /* LUAGENT_PATH/--lua-path: load lua/ from disk */
  const char *script_dir;
  int quiet;
} host;

typedef struct host_options {
  const char *lua_dir;
  const char *script_path; /* recipe path, for package.path; may be NULL */
  int argc;                /* recipe arguments (after --) */
  char **argv;
  int nsettings;           /* --set key=value */
  char **settings;
  int quiet;               /* -q: no live view */
  int json;                /* --json: events as JSON lines */
  const char *record;      /* --record FILE */
  const char *replay;      /* --replay FILE */
} host_options;

static inline host *host_of(lua_State *L) { return *(host **)lua_getextraspace(L); }

/* Creates the host: Lua state, libraries, preloaded luagent.* modules,
 * package.path, the global `luagent`. Returns NULL with a message in err. */
host *host_new(const host_options *opts, char *err, size_t errlen);
void host_free(host *h);

/* Runs a file as the main task and drives the scheduler until every task
 * has finished. Returns the process exit status (0, 1, or 128+signal). */
int host_run_file(host *h, const char *path);
/* Runs an embedded module's `main(args)` (the CLI subcommands written in Lua). */
int host_run_module(host *h, const char *module, int argc, char **argv);
/* Interactive prompt with every primitive loaded. */
int host_repl(host *h);

/* Installs SIGINT/SIGTERM handlers that cancel the run cleanly. */
void host_install_signal_handlers(host *h);

#endif
