/* tar extraction never writes outside the destination, whatever the archive
 * (names, links, devices, things in the way, modes, strip), and the archive
 * check refuses what extraction would. */
#include "tar_fixtures.h"

static void names_escaping_dest_are_refused(void) {
  for (size_t i = 0; i < NCHUNKS; i++) {
    sandbox s;
    char abs[PATH_MAX];
    int rc;
    sandbox_open(&s);
    join(abs, sizeof abs, s.sibling, "abs-evil");
    buf tar = BUF_INIT;
    raw_entry(&tar, "../evil", '0', "", "evil data that must be skipped");
    raw_entry(&tar, abs, '0', "", "evil");
    raw_entry(&tar, "a/../../evil", '0', "", "evil");
    raw_entry(&tar, "../evil-dir", '5', "", NULL);
    raw_entry(&tar, "./ok.txt", '0', "", "fine");
    raw_end(&tar);
    tar_extract *x = extract(s.dest, NULL, &tar, CHUNKS[i], &rc);
    CHECK(extracted_ok(x, rc));
    CHECK_STR(reason_for(x, "../evil"), "'..' in path");
    CHECK_STR(reason_for(x, abs), "absolute path");
    CHECK_STR(reason_for(x, "a/../../evil"), "'..' in path");
    CHECK_STR(reason_for(x, "../evil-dir"), "'..' in path");
    char *ok = slurp(s.dest, "ok.txt", NULL);
    CHECK_STR(ok, "fine");
    CHECK(tar_extract_file_count(x) == 1);
    CHECK_STR(tar_extract_file_path(x, 0), "ok.txt");
    CHECK(sandbox_sealed(&s));
    free(ok);
    tar_extract_free(x);
    buf_free(&tar);
    sandbox_close(&s);
  }
}

static void symlinks_leaving_dest_are_refused(void) {
  for (size_t i = 0; i < NCHUNKS; i++) {
    sandbox s;
    int rc;
    sandbox_open(&s);
    buf tar = BUF_INIT;
    raw_entry(&tar, "passwd", '2', "/etc/passwd", NULL);
    raw_entry(&tar, "up", '2', "..", NULL);
    raw_entry(&tar, "sub/up2", '2', "../..", NULL);
    raw_entry(&tar, "d", '2', s.sibling, NULL);
    raw_entry(&tar, "d/pwned", '0', "", "stays inside");
    raw_entry(&tar, "sub/fine", '2', "../d/pwned", NULL);
    raw_end(&tar);
    tar_extract *x = extract(s.dest, NULL, &tar, CHUNKS[i], &rc);
    CHECK(extracted_ok(x, rc));
    CHECK_STR(reason_for(x, "passwd"), "symlink target leaves the destination");
    CHECK_STR(reason_for(x, "up"), "symlink target leaves the destination");
    CHECK_STR(reason_for(x, "sub/up2"), "symlink target leaves the destination");
    CHECK_STR(reason_for(x, "d"), "symlink target leaves the destination");
    CHECK(!exists(s.dest, "passwd") && !exists(s.dest, "up") && !exists(s.dest, "sub/up2"));
    CHECK(is_type(s.dest, "d", S_IFDIR) && is_type(s.dest, "d/pwned", S_IFREG));
    CHECK(is_type(s.dest, "sub/fine", S_IFLNK));
    CHECK(tar_extract_refused_count(x) == 4);
    CHECK(sandbox_sealed(&s));
    tar_extract_free(x);
    buf_free(&tar);
    sandbox_close(&s);
  }
}

static void paths_through_symlinks_are_refused(void) {
  for (size_t i = 0; i < NCHUNKS; i++) {
    sandbox s;
    int rc;
    sandbox_open(&s);
    buf tar = BUF_INIT;
    raw_entry(&tar, "link", '2', ".", NULL);            /* allowed: points at dest */
    raw_entry(&tar, "link/../x", '0', "", "escape");    /* would be root/x */
    raw_entry(&tar, "link/y", '0', "", "through");      /* never follow a link */
    raw_entry(&tar, "esc", '2', "link/..", NULL);       /* lexically inside, really outside */
    raw_entry(&tar, "sub/", '5', "", NULL);
    raw_entry(&tar, "inner", '2', "sub", NULL);
    raw_entry(&tar, "inner/z", '0', "", "through");
    raw_entry(&tar, "inner", '5', "", NULL);             /* a dir where a symlink is */
    raw_entry(&tar, "sub/ok.txt", '0', "", "fine");
    raw_end(&tar);
    tar_extract *x = extract(s.dest, NULL, &tar, CHUNKS[i], &rc);
    CHECK(extracted_ok(x, rc));
    CHECK_STR(reason_for(x, "link/../x"), "'..' in path");
    CHECK_STR(reason_for(x, "link/y"), "path goes through a symlink");
    CHECK_STR(reason_for(x, "esc"), "symlink target has '..' after a name");
    CHECK_STR(reason_for(x, "inner/z"), "path goes through a symlink");
    CHECK_STR(reason_for(x, "inner"), "path goes through a symlink");
    CHECK(!exists(s.dest, "y") && !exists(s.dest, "sub/z") && !exists(s.dest, "esc"));
    CHECK(is_type(s.dest, "link", S_IFLNK) && is_type(s.dest, "inner", S_IFLNK));
    CHECK(is_type(s.dest, "sub/ok.txt", S_IFREG));
    CHECK(sandbox_sealed(&s));
    tar_extract_free(x);
    buf_free(&tar);
    sandbox_close(&s);
  }
}

static void existing_symlink_is_replaced_not_followed(void) {
  sandbox s;
  char link[PATH_MAX], target[PATH_MAX];
  int rc;
  sandbox_open(&s);
  put_file(s.sibling, "target.txt", "old", 3);
  join(link, sizeof link, s.dest, "prefile");
  join(target, sizeof target, s.sibling, "target.txt");
  CHECK(symlink(target, link) == 0);
  join(link, sizeof link, s.dest, "predir");
  CHECK(symlink(s.sibling, link) == 0);
  buf tar = BUF_INIT;
  raw_entry(&tar, "prefile", '0', "", "new");
  raw_entry(&tar, "predir/x", '0', "", "through");
  raw_end(&tar);
  tar_extract *x = extract(s.dest, NULL, &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  char *old = slurp(s.sibling, "target.txt", NULL), *now = slurp(s.dest, "prefile", NULL);
  CHECK_STR(old, "old");
  CHECK_STR(now, "new");
  CHECK(is_type(s.dest, "prefile", S_IFREG));
  CHECK_STR(reason_for(x, "predir/x"), "path goes through a symlink");
  CHECK(count_names(s.sibling) == 1);
  free(old);
  free(now);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void hard_links_must_target_files_of_this_archive(void) {
  for (size_t i = 0; i < NCHUNKS; i++) {
    sandbox s;
    int rc;
    sandbox_open(&s);
    buf tar = BUF_INIT;
    raw_entry(&tar, "ok.txt", '0', "", "shared");
    raw_entry(&tar, "hl", '1', "../outside", NULL);
    raw_entry(&tar, "hl2", '1', "/etc/passwd", NULL);
    raw_entry(&tar, "hl3", '1', "missing.txt", NULL);
    raw_entry(&tar, "sl", '2', "ok.txt", NULL);
    raw_entry(&tar, "hl4", '1', "sl", NULL);
    raw_entry(&tar, "sub/good", '1', "./ok.txt", NULL);
    raw_end(&tar);
    tar_extract *x = extract(s.dest, NULL, &tar, CHUNKS[i], &rc);
    CHECK(extracted_ok(x, rc));
    CHECK_STR(reason_for(x, "hl"), "hard link target leaves the destination");
    CHECK_STR(reason_for(x, "hl2"), "hard link target leaves the destination");
    CHECK_STR(reason_for(x, "hl3"), "hard link to unknown target");
    CHECK_STR(reason_for(x, "hl4"), "hard link to unknown target");
    CHECK(!exists(s.dest, "hl") && !exists(s.dest, "hl2"));
    CHECK(!exists(s.dest, "hl3") && !exists(s.dest, "hl4"));
    char *good = slurp(s.dest, "sub/good", NULL);
    CHECK_STR(good, "shared");
    CHECK(tar_extract_file_count(x) == 2);
    CHECK_STR(tar_extract_file_path(x, 1), "sub/good");
    CHECK(tar_extract_file_size(x, 1) == 6);
    CHECK(sandbox_sealed(&s));
    free(good);
    tar_extract_free(x);
    buf_free(&tar);
    sandbox_close(&s);
  }
}

static void devices_and_fifos_are_refused(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "fifo", '6', "", NULL);
  raw_entry(&tar, "tty", '3', "", NULL);
  raw_entry(&tar, "disk", '4', "", NULL);
  raw_entry(&tar, "volume", 'V', "", "label data");
  raw_entry(&tar, "after.txt", '0', "", "after");
  raw_end(&tar);
  tar_extract *x = extract(s.dest, NULL, &tar, 1, &rc);
  CHECK(extracted_ok(x, rc));
  CHECK_STR(reason_for(x, "fifo"), "device or fifo");
  CHECK_STR(reason_for(x, "tty"), "device or fifo");
  CHECK_STR(reason_for(x, "disk"), "device or fifo");
  CHECK_STR(reason_for(x, "volume"), "unsupported entry type");
  CHECK(count_names(s.dest) == 1);
  char *after = slurp(s.dest, "after.txt", NULL);
  CHECK_STR(after, "after");
  free(after);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void things_in_the_way_are_refused(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "d/", '5', "", NULL);
  raw_entry(&tar, "d", '0', "", "file over a dir");
  raw_entry(&tar, "f", '0', "", "first");
  raw_entry(&tar, "f/", '5', "", NULL);
  raw_entry(&tar, "f/inside", '0', "", "under a file");
  raw_entry(&tar, "f", '0', "", "second"); /* a file over a file: replaced */
  raw_end(&tar);
  tar_extract *x = extract(s.dest, NULL, &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  CHECK_STR(reason_for(x, "d"), "a directory is in the way");
  CHECK_STR(reason_for(x, "f/"), "a non-directory is in the way");
  CHECK_STR(reason_for(x, "f/inside"), "path goes through a non-directory");
  char *f = slurp(s.dest, "f", NULL);
  CHECK_STR(f, "second");
  CHECK(is_type(s.dest, "d", S_IFDIR));
  free(f);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void rewriting_a_hard_linked_name_leaves_its_twin_alone(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "a", '0', "", "original");
  raw_entry(&tar, "b", '1', "a", NULL);
  raw_entry(&tar, "b", '0', "", "rewritten");
  raw_end(&tar);
  tar_extract *x = extract(s.dest, NULL, &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  char *a = slurp(s.dest, "a", NULL), *b = slurp(s.dest, "b", NULL);
  CHECK_STR(a, "original");
  CHECK_STR(b, "rewritten");
  free(a);
  free(b);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void file_modes_drop_setuid_bits(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "suid", '0', "", "x");
  memcpy(tar.data + 100, "0004755", 7); /* then fix the checksum */
  memset(tar.data + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += (unsigned char)tar.data[i];
  snprintf(tar.data + 148, 8, "%06o", sum);
  raw_end(&tar);
  tar_extract *x = extract(s.dest, NULL, &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  char path[PATH_MAX];
  struct stat st;
  join(path, sizeof path, s.dest, "suid");
  CHECK(stat(path, &st) == 0 && (st.st_mode & 07000) == 0);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void truncated_archive_fails_extraction(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "cut.txt", '0', "", "0123456789");
  tar.len = 512 + 4;
  tar_extract *x = extract(s.dest, NULL, &tar, 100, &rc);
  CHECK(rc == -1);
  CHECK(strstr(tar_extract_error(x), "truncated") != NULL);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

/* ---------- strip ---------- */

static void strip_maps_the_output_dir_to_dest(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "output/", '5', "", NULL);
  raw_entry(&tar, "output/a.csv", '0', "", "a");
  raw_entry(&tar, "output/sub/b.txt", '0', "", "b");
  raw_entry(&tar, "outputx/c.txt", '0', "", "c");
  raw_entry(&tar, "output/link", '1', "output/a.csv", NULL);
  raw_end(&tar);
  tar_extract *x = extract(s.dest, "output", &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  CHECK(tar_extract_file_count(x) == 4);
  CHECK_STR(tar_extract_file_path(x, 0), "a.csv");
  CHECK_STR(tar_extract_file_path(x, 1), "sub/b.txt");
  CHECK_STR(tar_extract_file_path(x, 2), "outputx/c.txt");
  CHECK_STR(tar_extract_file_path(x, 3), "link");
  CHECK(!exists(s.dest, "output"));
  CHECK(tar_extract_bytes(x) == 3);
  char *b = slurp(s.dest, "sub/b.txt", NULL);
  CHECK_STR(b, "b");
  free(b);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

static void strip_keeps_a_file_named_like_the_prefix(void) {
  sandbox s;
  int rc;
  sandbox_open(&s);
  buf tar = BUF_INIT;
  raw_entry(&tar, "report.md", '0', "", "# Report\n");
  raw_end(&tar);
  char dest[PATH_MAX];
  join(dest, sizeof dest, s.dest, "new/deeper"); /* created on demand */
  tar_extract *x = extract(dest, "report.md", &tar, 512, &rc);
  CHECK(extracted_ok(x, rc));
  CHECK(tar_extract_file_count(x) == 1);
  CHECK_STR(tar_extract_file_path(x, 0), "report.md");
  char *text = slurp(dest, "report.md", NULL);
  CHECK_STR(text, "# Report\n");
  free(text);
  tar_extract_free(x);
  buf_free(&tar);
  sandbox_close(&s);
}

/* ---------- tar_check: a stream extracted elsewhere (a fork) ---------- */

/* Checks tar in chunks of 7 bytes under strip "workspace": 0 or -1, and the error. */
static int check_stream(const buf *tar, char *why, size_t whylen) {
  char err[300];
  tar_check *c = tar_check_new("workspace", 0, 0, err, sizeof err);
  CHECK(c != NULL);
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < tar->len; i += 7)
    rc = tar_check_feed(c, tar->data + i, tar->len - i < 7 ? tar->len - i : 7);
  if (rc == 0) rc = tar_check_finish(c);
  snprintf(why, whylen, "%s", tar_check_error(c));
  tar_check_free(c);
  return rc;
}

static void expect_refused(const char *name, char type, const char *link, const char *reason) {
  buf tar = BUF_INIT;
  raw_entry(&tar, "workspace/", '5', "", NULL);
  raw_entry(&tar, "workspace/dir/", '5', "", NULL);
  raw_entry(&tar, "workspace/dir/file", '0', "", "data");
  raw_entry(&tar, "workspace/sym", '2', "dir", NULL);
  raw_entry(&tar, name, type, link, type == '0' ? "x" : NULL);
  raw_end(&tar);
  char why[400];
  CHECK(check_stream(&tar, why, sizeof why) == -1);
  if (!strstr(why, reason) || !strstr(why, name)) fprintf(stderr, "  %s: got '%s'\n", name, why);
  CHECK(strstr(why, reason) != NULL);
  CHECK(strstr(why, name) != NULL);
  buf_free(&tar);
}

static void check_passes_a_workspace_with_links_and_counts_it(void) {
  buf tar = BUF_INIT;
  raw_entry(&tar, "workspace/", '5', "", NULL);
  raw_entry(&tar, "workspace/a/", '5', "", NULL);
  raw_entry(&tar, "workspace/a/f", '0', "", "hello");
  raw_entry(&tar, "workspace/a/hard", '1', "workspace/a/f", NULL);
  raw_entry(&tar, "workspace/py", '2', "/usr/bin/python3", NULL); /* kept: nothing is written through it */
  raw_entry(&tar, "workspace/up", '2', "../a/f", NULL);
  raw_end(&tar);
  char err[300];
  tar_check *c = tar_check_new("workspace", 0, 0, err, sizeof err);
  CHECK(tar_check_feed(c, tar.data, tar.len) == 0);
  CHECK(tar_check_finish(c) == 0);
  CHECK(tar_check_bytes(c) == 5);
  CHECK(tar_check_entries(c) == 5);
  CHECK(!tar_check_refused(c));
  tar_check_free(c);
  buf_free(&tar);
}

static void check_refuses_escapes_and_what_it_cannot_place(void) {
  expect_refused("workspace/../etc/passwd", '0', "", "'..' in path");
  expect_refused("/workspace/x", '0', "", "absolute path");
  expect_refused("other/x", '0', "", "outside the copied folder");
  expect_refused("workspace/sym/evil", '0', "", "path goes through a symlink");
  expect_refused("workspace/dir/file/x", '0', "", "path goes through a symlink or a non-directory");
  expect_refused("workspace/dir/file", '0', "", "comes twice");
  expect_refused("workspace/h", '1', "/etc/shadow", "hard link target leaves");
  expect_refused("workspace/h", '1', "workspace/sym", "hard link to unknown target");
  expect_refused("workspace/dev", '3', "", "device or fifo");
  expect_refused("workspace/s", '2', "", "empty symlink target");
}

static void check_limits_and_truncation(void) {
  buf tar = BUF_INIT;
  raw_entry(&tar, "workspace/a", '0', "", "12345");
  raw_entry(&tar, "workspace/b", '0', "", "12345");
  char err[300];
  tar_check *c = tar_check_new("workspace", 8, 0, err, sizeof err);
  CHECK(tar_check_feed(c, tar.data, tar.len) == -1);
  CHECK(strstr(tar_check_error(c), "workspace/b: larger than") != NULL);
  tar_check_free(c);
  c = tar_check_new("workspace", 0, 1, err, sizeof err);
  CHECK(tar_check_feed(c, tar.data, tar.len) == -1);
  CHECK(strstr(tar_check_error(c), "more entries") != NULL);
  tar_check_free(c);
  c = tar_check_new("workspace", 0, 0, err, sizeof err);
  CHECK(tar_check_feed(c, tar.data, tar.len - 100) == 0);
  CHECK(tar_check_finish(c) == -1);
  CHECK(!tar_check_refused(c));
  tar_check_free(c);
  buf_free(&tar);
}

int main(void) {
  RUN(names_escaping_dest_are_refused);
  RUN(symlinks_leaving_dest_are_refused);
  RUN(paths_through_symlinks_are_refused);
  RUN(existing_symlink_is_replaced_not_followed);
  RUN(hard_links_must_target_files_of_this_archive);
  RUN(devices_and_fifos_are_refused);
  RUN(things_in_the_way_are_refused);
  RUN(rewriting_a_hard_linked_name_leaves_its_twin_alone);
  RUN(file_modes_drop_setuid_bits);
  RUN(truncated_archive_fails_extraction);
  RUN(strip_maps_the_output_dir_to_dest);
  RUN(strip_keeps_a_file_named_like_the_prefix);
  RUN(check_passes_a_workspace_with_links_and_counts_it);
  RUN(check_refuses_escapes_and_what_it_cannot_place);
  RUN(check_limits_and_truncation);
  TEST_EXIT();
}
