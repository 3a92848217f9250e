/* lua_sys: luagent.sys — small facts about the host process.
 *
 *   sys.pid()            -> this process's id
 *   sys.alive(pid)       -> is that process still there?
 *   sys.getenv(name)     -> string | nil
 *   sys.isatty(fd)       -> boolean
 *   sys.hostname()       -> string
 *   sys.time()           -> wall-clock seconds (with fraction)
 *   sys.execute(argv [, {inherit = true}]) -> exit_code, output   runs a host program (no
 *                          shell); output = stdout+stderr, or shown live with inherit
 *   sys.process_start(pid) -> the process's start time (clock ticks since boot) | nil
 *                          (with the pid, it names a process even after pid reuse)
 *   sys.random_hex(n)    -> n random bytes from the operating system, as hex
 *   sys.maxrss()         -> peak resident memory of this process, in bytes
 *   sys.sha256(string)   -> hex digest
 *   sys.sha256_file(path) -> hex digest, size | nil, err   (read in chunks)
 *   sys.asset(name)      -> the embedded file (e.g. "sandbox/Dockerfile") | nil
 *   sys.base64(bytes)    -> standard base64 (for images sent to models)
 *   sys.signal_name(n)   -> "TERM" | nil      the one table of signal names
 *   sys.signal_number(name) -> 15 | nil       ("TERM", "SIGTERM", "term" or "15"),
 *                          both from src/core/process.c, which luagent.process uses too
 *   sys.cidr(text)       -> canonical_text, "ipv4"|"ipv6", prefix | nil, err (kind config)
 *                          an address or block ("10.0.0.0/8", "::1", "[fd00::]/8"), src/core/netaddr.c
 *   sys.address_class(address) -> nil (public unicast) | "private", "loopback", ... (netaddr.h)
 *                          raises for text that is not an IP address literal
 */
#include <arpa/inet.h>
#include <errno.h>
#include <lauxlib.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "embedded.h"
#include "lua_errors.h"
#include "lua_util.h"
#include "netaddr.h"
#include "process.h"
#include "sha256.h"

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
  int inherit = lua_istable(L, 2) && opt_boolean(L, 2, "inherit", 0);
  int n = (int)lua_rawlen(L, 1);
  luaL_argcheck(L, n > 0, 1, "argv must not be empty");
  char **argv = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 0);
  luaL_checkstack(L, n, "too many arguments");
  for (int i = 0; i < n; i++) {
    /* left on the stack: a number converted here is referenced nowhere else */
    lua_rawgeti(L, 1, i + 1);
    argv[i] = (char *)luaL_checkstring(L, -1);
  }
  argv[n] = NULL;
  int fds[2];
  if (pipe(fds) != 0) return luagent_fail(L, "io", "pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return luagent_fail(L, "io", "fork: %s", strerror(errno));
  if (pid == 0) {
    if (!inherit) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
    }
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

static int l_process_start(lua_State *L) {
  char path[64], line[1024];
  snprintf(path, sizeof path, "/proc/%lld/stat", (long long)luaL_checkinteger(L, 1));
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[n] = '\0';
  /* field 22 (starttime), counted after the ")" that ends the command name */
  char *p = strrchr(line, ')');
  if (!p) return 0;
  for (int field = 2; field < 22 && p; field++) p = strchr(p + 1, ' ');
  if (!p) return 0;
  lua_pushinteger(L, (lua_Integer)strtoll(p + 1, NULL, 10));
  return 1;
}

static int l_random_hex(lua_State *L) {
  lua_Integer n = luaL_optinteger(L, 1, 8);
  luaL_argcheck(L, n > 0 && n <= 64, 1, "between 1 and 64 bytes");
  unsigned char bytes[64];
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(bytes, 1, (size_t)n, f) != (size_t)n) {
    if (f) fclose(f);
    return luaL_error(L, "cannot read /dev/urandom");
  }
  fclose(f);
  char hex[129];
  for (lua_Integer i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  lua_pushlstring(L, hex, (size_t)n * 2);
  return 1;
}

static int l_maxrss(lua_State *L) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  lua_pushinteger(L, (lua_Integer)ru.ru_maxrss * 1024);
  return 1;
}

static int l_sha256(lua_State *L) {
  size_t n;
  const char *data = luaL_checklstring(L, 1, &n);
  sha256_ctx c;
  char hex[65];
  sha256_init(&c);
  sha256_update(&c, data, n);
  sha256_final_hex(&c, hex);
  lua_pushstring(L, hex);
  return 1;
}

static int l_sha256_file(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  char hex[65];
  long long size = 0;
  if (sha256_file_hex(path, hex, &size) != 0)
    return luagent_fail(L, errno == ENOENT ? "not_found" : "io", "cannot read %s: %s", path, strerror(errno));
  lua_pushstring(L, hex);
  lua_pushinteger(L, (lua_Integer)size);
  return 2;
}

static int l_asset(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  for (const embedded_file *f = luagent_assets; f->name; f++) {
    if (strcmp(f->name, name) == 0) {
      lua_pushlstring(L, (const char *)f->data, f->size);
      return 1;
    }
  }
  return 0;
}

/* sys.assets() -> the names of the embedded files, in order. */
static int l_assets(lua_State *L) {
  lua_newtable(L);
  lua_Integer n = 0;
  for (const embedded_file *f = luagent_assets; f->name; f++) {
    lua_pushstring(L, f->name);
    lua_rawseti(L, -2, ++n);
  }
  return 1;
}

static int l_base64(lua_State *L) {
  static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t n;
  const unsigned char *in = (const unsigned char *)luaL_checklstring(L, 1, &n);
  luaL_Buffer b;
  char *out = luaL_buffinitsize(L, &b, (n + 2) / 3 * 4);
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 | (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) | (i + 2 < n ? in[i + 2] : 0);
    out[o++] = alphabet[v >> 18 & 63];
    out[o++] = alphabet[v >> 12 & 63];
    out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
    out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
  }
  luaL_pushresultsize(&b, o);
  return 1;
}

static int l_signal_name(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  const char *name = n > 0 && n < 256 ? process_signal_name((int)n) : NULL;
  if (name) lua_pushstring(L, name);
  else lua_pushnil(L);
  return 1;
}

static int l_signal_number(lua_State *L) {
  int n = process_signal_number(luaL_checkstring(L, 1));
  if (n) lua_pushinteger(L, n);
  else lua_pushnil(L);
  return 1;
}

/* Argument idx as a C string; raises when it holds a NUL, which C would cut at. */
static const char *check_text(lua_State *L, int idx) {
  size_t len;
  const char *s = luaL_checklstring(L, idx, &len);
  if (strlen(s) != len) luaL_argerror(L, idx, "a NUL byte inside the text");
  return s;
}

static int l_cidr(lua_State *L) {
  const char *text = check_text(L, 1), *why = NULL;
  net_cidr c;
  char canonical[64];
  if (net_cidr_parse(text, &c, &why) < 0) {
    /* some reasons already start with the text they are about */
    if (strncmp(why, text, strlen(text)) == 0) return luagent_fail(L, "config", "%s", why);
    return luagent_fail(L, "config", "%s: %s", text, why);
  }
  net_cidr_format(&c, canonical, sizeof canonical);
  lua_pushstring(L, canonical);
  lua_pushstring(L, c.family == AF_INET ? "ipv4" : "ipv6");
  lua_pushinteger(L, c.prefix);
  return 3;
}

/* "1.2.3.4", "::1" or "[::1]" as a socket address; 0, or -1 when not a literal. */
static int address_literal(const char *text, struct sockaddr_storage *ss) {
  char inner[INET6_ADDRSTRLEN + 2];
  size_t len = strlen(text);
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
  if (inet_pton(AF_INET, text, &in4->sin_addr) == 1) return in4->sin_family = AF_INET, 0;
  if (len >= 2 && len < sizeof inner && text[0] == '[' && text[len - 1] == ']') {
    memcpy(inner, text + 1, len - 2);
    inner[len - 2] = '\0';
    text = inner;
  }
  if (inet_pton(AF_INET6, text, &in6->sin6_addr) == 1) return in6->sin6_family = AF_INET6, 0;
  return -1;
}

static int l_address_class(lua_State *L) {
  struct sockaddr_storage ss;
  if (address_literal(check_text(L, 1), &ss) < 0) return luaL_argerror(L, 1, "not an IP address literal");
  const char *special = net_addr_special((const struct sockaddr *)&ss);
  if (special) lua_pushstring(L, special);
  else lua_pushnil(L);
  return 1;
}

int luaopen_luagent_sys(lua_State *L) {
  static const luaL_Reg funcs[] = {{"pid", l_pid},         {"alive", l_alive},   {"getenv", l_getenv},
                                   {"isatty", l_isatty},   {"hostname", l_hostname}, {"time", l_time},
                                   {"execute", l_execute}, {"process_start", l_process_start},
                                   {"random_hex", l_random_hex}, {"maxrss", l_maxrss},
                                   {"sha256", l_sha256}, {"sha256_file", l_sha256_file},
                                   {"asset", l_asset}, {"assets", l_assets}, {"base64", l_base64},
                                   {"signal_name", l_signal_name}, {"signal_number", l_signal_number},
                                   {"cidr", l_cidr}, {"address_class", l_address_class},
                                   {NULL, NULL}};
  luaL_newlib(L, funcs);
  return 1;
}
