/* unpack: a tar stream on stdin extracted under a folder, the mirror of pack,
 * for staging files into a session where no archive endpoint exists (the
 * Kubernetes backend: sandbox/KUBERNETES.md). The host starts it through
 * serve's `run` or `spawn`, so it runs as the command user with no capability:
 * what it makes is the command user's without a chown, and it can write only
 * what a command can.
 *
 *   luagent-supervisor unpack DIR [MAX_BYTES]
 *
 * The stream is ustar with PAX or GNU long names (src/core/tar_reader.c, the
 * host's parser). The rules are the host's extraction's (src/core/tar_extract.c):
 *  - every entry is opened from DIR (an absolute path to a folder that exists)
 *    one component at a time with open_place (nofollow.h): an absolute name,
 *    a "..", a symbolic link anywhere on the way (one a command planted
 *    included) refuse the entry; nothing is written outside DIR;
 *  - regular files and folders only: links, devices, fifos are refused;
 *  - mode bits masked to 0777 (no setuid, setgid, sticky) and not changed by
 *    the umask; folders made owner-writable (| 0700), missing parents 0755;
 *  - a file is written under a temporary name in its folder and renamed over
 *    the target (a reader never sees half of it; a folder at the target
 *    refuses the entry); its mtime is the header's. A folder that exists is
 *    kept as it is; folders keep the time their last entry was written;
 *  - file data goes through a fixed buffer, never whole in memory;
 *  - MAX_BYTES (0 or absent: none) caps the bytes of all files: an entry the
 *    cap would pass is refused by its header's size, unread.
 * stdout: one line "refused NAME: REASON" per entry refused (control bytes
 * and backslashes in NAME as \ooo), then "unpacked N files, M bytes": the
 * files extracted whole and their bytes.
 * stderr: why it stopped, on a fatal error. Exit 0 everything extracted, 1
 * some entries refused (the rest extracted), 2 a fatal error: a malformed or
 * truncated stream ("malformed tar stream: ..."), no space ("no space left
 * in the workspace (workspace_size)", ENOSPC or EDQUOT), an I/O error, DIR
 * missing. A file cut by a fatal error is removed: nothing is left under its
 * name. */
#ifndef SV_UNPACK_H
#define SV_UNPACK_H

/* Extracts stdin under dir; returns the exit code. */
int unpack_main(const char *dir, long long max_bytes);

#endif
