/* listing: the `list` op, answered by serve itself (no fork): the regular
 * files under a folder with their size, times and inode, and which of them a
 * process holds open for writing. luagent's outputs mirror
 * (lua/luagent/sandbox/mirror.lua) compares two listings after each command
 * and copies (with `pack`) only what changed and is not being written.
 *
 * The walk runs with serve's file-system identity set to the command user
 * (setfsuid/setfsgid): it sees what commands can see, and may read the fds
 * of the commands' processes (theirs only: serve's and PID 1's stay
 * closed). It never follows a symlink (the path's components included),
 * reads no file content, stops at the entry limit and 64 levels down.
 *
 *   request: list <id> with p (absolute path), n (max entries, 0: none)
 *   O lines: "f <size> <mtime s.ns> <ctime s.ns> <inode> <len>:<relpath>\n"
 *                                    a regular file under the path
 *            "w <len>:<relpath>\n"   a process has it open for writing
 *   E lines: "<reason> <len>:<relpath>\n", reason too_many (the walk stopped
 *            there), too_deep, unreadable, or missing (the path; exit 2)
 *   X <id> 0 - 0, or 2 when the path is missing or not a folder. */
#ifndef SV_LISTING_H
#define SV_LISTING_H

#include "supervisor_proto.h"

/* Answers a list request on stdout (O, E and X frames), as uid:gid. */
void list_request(const sv_request *req, unsigned uid, unsigned gid);

#endif
