/* proctree: the processes of this PID namespace as /proc shows them, and the
 * one implementation of "kill every process a command started": a process
 * belongs to a command when its parent chain leads to the command's reaper
 * (a subreaper, so orphans stay in the chain, whatever setsid or double fork
 * they tried). Where no subreaper can be had (gVisor's runsc answers
 * PR_SET_CHILD_SUBREAPER with EINVAL: orphans go to PID 1), a process also
 * belongs to it when it is in the command's session (the main process calls
 * setsid, so its pid is the session id), and so does everything below it.
 * Also the memory cgroup's OOM-kill counter. */
#ifndef SV_PROCTREE_H
#define SV_PROCTREE_H

#include <stddef.h>
#include <sys/types.h>

/* The processes killed so far by one kill phase, each counted once (a pid
 * with its start time, so a reused pid is a new process). */
typedef struct kill_set {
  unsigned long long *keys;
  size_t n, cap;
} kill_set;

/* Sends SIGKILL to every live process below `root` (not root itself), and
 * when `session` > 0 to every one in that session and below it, except the
 * process `spare` (0: none; its descendants are not spared), recording them
 * in `killed`. Returns how many processes of the tree are left, the killed
 * ones and unreaped zombies (not spare's own), so 0 means done; -1 when
 * /proc cannot be read. */
long proc_kill_below(pid_t root, pid_t session, pid_t spare, kill_set *killed);
void kill_set_free(kill_set *s);

/* Sends SIGKILL to every process whose parent is `parent` and whose owner
 * is not uid 0, and to everything below them (init's sweep of commands that
 * lost their reaper). Returns how many. */
long proc_kill_orphans_of(pid_t parent);

/* The memory cgroup's oom_kill counter (cgroup v1 memory.oom_control or v2
 * memory.events), or -1 when neither can be read. */
long long oom_kill_count(void);

#endif
