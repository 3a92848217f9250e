/* lua_sys: luagent.sys — small facts about the host process.
 *
 *   sys.pid()            -> this process's id
 *   sys.alive(pid)       -> is that process still there?
 *   sys.getenv(name)     -> string | nil
 *   sys.isatty(fd)       -> boolean
 *   sys.hostname()       -> string
 *   sys.time()           -> wall-clock seconds (with fraction)
 *   sys.execute(argv)    -> exit_code, output   runs a host program (no shell), output = stdout+stderr
 */
#include <errno.h>
#include <lauxlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "lua_util.h"

static int l_pid(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)getpid());
  return 1;
}

static int l_alive(lua_State *L) {
  pid_t pid = (pid_t)luaL_checkinteger(L, 1);
  lua_pushboolean(L, pid > 0 && (kill(pid, 0) == 0 || errno == EPERM));
  return 1;
}

static int l_getenv(lua_State *L) {
  const char *v = getenv(luaL_checkstring(L, 1));
  if (!v) return 0;
  lua_pushstring(L, v);
  return 1;
}

static int l_isatty(lua_State *L) {
  lua_pushboolean(L, isatty((int)luaL_optinteger(L, 1, 1)));
  return 1;
}

static int l_hostname(lua_State *L) {
  char name[256] = "";
  gethostname(name, sizeof name - 1);
  lua_pushstring(L, name);
  return 1;
}

static int l_time(lua_State *L) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  lua_pushnumber(L, (lua_Number)tv.tv_sec + (lua_Number)tv.tv_usec / 1e6);
  return 1;
}

/* sys.execute(argv) -> exit_code, output. Blocking: for tools run from the
 * CLI (debootstrap, tar), never from an agent's hot path. */
static int l_execute(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)lua_rawlen(L, 1);
  luaL_argcheck(L, n > 0, 1, "argv must not be empty");
  char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  for (int i = 0; i < n; i++) {
    lua_rawgeti(L, 1, i + 1);
    argv[i] = (char *)luaL_checkstring(L, -1);
    lua_pop(L, 1); /* still referenced by the argv table */
  }
  argv[n] = NULL;
  int fds[2];
  if (pipe(fds) != 0) return luagent_fail(L, "io", "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return luagent_fail(L, "io", "fork: %s", strerror(errno));
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execvp(argv[0], argv);
    fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  buf out = BUF_INIT;
  char chunk[4096];
  ssize_t got;
  while ((got = read(fds[0], chunk, sizeof chunk)) != 0) {
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) break;
    buf_append(&out, chunk, (size_t)got);
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  lua_pushinteger(L, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  lua_pushlstring(L, out.data ? out.data : "", out.len);
  buf_free(&out);
  return 2;
}

int luaopen_luagent_sys(lua_State *L) {
  static const luaL_Reg funcs[] = {{"pid", l_pid},         {"alive", l_alive},   {"getenv", l_getenv},
                                   {"isatty", l_isatty},   {"hostname", l_hostname}, {"time", l_time},
                                   {"execute", l_execute}, {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
