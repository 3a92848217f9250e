/* fsid: serve's file-system identity for the file requests it answers itself
 * (list, read, put): the command user's, so that what they may read or
 * write is what a command may. setfsuid/setfsgid where the kernel has them;
 * gVisor's runsc answers setfsuid with -1 (not implemented), and there the
 * effective ids are switched instead (the real and saved ids stay 0, so no
 * command can signal or trace serve meanwhile; PR_SET_DUMPABLE is set to 0
 * again on the way back, as a credential change resets it). */
#ifndef SV_FSID_H
#define SV_FSID_H

/* Becomes uid:gid for file access. Returns how (for fsid_leave), or -1
 * when neither way works (nothing changed then). */
int fsid_enter(unsigned uid, unsigned gid);

/* Back to root's identity, undoing what fsid_enter(...) = how did. */
void fsid_leave(int how);

#endif
