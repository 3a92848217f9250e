/* fileio: the `read` and `put` ops, answered by serve itself (no fork): one
 * file of the workspace into the host's memory, or the host's bytes into one
 * file, for box:get and box:put (the agent's read_file, write_file and
 * view_image tools). A command costs a fork and a reaper; these cost a round
 * trip and the copy.
 *
 * Both act with serve's file-system identity set to the command user
 * (setfsuid/setfsgid, as listing.c): what they may read or write is what a
 * command may, and what put makes (the file, missing folders) is the command
 * user's. The path is absolute and opened one component at a time from "/"
 * with O_NOFOLLOW: a symlink anywhere in it (the file itself included) is
 * refused, and so is a ".." or "." component.
 *
 *   read <id> with p (path), b (max bytes, 0: none)
 *     O frames: the content; X <id> 0 - 0
 *     or one E line "<kind> <message>\n" and X <id> 2 - 0, kind one of
 *     not_found, too_large (the message says the size), not_a_file,
 *     refused (a link, a bad path), unreadable
 *   put <id> with p (path), i (the bytes; absent: empty), m (mode, decimal;
 *     absent: 0644)
 *     written under a temporary name in the same folder, then renamed over
 *     the path: a reader never sees half a file. X <id> 0 - 0, or
 *     F "<kind> <message>" and X <id> 1 - 0, kind no_space ("no space left
 *     in the workspace (workspace_size)"), not_a_file, refused, unwritable. */
#ifndef SV_FILEIO_H
#define SV_FILEIO_H

#include "supervisor_proto.h"

/* Answers a read request (O, E and X frames) as uid:gid. */
void read_request(const sv_request *req, unsigned uid, unsigned gid);
/* Answers a put request (F and X frames) as uid:gid. */
void put_request(const sv_request *req, unsigned uid, unsigned gid);

/* Writing a file whole, for put and unpack (unpack.h): the bytes go into a
 * new file under a temporary name in the target's folder, which is then
 * renamed over the target. */
#define TEMP_NAME_MAX 64
/* A new file in dir, ".luagent-put.<pid>.<random>" (0600, O_EXCL, never
 * through a link), its name into tmp: the fd, or -1 with errno. */
int temp_file(int dir, char tmp[TEMP_NAME_MAX]);
/* Sets the file's mode, closes fd and renames tmp over name in dir: 0, or -1
 * with errno (then tmp is removed). fd is closed either way. */
int temp_file_commit(int dir, const char *tmp, int fd, const char *name, unsigned mode);
/* Closes fd and removes tmp (errno kept): a file given up. */
void temp_file_drop(int dir, const char *tmp, int fd);
/* What a failed write says: kind no_space, "no space left in the workspace
 * (workspace_size)", for ENOSPC and EDQUOT; else unwritable, strerror(e). */
const char *write_error(int e, const char **kind);

#endif
