/* nofollow: open a folder by name without following a symbolic link, on
 * every kernel luagent's sandboxes run under. openat(O_DIRECTORY|O_NOFOLLOW)
 * is enough on Linux, but gVisor's runsc (20221219) follows a link to a
 * folder despite O_NOFOLLOW when O_DIRECTORY is given; so the name is also
 * looked at without following (fstatat AT_SYMLINK_NOFOLLOW) and the folder
 * opened must be the one looked at (same device and inode: a link swapped in
 * between is caught too). */
#ifndef SV_NOFOLLOW_H
#define SV_NOFOLLOW_H

/* The folder `name` in dirfd, opened O_RDONLY|O_DIRECTORY|O_CLOEXEC; -1 with
 * errno (ELOOP: it is a symbolic link) otherwise. */
int open_dir_nofollow(int dirfd, const char *name);

#endif
