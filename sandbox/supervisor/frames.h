/* frames: what the supervisor says to the host on its stdout, in the frames
 * src/core/supervisor_frames.h parses (see DESIGN.md, "Frames"), and the small I/O helpers
 * every mode shares. Writes are blocking and whole: a frame is never cut by
 * another one. */
#ifndef SV_FRAMES_H
#define SV_FRAMES_H

#include <stddef.h>
#include <sys/types.h>

#include "supervisor_proto.h"

#define SV_VERSION SV_PROTOCOL_VERSION

/* Writes all n bytes to fd (retrying on EINTR and short writes). 0 or -1. */
int write_all(int fd, const void *data, size_t n);
/* Reads up to n bytes, retrying on EINTR. As read(2). */
ssize_t read_some(int fd, void *data, size_t n);

/* R <version>: the supervisor is ready. */
void frame_ready(void);
/* O/E/F <id> <n>\n<bytes>: stdout (kind 'O'), stderr ('E') or why a command
 * could not start ('F'). */
void frame_data(char kind, long long id, const void *data, size_t n);
/* F with a printf-style message. */
void frame_failure(long long id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* X <id> <code> <flags> <killed> [<mark>]: command id ended. flags: letters
 * of "okrt" or "-" (see DESIGN.md); killed: how many of its other processes
 * the supervisor killed when it ended; mark: the watched folder's change
 * generation now (watch.h), left out when unknown. */
void frame_exit(long long id, int code, const char *flags, long killed);
/* The same with the mark given (a listing's: the generation before its walk; -1: none). */
void frame_exit_marked(long long id, int code, const char *flags, long killed, long long mark);

/* The exit code a shell would report for a wait status: the code, or 128 +
 * the signal that ended the process. */
int exit_code_of(int wait_status);

/* Milliseconds of CLOCK_MONOTONIC. */
long long now_ms(void);

#endif
