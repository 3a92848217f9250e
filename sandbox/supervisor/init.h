/* init: PID 1 of a session (`luagent-supervisor init`), as uid 0 with only
 * CAP_SETUID, CAP_SETGID, CAP_KILL and CAP_SETPCAP. The host put the binary
 * into its own volume, mounted at SV_HOME (root-owned: nothing a command can
 * write is ever run as root), before the container started.
 *  - It reaps orphans, kills (once a second) any non-root process that was
 *    reparented to it (a command that lost its reaper), ignores every signal
 *    except SIGTERM/SIGINT from the engine (it exits: `docker stop`), and is
 *    not dumpable. Commands run as another uid, so they can neither signal
 *    nor ptrace it. */
#ifndef SV_INIT_H
#define SV_INIT_H

#define SV_HOME "/run/luagent"
#define SV_BINARY SV_HOME "/luagent-supervisor"

int init_main(void);

#endif
