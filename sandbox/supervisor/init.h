/* init: PID 1 of a session (`luagent-supervisor init [--move]`), as uid 0
 * with only CAP_SETUID, CAP_SETGID and CAP_KILL.
 *  - Staging: with --move, the binary the host put into the workspace volume
 *    copies itself to /run/luagent/luagent-supervisor (a root-owned tmpfs
 *    mounted exec), removes the workspace copy and re-execs from there, so
 *    nothing a command can write is ever run as root. Without /run/luagent it
 *    runs where it is (and says so on stderr).
 *  - Then it reaps orphans, kills (once a second) any non-root process that
 *    was reparented to it (a command that lost its reaper), ignores every
 *    signal except SIGTERM/SIGINT from the engine (it exits: `docker stop`),
 *    and is not dumpable. Commands run as another uid, so they can neither
 *    signal nor ptrace it. */
#ifndef SV_INIT_H
#define SV_INIT_H

#define SV_HOME "/run/luagent"
#define SV_BINARY SV_HOME "/luagent-supervisor"

int init_main(int move);

#endif
