/* watch: whether anything under one folder changed (the outputs mirror's
 * save.from), kept by serve with inotify so that every result can say so
 * and the host lists the folder only when it did (lua/luagent/sandbox/mirror.lua).
 *
 * The mark is a generation: a number that goes up whenever something under
 * the folder may have changed — a file written, truncated, closed after
 * writing, its mode or times set, created, removed, renamed in or out, a
 * folder made or moved, the folder itself (or one of the folders on its path)
 * made, removed or renamed. Serve watches every folder and every regular file
 * under the root (a file's own watch sees a write through a hard link from
 * outside the folder), and each folder on the root's path for the next
 * component's name, so a root that does not exist yet, or is replaced, is
 * seen when it appears. Events are read when a generation is asked for (no
 * wake-up per write while commands run); a new folder's watches are set
 * then, which is safe because the event that made it already raised the
 * generation, and the host's listing comes after.
 *
 * Unknown (-1): nothing is watched, or some folder or file under the root
 * could not be watched (the command user may not read it, more than
 * WATCH_MAX watches, more than 64 levels, inotify's own limits). The host
 * then lists, as without a watch. An overflow of the kernel's event queue
 * (IN_Q_OVERFLOW) raises the generation and sets every watch again. Each
 * setting of the watches raises it too, so an unknown stretch never ends
 * on the number it started from.
 *
 * The walk runs with serve's file-system identity set to the command user
 * (as listing.c's), opens each folder without following a symlink and
 * reads no file content. This file calls nothing else of the supervisor's
 * (frames.c and listing.c call it). */
#ifndef SV_WATCH_H
#define SV_WATCH_H

#include <stddef.h>

/* Watches and files watched at most per session (inotify's watches are the
 * host's, shared by uid 0 across every container). */
#define WATCH_MAX 4096

/* Watches the absolute folder path[0..len) (replacing what was watched), as
 * uid:gid. NULL when every folder and file under it (or, while it does not
 * exist, the folders on its path) is watched; else why not (a static
 * string): results then carry no generation until a later event's walk
 * succeeds. */
const char *watch_start(const char *path, size_t len, unsigned uid, unsigned gid);

/* The generation now (the events so far read first), or -1 when unknown. */
long long watch_generation(void);

#endif
