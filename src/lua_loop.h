/* lua_loop: tasks (coroutines driven by the event loop) and the scheduler. */
#ifndef LUAGENT_LUA_LOOP_H
#define LUAGENT_LUA_LOOP_H

#include <lua.h>

#include "host.h"

/* Spawns the function on top of the stack (with nargs arguments above it) as
 * a task; pops them and pushes the task handle. */
void tasks_spawn(lua_State *L, int nargs);
/* Drives the scheduler until every task has finished. If `main` (a task
 * handle's userdata, may be NULL) fails, the other tasks are cancelled. */
void tasks_run(host *h, void *main);
/* Asks every unfinished task to stop (Ctrl-C, or the main task failed). */
void tasks_cancel_all(host *h, const char *why);
/* After tasks_run: true if the task on top of the stack failed; pushes its
 * error value and traceback (string or nil). */
int task_failure(lua_State *L, int idx);
/* Reports tasks that failed without anyone taking their error. Returns how many. */
int tasks_report_unobserved(host *h);

/* The coroutine of the task running now, or NULL. Async-signal-safe. */
lua_State *tasks_running_thread(host *h);

int luaopen_luagent_loop(lua_State *L);

#endif
