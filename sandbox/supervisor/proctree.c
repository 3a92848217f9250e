/* proctree: /proc scans and the kill of a command's process tree (see
 * proctree.h). A scan reads /proc/<pid>/stat of every process; the namespace
 * holds one session's processes, so this is a few hundred small reads at
 * most (the pids cap). */
#include "proctree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frames.h"

typedef struct proc_entry {
  pid_t pid, ppid, sid;
  char state;
  unsigned long long start;
  unsigned char mark; /* 1 below root */
} proc_entry;

typedef struct proc_table {
  proc_entry *items;
  size_t n, cap;
} proc_table;

/* Parses "pid (comm) state ppid pgrp session ... starttime": comm may hold ')' and spaces,
 * so the fields are read after its last ')'. */
static int parse_stat(const char *text, proc_entry *e) {
  const char *close = strrchr(text, ')');
  if (!close) return -1;
  char state;
  int ppid, pgrp, sid;
  if (sscanf(close + 1, " %c %d %d %d", &state, &ppid, &pgrp, &sid) != 4) return -1;
  const char *p = close + 2;
  for (int field = 3; field < 22 && p; field++) { /* starttime is field 22 */
    p = strchr(p, ' ');
    if (p) p++;
  }
  e->state = state;
  e->ppid = ppid;
  e->sid = sid;
  e->start = p ? strtoull(p, NULL, 10) : 0;
  return 0;
}

static int read_entry(int proc_fd, const char *name, proc_entry *e) {
  char path[64], text[1024];
  snprintf(path, sizeof path, "%s/stat", name);
  int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read_some(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  e->pid = (pid_t)atoi(name);
  e->mark = 0;
  return parse_stat(text, e);
}

static int proc_scan(proc_table *t) {
  t->n = 0;
  int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *dir = proc_fd >= 0 ? fdopendir(dup(proc_fd)) : NULL;
  if (!dir) {
    if (proc_fd >= 0) close(proc_fd);
    return -1;
  }
  for (struct dirent *d; (d = readdir(dir));) {
    if (d->d_name[0] < '1' || d->d_name[0] > '9') continue;
    if (t->n == t->cap) {
      size_t cap = t->cap ? t->cap * 2 : 256;
      proc_entry *items = realloc(t->items, cap * sizeof *items);
      if (!items) break;
      t->items = items, t->cap = cap;
    }
    if (read_entry(proc_fd, d->d_name, &t->items[t->n]) == 0) t->n++;
  }
  closedir(dir);
  close(proc_fd);
  return 0;
}

static int marked(const proc_table *t, pid_t pid, pid_t root) {
  if (pid == root) return 1;
  for (size_t i = 0; i < t->n; i++)
    if (t->items[i].pid == pid) return t->items[i].mark;
  return 0;
}

/* Marks the processes below root: passes until nothing changes, as /proc
 * may list a child before its parent. */
static void mark_below(proc_table *t, pid_t root) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < t->n; i++) {
      proc_entry *e = &t->items[i];
      if (e->mark) continue;
      if (!marked(t, e->ppid, root)) continue;
      e->mark = 1;
      changed = 1;
    }
  }
}

static int kill_set_add(kill_set *s, unsigned long long key) {
  for (size_t i = 0; i < s->n; i++)
    if (s->keys[i] == key) return 0;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    unsigned long long *keys = realloc(s->keys, cap * sizeof *keys);
    if (!keys) return 0;
    s->keys = keys, s->cap = cap;
  }
  s->keys[s->n++] = key;
  return 1;
}

void kill_set_free(kill_set *s) {
  free(s->keys);
  s->keys = NULL;
  s->n = s->cap = 0;
}

long proc_kill_below(pid_t root, pid_t session, pid_t spare, kill_set *killed) {
  proc_table t = {0};
  if (proc_scan(&t) != 0) return -1;
  if (session > 0)
    for (size_t i = 0; i < t.n; i++) t.items[i].mark = t.items[i].sid == session;
  mark_below(&t, root);
  long left = 0;
  for (size_t i = 0; i < t.n; i++) {
    proc_entry *e = &t.items[i];
    if (!e->mark || e->pid == spare) continue;
    if (e->state == 'Z' || e->state == 'X') { /* gone, but not yet reaped */
      if (e->ppid != spare) left++;
      continue;
    }
    left++;
    kill(e->pid, SIGKILL);
    kill_set_add(killed, ((unsigned long long)e->pid << 40) ^ e->start);
  }
  free(t.items);
  return left;
}

static int owned_by_root(pid_t pid) {
  char path[32];
  struct stat st;
  snprintf(path, sizeof path, "/proc/%d", (int)pid);
  return stat(path, &st) != 0 || st.st_uid == 0;
}

long proc_kill_orphans_of(pid_t parent) {
  proc_table t = {0};
  if (proc_scan(&t) != 0) return 0;
  for (size_t i = 0; i < t.n; i++) {
    proc_entry *e = &t.items[i];
    e->mark = e->ppid == parent && e->state != 'Z' && !owned_by_root(e->pid);
  }
  mark_below(&t, -1); /* and everything below them (parent itself is not marked: its ppid is not itself) */
  long n = 0;
  for (size_t i = 0; i < t.n; i++)
    if (t.items[i].mark && t.items[i].state != 'Z' && kill(t.items[i].pid, SIGKILL) == 0) n++;
  free(t.items);
  return n;
}

static long long counter_in(const char *path, const char *key) {
  FILE *f = fopen(path, "re");
  if (!f) return -1;
  char line[256];
  long long value = -1;
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f))
    if (strncmp(line, key, klen) == 0 && line[klen] == ' ') value = strtoll(line + klen + 1, NULL, 10);
  fclose(f);
  return value;
}

long long oom_kill_count(void) {
  long long n = counter_in("/sys/fs/cgroup/memory/memory.oom_control", "oom_kill");
  return n >= 0 ? n : counter_in("/sys/fs/cgroup/memory.events", "oom_kill");
}
