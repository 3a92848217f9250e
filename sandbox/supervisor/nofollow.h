/* nofollow: open a folder, or every folder of a path, without following a
 * symbolic link, on every kernel luagent's sandboxes run under.
 * openat(O_DIRECTORY|O_NOFOLLOW) is enough on Linux, but gVisor's runsc
 * (20221219) follows a link to a folder despite O_NOFOLLOW when O_DIRECTORY
 * is given; so the name is also looked at without following (fstatat
 * AT_SYMLINK_NOFOLLOW) and the folder opened must be the one looked at (same
 * device and inode: a link swapped in between is caught too). Used by the
 * file ops (fileio.c), pack and unpack. */
#ifndef SV_NOFOLLOW_H
#define SV_NOFOLLOW_H

#include <stddef.h>

/* The folder `name` in dirfd, opened O_RDONLY|O_DIRECTORY|O_CLOEXEC; -1 with
 * errno (ELOOP: it is a symbolic link) otherwise. */
int open_dir_nofollow(int dirfd, const char *name);

/* A path split into the folder holding its last component (opened) and that
 * component. */
typedef struct place {
  int dir;                /* the folder, -1 when not reached */
  char *name;             /* the last component (malloc'd) */
  const char *kind, *why; /* when dir < 0: the error's kind and text */
  int err;                /* when dir < 0: the errno that stopped the walk; 0 when refused by its form */
} place;

/* Opens every folder of path[0..len) but its last component, one at a time
 * with open_dir_nofollow: from "/" for an absolute path, else from the folder
 * `from` (from < 0: only absolute paths). With make, missing folders are made
 * (mode 0755, as the current fs identity). Refused by its form: a "." or ".."
 * component, a NUL, an empty last component (the path names a folder). kind
 * is one of refused (the form, or a symbolic link on the way), not_found,
 * not_a_file (a component is not a folder), no_space (ENOSPC, EDQUOT),
 * unreadable (any other errno, in why). */
place open_place(int from, const char *path, size_t len, int make);
/* Closes pl's folder and frees its name; pl can be freed twice. */
void place_free(place *pl);

#endif
