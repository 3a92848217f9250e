/* process core: PATH lookup, environment lookup, signal names and wait
 * statuses; a spawn with pipes and a group, seen ending through its pidfd
 * and through the SIGCHLD self-pipe. */
#include "../../src/core/process.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

static void finds_programs_like_execvp(void) {
  char out[PATH_MAX], dir[] = "/tmp/luagent-test-path-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char tool[PATH_MAX], plain[PATH_MAX];
  snprintf(tool, sizeof tool, "%s/tool", dir);
  snprintf(plain, sizeof plain, "%s/plain", dir);
  FILE *f = fopen(tool, "w");
  fputs("#!/bin/sh\n", f);
  fclose(f);
  chmod(tool, 0755);
  f = fopen(plain, "w");
  fclose(f);
  chmod(plain, 0644);
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "/no/such:%s:/bin", dir);
  CHECK(process_find_program("tool", path, out, sizeof out) == 0);
  CHECK_STR(out, tool);
  CHECK(process_find_program("sh", path, out, sizeof out) == 0);
  CHECK_STR(out, "/bin/sh");
  /* found, but without an execute bit (root too): EACCES */
  CHECK(process_find_program("plain", path, out, sizeof out) == EACCES);
  CHECK(process_find_program("missing", path, out, sizeof out) == ENOENT);
  CHECK(process_find_program("", path, out, sizeof out) == ENOENT);
  /* a name with a slash is taken as it is; NULL PATH is the default */
  CHECK(process_find_program("./x/y", path, out, sizeof out) == 0);
  CHECK_STR(out, "./x/y");
  CHECK(process_find_program("sh", NULL, out, sizeof out) == 0);
  CHECK(process_find_program("sh", path, out, 4) == ENAMETOOLONG);
  unlink(tool);
  unlink(plain);
  rmdir(dir);
}

static void reads_the_environment_list(void) {
  const char *envp[] = {"PATHX=no", "PATH=/a:/b", "EMPTY=", NULL};
  CHECK_STR(process_env_get(envp, "PATH"), "/a:/b");
  CHECK_STR(process_env_get(envp, "EMPTY"), "");
  CHECK(process_env_get(envp, "PAT") == NULL);
  CHECK(process_env_get(NULL, "PATH") == NULL);
}

static void names_signals(void) {
  CHECK(process_signal_number("TERM") == SIGTERM);
  CHECK(process_signal_number("SIGKILL") == SIGKILL);
  CHECK(process_signal_number("int") == SIGINT);
  CHECK(process_signal_number("9") == 9);
  CHECK(process_signal_number("0") == 0);
  CHECK(process_signal_number("999") == 0);
  CHECK(process_signal_number("9x") == 0);
  CHECK(process_signal_number("NOPE") == 0);
  CHECK(process_signal_number(NULL) == 0);
  CHECK_STR(process_signal_name(SIGTERM), "TERM");
  CHECK(process_signal_name(0) == NULL);
}

static void decodes_wait_statuses(void) {
  process p;
  memset(&p, 0, sizeof p);
  process_decode_status(&p, 3 << 8); /* exit(3) */
  CHECK(p.reaped && p.exit_code == 3 && p.signal == 0);
  process_decode_status(&p, SIGKILL); /* killed by 9 */
  CHECK(p.exit_code == 128 + SIGKILL && p.signal == SIGKILL);
}

/* Waits up to 5 s for fd to be readable; returns whether it was. */
static int readable(int fd) {
  struct pollfd pfd = {fd, POLLIN, 0};
  int n;
  while ((n = poll(&pfd, 1, 5000)) < 0 && errno == EINTR) {
  }
  return n == 1;
}

static void spawns_with_pipes_and_sees_the_end_by_pidfd(void) {
  const char *argv[] = {"sh", "-c", "read line; echo \"got $line\"; echo oops >&2; exit 4", NULL};
  process_options o = {.argv = argv, .stdio = {PROCESS_PIPE, PROCESS_PIPE, PROCESS_PIPE}, .new_group = 1};
  process p;
  char err[256];
  CHECK(process_spawn(&p, &o, err, sizeof err) == 0);
  CHECK(p.pid > 0 && p.fd[0] > 2 && p.fd[1] > 2 && p.fd[2] > 2);
  CHECK(getpgid(p.pid) == p.pid);
  CHECK(write(p.fd[0], "hi\n", 3) == 3);
  process_close_stream(&p, PROCESS_STDIN);
  CHECK(p.fd[0] == -1);
  char out[64] = {0};
  CHECK(readable(p.fd[1]));
  CHECK(read(p.fd[1], out, sizeof out - 1) > 0);
  CHECK_STR(out, "got hi\n");
  if (p.pidfd >= 0) CHECK(readable(p.pidfd));
  else while (!process_reap(&p)) usleep(1000); /* Linux without pidfds */
  CHECK(process_reap(&p) == 1);
  CHECK(p.exit_code == 4 && p.signal == 0);
  CHECK(process_reap(&p) == 1); /* again: the same answer */
  process_release(&p);
  CHECK(p.fd[1] == -1 && p.pidfd == -1);
}

static void sees_the_end_by_sigchld_and_kills_the_group(void) {
  int fd = process_sigchld_fd();
  CHECK(fd >= 0);
  CHECK(process_sigchld_fd() == fd); /* installed once */
  const char *argv[] = {"sleep", "30", NULL};
  process_options o = {.argv = argv, .new_group = 1, .no_pidfd = 1};
  process p;
  char err[256];
  CHECK(process_spawn(&p, &o, err, sizeof err) == 0);
  CHECK(p.pidfd == -1);
  CHECK(process_reap(&p) == 0);
  CHECK(process_kill(&p, SIGTERM) == 1);
  CHECK(readable(fd));
  process_sigchld_drain();
  while (!process_reap(&p)) usleep(1000);
  CHECK(p.signal == SIGTERM && p.exit_code == 128 + SIGTERM);
  CHECK(process_kill(&p, SIGTERM) == 0); /* the group is gone */
  process_release(&p);
}

static void reports_what_cannot_start(void) {
  process p;
  char err[256];
  const char *missing[] = {"luagent-no-such-program", NULL};
  process_options o = {.argv = missing};
  CHECK(process_spawn(&p, &o, err, sizeof err) == ENOENT);
  CHECK(strstr(err, "'luagent-no-such-program' not found in PATH") != NULL);
  const char *sh[] = {"sh", "-c", "true", NULL};
  process_options bad_cwd = {.argv = sh, .cwd = "/no/such/folder"};
  CHECK(process_spawn(&p, &bad_cwd, err, sizeof err) == ENOENT);
  CHECK(strstr(err, "cannot change to the folder '/no/such/folder'") != NULL);
  const char *none[] = {NULL};
  process_options empty = {.argv = none};
  CHECK(process_spawn(&p, &empty, err, sizeof err) == EINVAL);
  /* nothing left behind: no child to reap */
  CHECK(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD);
}

static void gives_the_child_its_environment_and_folder(void) {
  const char *argv[] = {"sh", "-c", "echo \"$ONLY:$HOME:$(pwd)\"", NULL};
  const char *envp[] = {"ONLY=yes", NULL};
  process_options o = {.argv = argv, .envp = envp, .cwd = "/", .stdio = {PROCESS_NULL, PROCESS_PIPE, PROCESS_INHERIT}};
  process p;
  char err[256];
  CHECK(process_spawn(&p, &o, err, sizeof err) == 0);
  CHECK(p.fd[0] == -1 && p.fd[2] == -1);
  char out[64] = {0};
  CHECK(readable(p.fd[1]));
  CHECK(read(p.fd[1], out, sizeof out - 1) > 0);
  CHECK_STR(out, "yes::/\n");
  int status;
  CHECK(waitpid(p.pid, &status, 0) == p.pid);
  process_release(&p);
}

int main(void) {
  RUN(finds_programs_like_execvp);
  RUN(reads_the_environment_list);
  RUN(names_signals);
  RUN(decodes_wait_statuses);
  RUN(spawns_with_pipes_and_sees_the_end_by_pidfd);
  RUN(sees_the_end_by_sigchld_and_kills_the_group);
  RUN(reports_what_cannot_start);
  RUN(gives_the_child_its_environment_and_folder);
  TEST_EXIT();
}
