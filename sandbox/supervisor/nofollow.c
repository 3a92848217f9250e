/* nofollow: a folder opened without following a link (see nofollow.h). */
#include "nofollow.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int open_dir_nofollow(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat named, opened;
  if (fstatat(dirfd, name, &named, AT_SYMLINK_NOFOLLOW) != 0 || fstat(fd, &opened) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (S_ISLNK(named.st_mode) || named.st_dev != opened.st_dev || named.st_ino != opened.st_ino) {
    close(fd);
    errno = ELOOP;
    return -1;
  }
  return fd;
}
