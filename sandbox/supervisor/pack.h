/* pack: a tar stream of one path, walked by the supervisor itself (the `pack`
 * op), for extract and snapshot. Against the engine's archive endpoint it
 * (1) refuses an entry over the limits from its stat size alone, so a 1 TiB
 * sparse file costs one stat, not 1 TiB of zeros, and stops the walk at the
 * entry limit; (2) walks with openat from each directory, so paths longer
 * than PATH_MAX come back (PAX path records); (3) names everything it left
 * out. It runs as the command uid (it reads what commands can read), never
 * follows a symlink, and writes:
 *   stdout: the tar (ustar + PAX), entries named like the archive endpoint's:
 *           the path's last component, then what is below it;
 *   stderr: one line per entry left out: "<reason> <len>:<path>\n", reason one
 *           of too_big, too_many (the walk stopped there), too_deep, special
 *           (device, fifo, socket), unreadable, changed (size changed while
 *           read: cut or zero-padded to the size in its header), missing. */
#ifndef SV_PACK_H
#define SV_PACK_H

typedef struct pack_spec {
  const char *path;
  long long max_bytes;   /* file data at most; 0: no limit */
  long long max_entries; /* 0: no limit */
} pack_spec;

/* Writes the tar of spec->path to fd 1. Returns the exit code: 0 the walk
 * finished (entries may have been left out: see stderr), 2 the path is
 * missing, 1 the stream could not be written. For reaper's command_spec.body. */
int pack_main(void *spec);

#endif
