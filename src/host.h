/* host: owns the Lua state and everything recipes share — the event loop,
 * the task scheduler (sched.h), the embedded Lua library, settings and
 * interrupt handling — and turns how a run ended into an exit status.
 *
 * Every thread's extra space holds the host pointer, so any binding reaches it
 * in O(1) with host_of(L); host_of(L)->loop is the event loop.
 *
 * Environment: LUAGENT_CANCEL_GRACE, the seconds cancelled tasks get to stop
 * after Ctrl-C or a failed main task before the run gives up on them
 * (default 10; the tests shorten it). */
#ifndef LUAGENT_HOST_H
#define LUAGENT_HOST_H

#include <lua.h>

#include "loop.h"
#include "sched.h"

typedef struct host {
  lua_State *L;
  loop *loop;   /* the event loop bindings start their transfers and timers on */
  sched *sched; /* tasks and waits */
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
  const char *cache;       /* --cache "on", --cache=refresh "refresh", --no-cache "off"; NULL: not said */
  int yes;                 /* --yes: approve every tool call that asks a person (luagent.approval) */
} host_options;

static inline host *host_of(lua_State *L) { return *(host **)lua_getextraspace(L); }

/* Creates the host: Lua state, libraries, preloaded luagent.* modules,
 * package.path, the global `luagent`. Returns NULL with a message in err and
 * the exit status in *status (2: a bad --set/--record/--replay, 1: otherwise). */
host *host_new(const host_options *opts, char *err, size_t errlen, int *status);
void host_free(host *h);

/* Runs a file as the main task and drives the scheduler until every task
 * has finished. Returns the process exit status: 0, 1, 128+signal, or 130
 * when tasks did not stop within the grace period after a cancel. */
int host_run_file(host *h, const char *path);
/* Runs an embedded module's `main(args)` (the CLI subcommands written in Lua). */
int host_run_module(host *h, const char *module, int argc, char **argv);
/* Interactive prompt with every primitive loaded. */
int host_repl(host *h);

/* Installs SIGINT/SIGTERM handlers that cancel the run cleanly. */
void host_install_signal_handlers(host *h);

#endif
