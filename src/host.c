/* host: the Lua state and the run of a recipe (see host.h). */
#include "host.h"

#include <errno.h>
#include <lauxlib.h>
#include <lualib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embedded.h"
#include "lua_errors.h"

int luaopen_luagent_sched(lua_State *L);
int luaopen_luagent_http(lua_State *L);
int luaopen_luagent_json(lua_State *L);
int luaopen_luagent_yaml(lua_State *L);
int luaopen_luagent_fs(lua_State *L);
int luaopen_luagent_sys(lua_State *L);
int luaopen_luagent_engine_stream(lua_State *L);
int luaopen_luagent_tar(lua_State *L);
int luaopen_luagent_errors_core(lua_State *L);
int luaopen_luagent_process(lua_State *L);
int luaopen_luagent_http_head(lua_State *L);

static const luaL_Reg C_MODULES[] = {
    {"luagent.sched", luaopen_luagent_sched}, {"luagent.http", luaopen_luagent_http},
    {"luagent.json", luaopen_luagent_json}, {"luagent.yaml", luaopen_luagent_yaml},
    {"luagent.fs", luaopen_luagent_fs},     {"luagent.sys", luaopen_luagent_sys},
    {"luagent.engine_stream", luaopen_luagent_engine_stream}, {"luagent.tar", luaopen_luagent_tar},
    {"luagent.errors.core", luaopen_luagent_errors_core}, {"luagent.process", luaopen_luagent_process},
    {"luagent.http_head", luaopen_luagent_http_head},
    {"luagent.loop", luaopen_luagent_sched}, /* luagent.sched's old name, for one release */
    {NULL, NULL}};

/* ---- the embedded Lua library ---- */

static int load_embedded(lua_State *L) {
  const embedded_file *f = lua_touserdata(L, lua_upvalueindex(1));
  char chunkname[256];
  snprintf(chunkname, sizeof chunkname, "@%s", f->path);
  /* bytecode (tools/luac.c), made by the liblua5.4 this binary was built with */
  if (luaL_loadbufferx(L, (const char *)f->data, f->size, chunkname, "b") != LUA_OK)
    return lua_error(L);
  lua_pushstring(L, f->name);
  lua_call(L, 1, 1);
  return 1;
}

static void install_preloads(lua_State *L, const char *lua_dir) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
  for (const luaL_Reg *m = C_MODULES; m->name; m++) {
    lua_pushcfunction(L, m->func);
    lua_setfield(L, -2, m->name);
  }
  if (!lua_dir) { /* with --lua-path the library is read from disk instead */
    for (const embedded_file *f = luagent_modules; f->name; f++) {
      lua_pushlightuserdata(L, (void *)f);
      lua_pushcclosure(L, load_embedded, 1);
      lua_setfield(L, -2, f->name);
    }
  }
  lua_pop(L, 1);
}

/* package.path: the recipe's folder first, then --lua-path, then LUA_PATH if
 * the user set one; no "./?.lua", and no C modules (cpath empty). */
static void set_package_paths(lua_State *L, const char *script_dir, const char *lua_dir) {
  luaL_Buffer b;
  lua_getglobal(L, "package");
  luaL_buffinit(L, &b);
  if (script_dir) {
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", script_dir, script_dir);
    luaL_addvalue(&b);
  }
  if (lua_dir) {
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", lua_dir, lua_dir);
    luaL_addvalue(&b);
  }
  const char *user = getenv("LUA_PATH_5_4");
  if (!user) user = getenv("LUA_PATH");
  if (user) luaL_addstring(&b, user);
  luaL_pushresult(&b);
  lua_setfield(L, -2, "path");
  lua_pushliteral(L, "");
  lua_setfield(L, -2, "cpath");
  lua_pop(L, 1);
}

static void push_string_list(lua_State *L, int n, char **items) {
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, items[i]);
    lua_rawseti(L, -2, i + 1);
  }
}

/* luagent.host: what the command line gave, for lua/luagent/init.lua. */
static void publish_host_info(lua_State *L, const host_options *o) {
  luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
  lua_newtable(L);
  push_string_list(L, o->nsettings, o->settings);
  lua_setfield(L, -2, "settings");
  push_string_list(L, o->argc, o->argv);
  lua_setfield(L, -2, "args");
  if (o->script_path) {
    lua_pushstring(L, o->script_path);
    lua_setfield(L, -2, "script");
  }
  lua_pushboolean(L, o->quiet);
  lua_setfield(L, -2, "quiet");
  lua_pushboolean(L, o->json);
  lua_setfield(L, -2, "json");
  lua_pushboolean(L, o->yes);
  lua_setfield(L, -2, "yes");
  if (o->record) {
    lua_pushstring(L, o->record);
    lua_setfield(L, -2, "record");
  }
  if (o->replay) {
    lua_pushstring(L, o->replay);
    lua_setfield(L, -2, "replay");
  }
  if (o->cache) {
    lua_pushstring(L, o->cache);
    lua_setfield(L, -2, "cache");
  }
  lua_pushstring(L, LUAGENT_VERSION);
  lua_setfield(L, -2, "version");
  lua_pushinteger(L, (lua_Integer)getpid());
  lua_setfield(L, -2, "pid");
  lua_setfield(L, -2, "luagent.host");
  lua_pop(L, 1);
}

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

static int open_library(lua_State *L) {
  const host_options *o = lua_touserdata(L, 1);
  host *h = host_of(L);
  luaL_openlibs(L);
  install_preloads(L, h->lua_dir);
  set_package_paths(L, h->script_dir, h->lua_dir);
  publish_host_info(L, o);
  lua_getglobal(L, "require");
  lua_pushliteral(L, "luagent");
  lua_call(L, 1, 1);
  lua_setglobal(L, "luagent");
  return 0;
}

/* LUAGENT_CANCEL_GRACE: seconds cancelled tasks get to stop (default 10). */
static double cancel_grace(void) {
  const char *text = getenv("LUAGENT_CANCEL_GRACE");
  if (!text) return 10.0;
  char *end;
  double seconds = strtod(text, &end);
  return end != text && *end == '\0' && seconds > 0 ? seconds : 10.0;
}

/* The library failed to load. An error value marked `usage` (a bad --set,
 * --record or --replay) is the command line's fault: its message as is and
 * status 2; anything else is a broken library (status 1). */
static void report_setup_failure(lua_State *L, char *err, size_t errlen, int *status) {
  *status = 1;
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "usage");
    int usage = lua_toboolean(L, -1);
    lua_getfield(L, -2, "message");
    if (usage && lua_isstring(L, -1)) {
      snprintf(err, errlen, "%s", lua_tostring(L, -1));
      *status = 2;
      lua_pop(L, 2);
      return;
    }
    lua_pop(L, 2);
  }
  snprintf(err, errlen, "cannot load the luagent library: %s", luaL_tolstring(L, -1, NULL));
}

host *host_new(const host_options *opts, char *err, size_t errlen, int *status) {
  *status = 1;
  host *h = calloc(1, sizeof *h);
  if (!h) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->loop = loop_new();
  h->L = luaL_newstate();
  if (!h->loop || !h->L) {
    snprintf(err, errlen, "cannot create the Lua state or event loop");
    host_free(h);
    return NULL;
  }
  *(host **)lua_getextraspace(h->L) = h;
  h->sched = sched_new(h->L, h->loop, cancel_grace());
  if (!h->sched) {
    snprintf(err, errlen, "out of memory");
    host_free(h);
    return NULL;
  }
  h->lua_dir = opts->lua_dir;
  h->quiet = opts->quiet;
  h->script_dir = opts->script_path ? dir_of(opts->script_path) : NULL;
  lua_pushcfunction(h->L, open_library);
  lua_pushlightuserdata(h->L, (void *)opts);
  if (lua_pcall(h->L, 1, 0, 0) != LUA_OK) {
    report_setup_failure(h->L, err, errlen, status);
    host_free(h);
    return NULL;
  }
  return h;
}

void host_free(host *h) {
  if (!h) return;
  if (h->L) lua_close(h->L); /* finalizers may still reach the scheduler */
  sched_free(h->sched);
  loop_free(h->loop);
  free((char *)h->script_dir);
  free(h);
}

/* ---- interrupts ---- */

/* The signal handler needs to reach the host: the one piece of file-scope
 * mutable state, set once before any signal can arrive. */
static host *signal_host;

/* Stops Lua code that runs without waiting (a busy loop) at its next instruction. */
static void interrupt_hook(lua_State *L, lua_Debug *ar) {
  (void)ar;
  lua_sethook(L, NULL, 0, 0);
  luagent_push_error(L, "cancelled", "%s", SCHED_WHY_INTERRUPT);
  lua_error(L);
}

static void on_signal(int sig) {
  host *h = signal_host;
  if (!h) _exit(128 + sig);
  if (sched_interrupted(h->sched)) _exit(128 + sig); /* a second Ctrl-C: stop at once */
  alarm(30); /* the last resort, should cleanup itself hang: SIGALRM ends the process */
  /* waiting tasks are cancelled by the scheduler; running Lua code here */
  lua_State *running = sched_interrupt(h->sched, sig);
  if (running) lua_sethook(running, interrupt_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

void host_install_signal_handlers(host *h) {
  signal_host = h;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* ---- running ---- */

static int exit_status(host *h, int failed) {
  int sig = sched_interrupted(h->sched);
  if (sig) {
    fprintf(stderr, "luagent: interrupted\n");
    return 128 + sig;
  }
  return failed ? 1 : 0;
}

/* Tasks did not stop within the grace period after a cancel: the run is
 * abandoned (sandboxes it opened are found again by label). 128 + the
 * signal, as for any interrupted run (130 when a failed main task's
 * siblings would not stop). */
static int gave_up_status(host *h) {
  fprintf(stderr, "luagent: tasks did not stop within %g s of cancelling; exiting\n"
                  "luagent: leftover sandboxes are removed by 'luagent sandbox prune'\n",
          sched_grace(h->sched));
  int sig = sched_interrupted(h->sched);
  return sig ? 128 + sig : 130;
}

/* Did the main task fail with an error value of this kind? */
static int failed_with(lua_State *L, int handle, const char *kind) {
  if (!task_failure(L, handle)) return 0;
  int same = 0;
  if (lua_istable(L, -2)) {
    lua_getfield(L, -2, "kind");
    same = lua_isstring(L, -1) && strcmp(lua_tostring(L, -1), kind) == 0;
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
  return same;
}

/* A main task that failed with an error value of kind "usage" (the command
 * line asked for what the recipe cannot take): its message alone, no
 * traceback, and the caller exits 2. Returns 1 if so. */
static int report_usage_failure(lua_State *L, int handle) {
  if (!failed_with(L, handle, "usage")) return 0;
  task_failure(L, handle);
  lua_getfield(L, -2, "message");
  fprintf(stderr, "luagent: %s\n", lua_isstring(L, -1) ? lua_tostring(L, -1) : "a usage error");
  lua_pop(L, 3);
  return 1;
}

/* Where the recipe was when it failed: the first frame of the traceback
 * that is neither a C function nor luagent's own library (lua/luagent/...:
 * the option it refused was given by the recipe), as "recipes/x.lua:31", or
 * "" when none is. */
static void first_frame(const char *traceback, char *out, size_t n) {
  out[0] = '\0';
  const char *line = strstr(traceback, "\n\t");
  while (line) {
    line += 2;
    size_t len = strcspn(line, "\n");
    if (strncmp(line, "[C]", 3) != 0 && strncmp(line, "lua/luagent/", 12) != 0 && strncmp(line, "(...", 4) != 0) {
      const char *colon = memchr(line, ':', len);
      const char *second = colon ? memchr(colon + 1, ':', len - (size_t)(colon + 1 - line)) : NULL;
      size_t keep = second ? (size_t)(second - line) : len;
      snprintf(out, n, "%.*s", (int)keep, line);
      return;
    }
    line = strstr(line, "\n\t");
  }
}

/* Prints a failed main task. An error value (a luagent.errors table: an
 * expected failure, such as an engine that is not running, raised by the
 * recipe's assert) is its message and where, without a traceback; anything
 * else (a bug) is "FILE:LINE: message" and the traceback. */
static void report_failure(lua_State *L, int handle) {
  task_failure(L, handle);
  int error_value = 0;
  if (lua_istable(L, -2)) {
    lua_getfield(L, -2, "kind");
    lua_getfield(L, -3, "message");
    error_value = lua_isstring(L, -2) && lua_isstring(L, -1);
    if (error_value) {
      char where[512];
      first_frame(lua_isstring(L, -3) ? lua_tostring(L, -3) : "", where, sizeof where);
      fprintf(stderr, "luagent: %s%s%s%s\n", lua_tostring(L, -1), where[0] ? " (at " : "", where,
              where[0] ? ")" : "");
    }
    lua_pop(L, 2);
  }
  if (!error_value && lua_isstring(L, -1)) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
  } else if (!error_value) {
    fprintf(stderr, "%s\n", luaL_tolstring(L, -2, NULL));
    lua_pop(L, 1);
  }
  lua_pop(L, 2);
}

/* Prints a failed exit-hooks task's error: "luagent: message" (an error
 * value's message, without a traceback: the hooks' failures are expected
 * ones, such as a trace that could not be written). Returns 1 if it failed. */
static int report_hooks_failure(lua_State *L, int handle) {
  if (!task_failure(L, handle)) return 0;
  lua_pop(L, 1); /* the traceback */
  if (lua_type(L, -1) == LUA_TTABLE) lua_getfield(L, -1, "message");
  else lua_pushvalue(L, -1);
  fprintf(stderr, "luagent: %s\n", lua_isstring(L, -1) ? lua_tostring(L, -1) : luaL_tolstring(L, -2, NULL));
  lua_settop(L, handle);
  return 1;
}

/* Runs luagent._run_exit_hooks(status, message) as a task (sandboxes are
 * closed and the trace finished there, even after an error or Ctrl-C); its
 * failure is said on stderr and sets *failed. */
static sched_status run_exit_hooks(host *h, const char *status, int message_idx, int *failed) {
  lua_State *L = h->L;
  sched_status st = SCHED_DONE;
  lua_getglobal(L, "luagent");
  if (lua_istable(L, -1) && lua_getfield(L, -1, "_run_exit_hooks") == LUA_TFUNCTION) {
    lua_pushstring(L, status);
    if (message_idx) lua_pushvalue(L, message_idx);
    else lua_pushnil(L);
    sched_spawn(L, 2);
    int handle = lua_gettop(L);
    st = sched_run(h->sched, NULL);
    if (st == SCHED_DONE) *failed = report_hooks_failure(L, handle);
    lua_pop(L, 1);
  } else {
    lua_pop(L, 1);
  }
  lua_pop(L, 1);
  return st;
}

/* Pushes the failed main task's message (a string) or nil. */
static void push_failure_message(lua_State *L, int handle) {
  if (!task_failure(L, handle)) {
    lua_pushnil(L);
    return;
  }
  lua_pop(L, 1); /* the traceback */
  if (lua_type(L, -1) == LUA_TTABLE) {
    lua_getfield(L, -1, "message");
    lua_remove(L, -2);
  }
  if (!lua_isstring(L, -1)) {
    lua_pop(L, 1);
    lua_pushliteral(L, "(an error that is not a string)");
  }
}


/* How the run ended, for its run_end: "waiting" when it stopped for a
 * person's approval (approve = "defer": an error value of kind waiting). */
static const char *ending(host *h, int message, int handle) {
  if (sched_interrupted(h->sched)) return "interrupted";
  if (lua_isnil(h->L, message)) return "ok";
  return failed_with(h->L, handle, "waiting") ? "waiting" : "failed";
}

/* The status a CLI module's main returned, if it returned an integer. */
static int returned_status(lua_State *L, int handle, int status) {
  int n = task_results(L, handle);
  if (n > 0 && lua_isinteger(L, -n)) status = (int)lua_tointeger(L, -n);
  lua_pop(L, n);
  return status;
}

static int run_main_task(host *h, int nargs) {
  lua_State *L = h->L;
  task *main = sched_spawn(L, nargs);
  int handle = lua_gettop(L);
  if (sched_run(h->sched, main) == SCHED_GAVE_UP) return gave_up_status(h);
  push_failure_message(L, handle);
  int message = lua_gettop(L);
  /* a recipe that returned an exit status ends "failed" too: the run's last
   * line, its trace's run_end and the process's status agree */
  int returned = lua_isnil(L, message) ? returned_status(L, handle, 0) : 0;
  if (returned != 0) {
    lua_pop(L, 1);
    lua_pushfstring(L, "the recipe returned exit status %d", returned);
  }
  /* the first cause first: the recipe's error is said before the run's end
   * (its hooks: sandboxes closed, outputs saved, the run line), so what
   * failed as a knock-on of it comes after it */
  int failed = task_failure(L, handle), usage = 0;
  if (failed) {
    lua_pop(L, 2);
    if (!sched_interrupted(h->sched)) {
      usage = report_usage_failure(L, handle);
      if (!usage) report_failure(L, handle);
    }
  }
  int hooks_failed = 0;
  if (run_exit_hooks(h, ending(h, message, handle), message, &hooks_failed) == SCHED_GAVE_UP) return gave_up_status(h);
  lua_pop(L, 1);
  int unobserved = sched_report_unobserved(h->sched);
  int status = exit_status(h, failed || unobserved || hooks_failed);
  if (usage && status == 1) status = 2;
  if (failed && status == 1 && failed_with(L, handle, "waiting")) status = 3; /* waits for a person */
  if (!failed && !hooks_failed && !sched_interrupted(h->sched)) status = returned_status(L, handle, status);
  lua_pop(L, 1);
  return status;
}

int host_run_file(host *h, const char *path) {
  lua_State *L = h->L;
  if (luaL_loadfilex(L, path, "t") != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 1;
  }
  lua_getglobal(L, "luagent");
  lua_getfield(L, -1, "args");
  lua_remove(L, -2);
  int nargs = (int)lua_rawlen(L, -1);
  luaL_checkstack(L, nargs, "too many arguments");
  int list = lua_gettop(L);
  for (int i = 1; i <= nargs; i++) lua_rawgeti(L, list, i);
  lua_remove(L, list);
  return run_main_task(h, nargs);
}

int host_run_module(host *h, const char *module, int argc, char **argv) {
  lua_State *L = h->L;
  lua_getglobal(L, "require");
  lua_pushstring(L, module);
  if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
    fprintf(stderr, "luagent: %s\n", lua_tostring(L, -1));
    return 1;
  }
  lua_getfield(L, -1, "main");
  lua_remove(L, -2);
  if (!lua_isfunction(L, -1)) {
    fprintf(stderr, "luagent: module '%s' has no main function\n", module);
    lua_pop(L, 1);
    return 1;
  }
  push_string_list(L, argc, argv);
  return run_main_task(h, 1);
}

/* ---- the prompt ---- */

/* Prints a finished line's values, tab-separated, like the standalone lua. */
static void print_results(lua_State *L, int handle) {
  int n = task_results(L, handle);
  int first = lua_gettop(L) - n + 1;
  for (int i = 0; i < n; i++) {
    printf("%s%s", i > 0 ? "\t" : "", luaL_tolstring(L, first + i, NULL));
    lua_pop(L, 1);
  }
  if (n > 0) printf("\n");
  lua_pop(L, n);
}

/* Runs one line as a task. Returns 0, or an exit status to leave with. */
static int repl_line(host *h, const char *line) {
  lua_State *L = h->L;
  char *expr = malloc(strlen(line) + 8);
  sprintf(expr, "return %s", line);
  int rc = luaL_loadbuffer(L, expr, strlen(expr), "=repl");
  free(expr);
  if (rc != LUA_OK) {
    lua_pop(L, 1);
    rc = luaL_loadbuffer(L, line, strlen(line), "=repl");
  }
  if (rc != LUA_OK) {
    fprintf(stderr, "%s\n", lua_tostring(L, -1));
    lua_pop(L, 1);
    return 0;
  }
  task *t = sched_spawn(L, 0);
  int handle = lua_gettop(L);
  if (sched_run(h->sched, t) == SCHED_GAVE_UP) return gave_up_status(h);
  if (sched_interrupted(h->sched)) {
    fprintf(stderr, "interrupted\n");
  } else if (task_failure(L, handle)) {
    fprintf(stderr, "%s\n", lua_isstring(L, -1) ? lua_tostring(L, -1) : luaL_tolstring(L, -2, NULL));
  } else {
    print_results(L, handle);
  }
  sched_reset(h->sched); /* the next line starts afresh, even after a failure */
  lua_settop(L, handle - 1);
  return 0;
}

int host_repl(host *h) {
  char line[8192];
  int tty = isatty(0);
  if (tty) printf("luagent %s — Lua %s.%s with every primitive loaded; Ctrl-D to leave\n",
                  LUAGENT_VERSION, LUA_VERSION_MAJOR, LUA_VERSION_MINOR);
  for (;;) {
    if (tty) {
      printf("> ");
      fflush(stdout);
    }
    if (!fgets(line, sizeof line, stdin)) break;
    line[strcspn(line, "\n")] = '\0';
    int status = line[0] ? repl_line(h, line) : 0;
    fflush(stdout);
    if (status) return status;
  }
  if (tty) printf("\n");
  return 0;
}
