/* fsid: serve's file-system identity (see fsid.h). */
#include "fsid.h"

#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <unistd.h>

enum { FSID_FSUID = 1, FSID_EUID = 2, FSID_NESTED = 3 };

/* Entered already: a nested enter (a file request's result frame can make
 * watch.c set its watches again) keeps the identity it finds, and its leave
 * must not give root's back before the outer leave does. */
static int entered;

static int fsid_switch(unsigned uid, unsigned gid) {
  setfsgid(gid);
  setfsuid(uid);
  if ((unsigned)setfsuid((uid_t)-1) == uid) return FSID_FSUID; /* -1 changes nothing: it says the current one */
  if (setegid(gid) != 0) return -1;
  if (seteuid(uid) != 0) {
    setegid(0);
    return -1;
  }
  return FSID_EUID;
}

int fsid_enter(unsigned uid, unsigned gid) {
  if (entered) return FSID_NESTED;
  int how = fsid_switch(uid, gid);
  if (how > 0) entered = 1;
  return how;
}

void fsid_leave(int how) {
  if (how == FSID_NESTED || how < 0) return;
  entered = 0;
  if (how == FSID_EUID) {
    seteuid(0);
    setegid(0);
    prctl(PR_SET_DUMPABLE, 0);
  } else if (how == FSID_FSUID) {
    setfsuid(0);
    setfsgid(0);
  }
}
