/* tar: tar streams for moving files in and out of Docker containers. Pure C,
 * no Lua.
 *
 *  - tar_writer builds a ustar stream (PAX headers for long names) chunk by
 *    chunk for PUT /containers/{id}/archive. Files are read lazily, in chunks,
 *    while streaming: a 1 GB input never sits in memory.
 *  - tar_reader parses a tar stream incrementally (ustar, GNU long names, PAX,
 *    base-256 sizes); bytes may arrive cut anywhere.
 *  - tar_check checks a stream that another tar extracts (a fork's workspace)
 *    by the same naming rules, before it is passed on.
 *  - tar_extract writes what GET .../archive returns onto the host. It is a
 *    security boundary: nothing is ever written outside the destination, and
 *    no symlink is ever followed while extracting. Hostile entries are refused
 *    (recorded with a reason) and the rest of the archive still extracts.
 * One file each: tar_writer.c, tar_reader.c, tar_check.c, tar_extract.c; what they share
 * (block layout, checksum, small containers) is tar_internal.h/tar_common.c. */
#ifndef LUAGENT_TAR_H
#define LUAGENT_TAR_H

#include <stddef.h>

/* ---- writer: produces a tar stream chunk by chunk ---- */
typedef struct tar_writer tar_writer;

/* A new, empty stream whose headers all carry this numeric owner. NULL when
 * out of memory. */
tar_writer *tar_writer_new(unsigned uid, unsigned gid);

/* Names are archive paths like "input/data.csv": relative, with no ".", ".."
 * or empty components and no leading "/"; a trailing "/" is ignored. Missing
 * parent directories are added automatically (mode 0755) before the entry,
 * once each. Every add_* returns 0, or -1 with a message in err that names
 * the entry (and the host path when there is one). Adding is refused once
 * streaming has started. */

/* Adds the regular file at host_path (symlinks to one are fine): it is
 * stat'ed now (size, mode, mtime) and opened and read only while streaming. */
int tar_writer_add_file(tar_writer *w, const char *name, const char *host_path, char *err, size_t errlen);
/* Adds a regular file holding a copy of data[0..len). */
int tar_writer_add_data(tar_writer *w, const char *name, const void *data, size_t len, unsigned mode,
                        char *err, size_t errlen);
int tar_writer_add_dir(tar_writer *w, const char *name, unsigned mode, char *err, size_t errlen);
int tar_writer_add_symlink(tar_writer *w, const char *name, const char *target, char *err, size_t errlen);

/* The exact total length of the stream in bytes (for Content-Length). */
long long tar_writer_size(const tar_writer *w);

/* Fills up to n bytes of the stream into dst. Returns the count, 0 at the
 * end, or (size_t)-1 on error (e.g. a file vanished or changed size while
 * streaming); tar_writer_error() then says which file and why. */
size_t tar_writer_read(tar_writer *w, char *dst, size_t n);
/* The last error message ("" when none). */
const char *tar_writer_error(const tar_writer *w);
void tar_writer_free(tar_writer *w);

/* ---- reader: incremental parser ---- */
typedef struct tar_entry_info {
  const char *name;      /* full name (PAX path / GNU long name applied) */
  const char *linkname;  /* for links ("" otherwise) */
  char type;             /* '0' regular ('\0' and '7' are reported as '0'), '1' hard link,
                            '2' symlink, '3' char dev, '4' block dev, '5' directory, '6' fifo,
                            other: as in the header */
  unsigned mode;
  long long size;        /* bytes of data that follow (0 for links, dirs, devices, fifos) */
  long long mtime;
} tar_entry_info;

typedef struct tar_reader_callbacks {
  /* 0: deliver the entry's data, 1: skip it, -1: abort the parse */
  int (*on_entry)(void *ctx, const tar_entry_info *e);
  /* data of the current entry, in pieces; non-zero aborts */
  int (*on_data)(void *ctx, const char *data, size_t n);
  /* after the last data of every entry on_entry did not abort (also for
   * skipped and empty ones); non-zero aborts. May be NULL. */
  int (*on_entry_end)(void *ctx);
} tar_reader_callbacks;

typedef struct tar_reader tar_reader;

/* A parser that reports to cb (copied) with ctx. NULL when out of memory. */
tar_reader *tar_reader_new(const tar_reader_callbacks *cb, void *ctx);
/* Parses n more bytes. Returns 0, or -1 (see tar_reader_error); after an
 * error every later call fails too. Bytes after the end-of-archive blocks
 * are ignored. */
int tar_reader_feed(tar_reader *r, const char *data, size_t n);
/* Declares the end of the stream: -1 if it stopped inside a header or an
 * entry's data. A stream that ends between entries without the end blocks is
 * accepted. */
int tar_reader_finish(tar_reader *r);
/* The error message ("" when none), e.g. "bad header checksum at entry 3". */
const char *tar_reader_error(const tar_reader *r);
void tar_reader_free(tar_reader *r);

/* ---- checking a stream extracted elsewhere (a fork's workspace) ---- */
typedef struct tar_check tar_check;

/* A checker by extraction's naming rules (tar_extract's strip, "absolute
 * path", "'..' in path") and what keeps a copy where its names say: every
 * entry is `strip` or under it; no entry goes through a symlink or a
 * non-directory of the archive, and none comes twice; a hard link names a
 * regular file that came before; no device or fifo; the limits as
 * tar_extract_set_limits' (0: none). Symlinks keep their targets: nothing
 * is written through them. NULL with a message in err (a bad strip, memory). */
tar_check *tar_check_new(const char *strip, long long max_bytes, size_t max_entries, char *err, size_t errlen);
/* Checks n more bytes: 0, or -1 at the first entry refused (or a malformed
 * stream): tar_check_error names it and why; every later call fails too. */
int tar_check_feed(tar_check *c, const char *data, size_t n);
/* The end of the stream: -1 when it stopped inside an entry. */
int tar_check_finish(tar_check *c);
const char *tar_check_error(const tar_check *c);
/* 1 when the failure was an entry refused, 0 for a malformed stream (or none). */
int tar_check_refused(const tar_check *c);
/* Bytes of regular files and entries (the destination itself not counted) seen. */
long long tar_check_bytes(const tar_check *c);
size_t tar_check_entries(const tar_check *c);
void tar_check_free(tar_check *c);

/* ---- safe extraction onto the host ---- */
typedef struct tar_extract tar_extract;

/* Extracts into dest_dir, created if missing (mkdir -p). strip: if non-NULL
 * (e.g. "output"), entries named exactly `strip` or starting with `strip/`
 * have that prefix removed: "output/a.csv" -> "a.csv"; an entry equal to
 * `strip` that is a directory maps to dest itself, one that is a file keeps
 * its name. Entries not under strip keep their own name. Returns NULL with a
 * message in err when dest_dir cannot be created or opened. */
tar_extract *tar_extract_new(const char *dest_dir, const char *strip, char *err, size_t errlen);
/* Caps what one extraction may write: bytes of file data and entries (0: no
 * limit). An entry over a cap is refused, and the rest go on. */
void tar_extract_set_limits(tar_extract *x, long long max_bytes, size_t max_entries);
/* Extracts n more bytes of the archive; file data is streamed straight to
 * disk. Returns 0, or -1 on a fatal error (I/O error, bad header); refused
 * entries are not fatal. */
int tar_extract_feed(tar_extract *x, const char *data, size_t n);
/* Declares the end of the archive: 0, or -1 (truncated stream, I/O error). */
int tar_extract_finish(tar_extract *x);
/* The fatal error message ("" when none). */
const char *tar_extract_error(const tar_extract *x);

/* What happened (valid until free). Files are the regular files and hard
 * links written, with paths relative to dest. */
size_t tar_extract_file_count(const tar_extract *x);
const char *tar_extract_file_path(const tar_extract *x, size_t i);
long long tar_extract_file_size(const tar_extract *x, size_t i);
/* Refused entries: the name as in the archive and a short reason: "absolute
 * path", "'..' in path", "symlink target leaves the destination", "symlink
 * target has '..' after a name", "empty symlink target", "hard link target
 * leaves the destination", "hard link to unknown target", "device or fifo",
 * "unsupported entry type", "path goes through a symlink", "path goes through
 * a non-directory", "a directory is in the way", "a non-directory is in the
 * way", "name too long". */
size_t tar_extract_refused_count(const tar_extract *x);
const char *tar_extract_refused_name(const tar_extract *x, size_t i);
const char *tar_extract_refused_reason(const tar_extract *x, size_t i);
/* Bytes of file data written. */
long long tar_extract_bytes(const tar_extract *x);
void tar_extract_free(tar_extract *x);

#endif
