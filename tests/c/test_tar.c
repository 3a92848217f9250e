/* tar: the writer's stream parses back byte for byte in any chunking and
 * interoperates with the system tar; the reader handles ustar, GNU and PAX.
 * (Extraction: test_tar_extract.c.) */
#include "tar_fixtures.h"

static void writer_output_parses_back_in_any_chunking(void) {
  char dir[PATH_MAX], path[PATH_MAX], data[3000];
  make_temp(dir, sizeof dir);
  binary_pattern(data, sizeof data);
  put_file(dir, "data.bin", data, sizeof data);
  join(path, sizeof path, dir, "data.bin");
  buf expected = BUF_INIT;
  buf_append_str(&expected, "5 input/ 0\n|\n0 input/data.bin 3000\n");
  buf_append(&expected, data, sizeof data);
  buf_append_str(&expected, "|\n0 input/notes.txt 5\nhello|\n5 out/ 0\n|\n2 input/link 0 -> data.bin\n|\n");
  buf small = BUF_INIT, large = BUF_INIT;
  tar_writer *w1 = sample_writer(path), *w2 = sample_writer(path);
  CHECK(stream_all(w1, 1, &small) == 0);
  CHECK(stream_all(w2, 1 << 16, &large) == 0);
  CHECK(small.len == large.len && memcmp(small.data, large.data, small.len) == 0);
  for (size_t i = 0; i < NCHUNKS; i++) {
    collected c = {BUF_INIT, 0};
    CHECK(parse_in_chunks(small.data, small.len, CHUNKS[i], &c, NULL, 0) == 0);
    CHECK(c.text.len == expected.len && memcmp(c.text.data, expected.data, expected.len) == 0);
    buf_free(&c.text);
  }
  tar_writer_free(w1);
  tar_writer_free(w2);
  buf_free(&small);
  buf_free(&large);
  buf_free(&expected);
  fs_remove_tree(dir);
}

static void writer_size_matches_stream_length(void) {
  static const size_t sizes[] = {0, 1, 511, 512, 513, 5000};
  tar_writer *w = tar_writer_new(0, 0);
  char err[256], name[32], data[5000] = {0};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    snprintf(name, sizeof name, "f%zu", sizes[i]);
    CHECK(tar_writer_add_data(w, name, data, sizes[i], 0600, err, sizeof err) == 0);
  }
  long long announced = tar_writer_size(w);
  buf out = BUF_INIT;
  CHECK(stream_all(w, 777, &out) == 0);
  CHECK((long long)out.len == announced);
  CHECK(out.len % 512 == 0);
  CHECK(tar_writer_read(w, data, sizeof data) == 0); /* stays at the end */
  buf_free(&out);
  tar_writer_free(w);
}

static void empty_writer_is_just_the_end_blocks(void) {
  tar_writer *w = tar_writer_new(0, 0);
  buf out = BUF_INIT;
  CHECK(tar_writer_size(w) == 1024);
  CHECK(stream_all(w, 100, &out) == 0);
  CHECK(out.len == 1024);
  buf_free(&out);
  tar_writer_free(w);
}

/* A path of `parts` components of 49 characters, then "leaf". */
static void long_path(buf *out, int parts) {
  for (int i = 0; i < parts; i++)
    buf_printf(out, "%s%d/", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", i);
  buf_append_str(out, "leaf");
}

static void long_names_round_trip(void) {
  buf split = BUF_INIT, pax = BUF_INIT, target = BUF_INIT, expected = BUF_INIT, out = BUF_INIT;
  long_path(&split, 3);            /* ~150 chars: fits the ustar prefix/name split */
  long_path(&pax, 6);              /* ~300 chars: needs a PAX path */
  buf_append_str(&target, "../");  /* a 150-char symlink target: needs a PAX linkpath */
  long_path(&target, 3);
  char one[130];                   /* one 120-char component: no split possible */
  memset(one, 'n', 120);
  one[120] = '\0';
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  CHECK(split.len > 100 && split.len < 255 && pax.len > 255);
  CHECK(tar_writer_add_data(w, split.data, "a", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, pax.data, "b", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, one, "c", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_symlink(w, "s", target.data, err, sizeof err) == 0);
  CHECK(stream_all(w, 1000, &out) == 0);
  collected c = {BUF_INIT, 1};
  CHECK(parse_in_chunks(out.data, out.len, 1, &c, NULL, 0) == 0);
  CHECK(strstr(c.text.data, split.data) != NULL);
  buf_printf(&expected, "0 %s 1\n|\n", pax.data);
  CHECK(strstr(c.text.data, expected.data) != NULL);
  buf_clear(&expected);
  buf_printf(&expected, "0 %s 1\n|\n2 s 0 -> %s\n|\n", one, target.data);
  CHECK(strstr(c.text.data, expected.data) != NULL);
  buf_free(&c.text);
  buf_free(&split);
  buf_free(&pax);
  buf_free(&target);
  buf_free(&expected);
  buf_free(&out);
  tar_writer_free(w);
}

static void unicode_names_round_trip(void) {
  const char *name = "donn\xC3\xA9" "es/caf\xC3\xA9 \xE2\x98\x95.txt";
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  buf out = BUF_INIT;
  CHECK(tar_writer_add_data(w, name, "ok", 2, 0644, err, sizeof err) == 0);
  CHECK(stream_all(w, 512, &out) == 0);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(out.data, out.len, 3, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "5 donn\xC3\xA9" "es/ 0\n|\n"
                         "0 donn\xC3\xA9" "es/caf\xC3\xA9 \xE2\x98\x95.txt 2\nok|\n");
  sandbox s;
  int rc;
  sandbox_open(&s);
  tar_extract *x = extract(s.dest, NULL, &out, 100, &rc);
  CHECK(extracted_ok(x, rc));
  char *got = slurp(s.dest, name, NULL);
  CHECK_STR(got, "ok");
  free(got);
  tar_extract_free(x);
  sandbox_close(&s);
  buf_free(&c.text);
  buf_free(&out);
  tar_writer_free(w);
}

static void parent_dirs_are_added_once(void) {
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  buf out = BUF_INIT;
  CHECK(tar_writer_add_dir(w, "x/", 0700, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "x/y", "", 0, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "a/b/c.txt", "c", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "a/b/d.txt", "d", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "a/e.txt", "e", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_dir(w, "a/f", 0755, err, sizeof err) == 0);
  CHECK(stream_all(w, 4096, &out) == 0);
  collected c = {BUF_INIT, 1};
  CHECK(parse_in_chunks(out.data, out.len, 4096, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "5 x/ 0\n|\n0 x/y 0\n|\n5 a/ 0\n|\n5 a/b/ 0\n|\n0 a/b/c.txt 1\n|\n"
                         "0 a/b/d.txt 1\n|\n0 a/e.txt 1\n|\n5 a/f/ 0\n|\n");
  buf_free(&c.text);
  buf_free(&out);
  tar_writer_free(w);
}

static void writer_rejects_bad_names(void) {
  static const char *bad[] = {"../x", "/x", "a//b", "./a", "a/./b", "", "a/..", "/"};
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = '\0';
    CHECK(tar_writer_add_data(w, bad[i], "x", 1, 0644, err, sizeof err) == -1);
    CHECK(strstr(err, "bad entry name") != NULL);
  }
  CHECK(tar_writer_add_data(w, "f", "x", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, "f/g", "x", 1, 0644, err, sizeof err) == -1);
  CHECK(strstr(err, "'f/g'") != NULL);
  CHECK(tar_writer_add_dir(w, "f", 0755, err, sizeof err) == -1);
  CHECK(tar_writer_size(w) == 512 + 512 + 1024); /* only "f" made it */
  tar_writer_free(w);
}

static void add_file_names_entry_and_host_path_on_error(void) {
  tar_writer *w = tar_writer_new(0, 0);
  char err[512], dir[PATH_MAX], missing[PATH_MAX];
  make_temp(dir, sizeof dir);
  join(missing, sizeof missing, dir, "missing.csv");
  CHECK(tar_writer_add_file(w, "input/m.csv", missing, err, sizeof err) == -1);
  CHECK(strstr(err, "input/m.csv") != NULL && strstr(err, missing) != NULL);
  CHECK(tar_writer_add_file(w, "input/d", dir, err, sizeof err) == -1);
  CHECK(strstr(err, "not a regular file") != NULL);
  tar_writer_free(w);
  fs_remove_tree(dir);
}

static void adding_after_streaming_started_is_refused(void) {
  tar_writer *w = tar_writer_new(0, 0);
  char err[256], tmp[100];
  CHECK(tar_writer_add_data(w, "a", "x", 1, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_read(w, tmp, sizeof tmp) == sizeof tmp);
  CHECK(tar_writer_add_data(w, "b", "x", 1, 0644, err, sizeof err) == -1);
  CHECK(strstr(err, "'b'") != NULL);
  tar_writer_free(w);
}

/* Streams a writer holding `big` (200000 bytes) after cutting the file to 1000
 * bytes once `before` bytes of the stream were read. */
static void stream_with_shrink(size_t before, char *err, size_t errlen) {
  char dir[PATH_MAX], path[PATH_MAX], tmp[4096];
  char *data = calloc(1, 200000);
  make_temp(dir, sizeof dir);
  put_file(dir, "big.bin", data, 200000);
  join(path, sizeof path, dir, "big.bin");
  tar_writer *w = tar_writer_new(0, 0);
  CHECK(tar_writer_add_file(w, "input/big.bin", path, err, errlen) == 0);
  size_t n, total = 0;
  while (total < before && (n = tar_writer_read(w, tmp, 512)) != (size_t)-1) total += n;
  CHECK(truncate(path, 1000) == 0);
  while ((n = tar_writer_read(w, tmp, sizeof tmp)) != 0 && n != (size_t)-1) total += n;
  CHECK(n == (size_t)-1);
  CHECK(tar_writer_read(w, tmp, sizeof tmp) == (size_t)-1); /* stays failed */
  snprintf(err, errlen, "%s", tar_writer_error(w));
  tar_writer_free(w);
  free(data);
  fs_remove_tree(dir);
}

static void file_shrinking_while_streaming_is_an_error_naming_it(void) {
  char err[1024];
  stream_with_shrink(2048, err, sizeof err);
  CHECK(strstr(err, "input/big.bin") != NULL);
  CHECK(strstr(err, "shrank") != NULL);
}

static void file_changed_before_streaming_is_an_error_naming_it(void) {
  char err[1024];
  stream_with_shrink(0, err, sizeof err);
  CHECK(strstr(err, "input/big.bin") != NULL);
  CHECK(strstr(err, "changed size") != NULL);
}

static void empty_directories_round_trip(void) {
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  buf out = BUF_INIT;
  CHECK(tar_writer_add_dir(w, "empty", 0755, err, sizeof err) == 0);
  CHECK(tar_writer_add_dir(w, "a/b/c", 0700, err, sizeof err) == 0);
  CHECK(stream_all(w, 512, &out) == 0);
  sandbox s;
  int rc;
  sandbox_open(&s);
  tar_extract *x = extract(s.dest, NULL, &out, 512, &rc);
  CHECK(extracted_ok(x, rc));
  CHECK(is_type(s.dest, "empty", S_IFDIR) && is_type(s.dest, "a/b/c", S_IFDIR));
  char path[PATH_MAX];
  join(path, sizeof path, s.dest, "empty");
  CHECK(count_names(path) == 0);
  CHECK(tar_extract_file_count(x) == 0 && tar_extract_refused_count(x) == 0);
  tar_extract_free(x);
  sandbox_close(&s);
  buf_free(&out);
  tar_writer_free(w);
}

/* ---------- interoperability with the system tar ---------- */

static void system_tar_lists_and_extracts_writer_output(void) {
  char dir[PATH_MAX], file[PATH_MAX];
  buf out = BUF_INIT, longname = BUF_INIT, expected = BUF_INIT, cmd = BUF_INIT;
  long_path(&longname, 6);
  make_temp(dir, sizeof dir);
  tar_writer *w = tar_writer_new(0, 0);
  char err[256];
  CHECK(tar_writer_add_data(w, "input/data.csv", "a,b\n1,2\n", 8, 0644, err, sizeof err) == 0);
  CHECK(tar_writer_add_data(w, longname.data, "deep", 4, 0600, err, sizeof err) == 0);
  CHECK(tar_writer_add_symlink(w, "input/link", "data.csv", err, sizeof err) == 0);
  CHECK(stream_all(w, 1000, &out) == 0);
  join(file, sizeof file, dir, "out.tar");
  CHECK(fs_write_atomic(file, out.data, out.len, 0644) == 0);
  buf_printf(&cmd, "tar -tf '%s' > '%s/list' 2>&1 && tar -tvf '%s' > /dev/null 2>&1 && "
             "mkdir '%s/x' && tar -xf '%s' -C '%s/x' 2>&1", file, dir, file, dir, file, dir);
  CHECK(system(cmd.data) == 0);
  buf_append_str(&expected, "input/\ninput/data.csv\n");
  for (const char *p = strchr(longname.data, '/'); p; p = strchr(p + 1, '/'))
    buf_printf(&expected, "%.*s/\n", (int)(p - longname.data), longname.data);
  buf_printf(&expected, "%s\ninput/link\n", longname.data);
  char *list = slurp(dir, "list", NULL);
  CHECK_STR(list, expected.data);
  char *csv = slurp(dir, "x/input/data.csv", NULL);
  CHECK_STR(csv, "a,b\n1,2\n");
  free(list);
  free(csv);
  buf_free(&out);
  buf_free(&longname);
  buf_free(&expected);
  buf_free(&cmd);
  tar_writer_free(w);
  fs_remove_tree(dir);
}

/* 99 characters after "dir/sub/": too long for a ustar name alone, fine
 * with its prefix. */
#define LONG_LEAF "dir/sub/" \
  "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn.txt"

/* A tree with a file, a symlink, a hard link, an empty dir and a long name. */
static void make_tree(const char *src) {
  char path[PATH_MAX], other[PATH_MAX];
  join(path, sizeof path, src, "dir/sub");
  fs_mkdir_p(path, 0755);
  join(path, sizeof path, src, "empty");
  fs_mkdir_p(path, 0755);
  put_file(src, "dir/file.txt", "content\n", 8);
  put_file(src, LONG_LEAF, "long", 4);
  join(path, sizeof path, src, "dir/link");
  CHECK(symlink("file.txt", path) == 0);
  join(path, sizeof path, src, "dir/file.txt");
  join(other, sizeof other, src, "dir/hard");
  CHECK(link(path, other) == 0);
}

static void check_tree(const char *dest) {
  char path[PATH_MAX], target[64] = {0};
  struct stat a, b;
  char *text = slurp(dest, "dir/file.txt", NULL);
  CHECK_STR(text, "content\n");
  free(text);
  join(path, sizeof path, dest, "dir/link");
  CHECK(readlink(path, target, sizeof target - 1) == 8);
  CHECK_STR(target, "file.txt");
  join(path, sizeof path, dest, "dir/file.txt");
  CHECK(stat(path, &a) == 0);
  join(path, sizeof path, dest, "dir/hard");
  CHECK(lstat(path, &b) == 0 && a.st_ino == b.st_ino);
  CHECK(is_type(dest, "empty", S_IFDIR));
  text = slurp(dest, LONG_LEAF, NULL);
  CHECK_STR(text, "long");
  free(text);
}

static void system_tar_archives_extract(void) {
  static const char *formats[] = {"gnu", "posix", "ustar"};
  for (size_t i = 0; i < 3; i++) {
    sandbox s;
    char src[PATH_MAX], file[PATH_MAX];
    buf cmd = BUF_INIT;
    sandbox_open(&s);
    join(src, sizeof src, s.sibling, "src");
    make_tree(src);
    join(file, sizeof file, s.sibling, "in.tar");
    buf_printf(&cmd, "tar --format=%s -cf '%s' -C '%s' .", formats[i], file, src);
    CHECK(system(cmd.data) == 0);
    buf_free(&cmd);
    buf tar = BUF_INIT;
    CHECK(fs_read_file(file, &tar, NULL, 0) == 0);
    int rc;
    tar_extract *x = extract(s.dest, NULL, &tar, 1000, &rc);
    CHECK(extracted_ok(x, rc));
    CHECK(tar_extract_refused_count(x) == 0);
    CHECK(tar_extract_file_count(x) == 3);
    CHECK(tar_extract_bytes(x) == 12);
    check_tree(s.dest);
    tar_extract_free(x);
    buf_free(&tar);
    sandbox_close(&s);
  }
}

/* ---------- reader details ---------- */

static void two_file_archive(buf *tar) {
  raw_entry(tar, "one.txt", '0', "", "first");
  raw_entry(tar, "two.txt", '0', "", "second");
  raw_end(tar);
}

static void bad_checksum_is_an_error(void) {
  buf tar = BUF_INIT;
  char err[256];
  two_file_archive(&tar);
  tar.data[1024 + 3] ^= 1; /* a byte of the second header's name */
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 512, &c, err, sizeof err) == -1);
  CHECK_STR(err, "bad header checksum at entry 2");
  buf_free(&c.text);
  buf_free(&tar);
}

static void truncated_stream_fails_at_finish(void) {
  buf tar = BUF_INIT;
  char err[256];
  two_file_archive(&tar);
  static const size_t cuts[] = {1024 + 3, 1024 + 300, 1536 + 2, 1536 + 511};
  for (size_t i = 0; i < 4; i++) {
    collected c = {BUF_INIT, 0};
    CHECK(parse_in_chunks(tar.data, cuts[i], 100, &c, err, sizeof err) == -1);
    CHECK(strstr(err, "truncated") != NULL);
    buf_free(&c.text);
  }
  buf_free(&tar);
}

static void stream_ending_between_entries_is_accepted(void) {
  buf tar = BUF_INIT;
  two_file_archive(&tar);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len - 1024, 7, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "0 one.txt 5\nfirst|\n0 two.txt 6\nsecond|\n");
  buf_free(&c.text);
  buf_free(&tar);
}

static void bytes_after_end_blocks_are_ignored(void) {
  buf tar = BUF_INIT;
  two_file_archive(&tar);
  buf_append_str(&tar, "garbage that is not a header");
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 1, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "0 one.txt 5\nfirst|\n0 two.txt 6\nsecond|\n");
  buf_free(&c.text);
  buf_free(&tar);
}

static void gnu_long_names_are_read(void) {
  buf tar = BUF_INIT, name = BUF_INIT, link = BUF_INIT, expected = BUF_INIT;
  long_path(&name, 4);
  long_path(&link, 3);
  raw_entry(&tar, "././@LongLink", 'L', "", name.data);
  raw_entry(&tar, "././@LongLink", 'K', "", link.data);
  raw_entry(&tar, name.data, '2', link.data, NULL); /* fields hold truncated copies */
  raw_entry(&tar, "old/", '\0', "", NULL);        /* v7: a dir marked by its slash */
  raw_entry(&tar, "contig", '7', "", "c");
  raw_end(&tar);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 1, &c, NULL, 0) == 0);
  buf_printf(&expected, "2 %s 0 -> %s\n|\n5 old/ 0\n|\n0 contig 1\nc|\n", name.data, link.data);
  CHECK_STR(c.text.data, expected.data);
  buf_free(&c.text);
  buf_free(&tar);
  buf_free(&name);
  buf_free(&link);
  buf_free(&expected);
}

static void pax_records_apply_and_globals_are_ignored(void) {
  buf tar = BUF_INIT;
  raw_entry(&tar, "pax_global_header", 'g', "", "20 path=ignored.txt\n");
  raw_entry(&tar, "PaxHeaders/x", 'x', "", "22 path=real name.txt\n22 mtime=1700000000.5\n");
  raw_entry(&tar, "short", '0', "", "data");
  raw_entry(&tar, "PaxHeaders/y", 'x', "", "13 path=next\n");
  raw_entry(&tar, "y", '0', "", "");
  raw_entry(&tar, "PaxHeaders/z", 'x', "", "10 size=3\n");
  raw_header(&tar, "z", '0', "", 0); /* the PAX size wins over the header's */
  buf_append(&tar, "xyz", 3);
  raw_padding(&tar, 3);
  raw_end(&tar);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 5, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "0 real name.txt 4\ndata|\n0 next 0\n|\n0 z 3\nxyz|\n");
  buf_free(&c.text);
  buf_free(&tar);
}

static void bad_pax_record_is_an_error(void) {
  buf tar = BUF_INIT;
  char err[256];
  raw_entry(&tar, "PaxHeaders/x", 'x', "", "99 path=x\n");
  raw_entry(&tar, "x", '0', "", "");
  raw_end(&tar);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 512, &c, err, sizeof err) == -1);
  CHECK_STR(err, "bad PAX record at entry 1");
  buf_free(&c.text);
  buf_free(&tar);
}

/* Rewrites a raw header's size field in base-256 and fixes the checksum. */
static void set_base256_size(char *h, unsigned long long size) {
  memset(h + 124, 0, 12);
  h[124] = (char)0x80;
  for (int i = 11; i >= 1; i--, size >>= 8) h[124 + i] = (char)(size & 0xff);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (int i = 0; i < 512; i++) sum += (unsigned char)h[i];
  snprintf(h + 148, 8, "%06o", sum);
}

static int remember_size(void *ctx, const tar_entry_info *e) {
  *(long long *)ctx = e->size;
  return 1;
}

static void base256_sizes_are_read(void) {
  buf tar = BUF_INIT;
  raw_entry(&tar, "small", '0', "", "12345");
  set_base256_size(tar.data, 5);
  raw_end(&tar);
  collected c = {BUF_INIT, 0};
  CHECK(parse_in_chunks(tar.data, tar.len, 3, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "0 small 5\n12345|\n");
  set_base256_size(tar.data, 8589934593ULL); /* 8 GiB + 1 */
  long long size = 0;
  tar_reader_callbacks cb = {remember_size, collect_data, NULL};
  tar_reader *r = tar_reader_new(&cb, &size);
  CHECK(tar_reader_feed(r, tar.data, 512) == 0);
  CHECK(size == 8589934593LL);
  CHECK(tar_reader_finish(r) == -1); /* the data never came */
  tar_reader_free(r);
  buf_free(&c.text);
  buf_free(&tar);
}

static void huge_file_size_is_written_in_base256(void) {
  char dir[PATH_MAX], path[PATH_MAX], err[256], header[512];
  make_temp(dir, sizeof dir);
  join(path, sizeof path, dir, "sparse");
  put_file(dir, "sparse", "", 0);
  if (truncate(path, 8589934593LL) != 0) { /* no sparse files here: nothing to check */
    fs_remove_tree(dir);
    return;
  }
  tar_writer *w = tar_writer_new(0, 0);
  CHECK(tar_writer_add_file(w, "huge", path, err, sizeof err) == 0);
  CHECK(tar_writer_size(w) == 512 + 8589934593LL + 511 + 1024);
  CHECK(tar_writer_read(w, header, sizeof header) == sizeof header);
  CHECK((unsigned char)header[124] == 0x80);
  long long size = 0;
  tar_reader_callbacks cb = {remember_size, collect_data, NULL};
  tar_reader *r = tar_reader_new(&cb, &size);
  CHECK(tar_reader_feed(r, header, sizeof header) == 0);
  CHECK(size == 8589934593LL);
  tar_reader_free(r);
  tar_writer_free(w);
  fs_remove_tree(dir);
}

static int abort_on_second(void *ctx, const tar_entry_info *e) {
  (void)e;
  return ++*(int *)ctx == 2 ? -1 : 1;
}

static void on_entry_can_skip_and_abort(void) {
  buf tar = BUF_INIT;
  two_file_archive(&tar);
  collected c = {BUF_INIT, 1};
  CHECK(parse_in_chunks(tar.data, tar.len, 10, &c, NULL, 0) == 0);
  CHECK_STR(c.text.data, "0 one.txt 5\n|\n0 two.txt 6\n|\n"); /* skipped: no data */
  int seen = 0;
  tar_reader_callbacks cb = {abort_on_second, collect_data, NULL};
  tar_reader *r = tar_reader_new(&cb, &seen);
  CHECK(tar_reader_feed(r, tar.data, tar.len) == -1);
  CHECK(seen == 2);
  CHECK(strstr(tar_reader_error(r), "stopped") != NULL);
  CHECK(tar_reader_feed(r, tar.data, 1) == -1);
  tar_reader_free(r);
  buf_free(&c.text);
  buf_free(&tar);
}

static int count_bytes(void *ctx, const char *data, size_t n) {
  (void)data;
  *(long long *)ctx += (long long)n;
  return 0;
}

static int deliver(void *ctx, const tar_entry_info *e) {
  (void)ctx;
  (void)e;
  return 0;
}

static long max_rss_kb(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

static void large_file_streams_in_flat_memory(void) {
  const long long size = 256LL << 20;
  char dir[PATH_MAX], path[PATH_MAX], err[256];
  static char chunk[1 << 16];
  make_temp(dir, sizeof dir);
  put_file(dir, "big", "", 0);
  join(path, sizeof path, dir, "big");
  CHECK(truncate(path, size) == 0);
  long before = max_rss_kb();
  tar_writer *w = tar_writer_new(0, 0);
  CHECK(tar_writer_add_file(w, "big", path, err, sizeof err) == 0);
  long long seen = 0, streamed = 0;
  tar_reader_callbacks cb = {deliver, count_bytes, NULL};
  tar_reader *r = tar_reader_new(&cb, &seen);
  size_t n;
  while ((n = tar_writer_read(w, chunk, sizeof chunk)) != 0 && n != (size_t)-1) {
    streamed += (long long)n;
    CHECK(tar_reader_feed(r, chunk, n) == 0);
  }
  CHECK(tar_reader_finish(r) == 0);
  CHECK(seen == size && streamed == tar_writer_size(w));
  CHECK(max_rss_kb() - before < 32 * 1024);
  tar_reader_free(r);
  tar_writer_free(w);
  fs_remove_tree(dir);
}

/* ---------- hostile archives ---------- */

int main(void) {
  RUN(writer_output_parses_back_in_any_chunking);
  RUN(writer_size_matches_stream_length);
  RUN(empty_writer_is_just_the_end_blocks);
  RUN(long_names_round_trip);
  RUN(unicode_names_round_trip);
  RUN(parent_dirs_are_added_once);
  RUN(writer_rejects_bad_names);
  RUN(add_file_names_entry_and_host_path_on_error);
  RUN(adding_after_streaming_started_is_refused);
  RUN(file_shrinking_while_streaming_is_an_error_naming_it);
  RUN(file_changed_before_streaming_is_an_error_naming_it);
  RUN(empty_directories_round_trip);
  RUN(system_tar_lists_and_extracts_writer_output);
  RUN(system_tar_archives_extract);
  RUN(bad_checksum_is_an_error);
  RUN(truncated_stream_fails_at_finish);
  RUN(stream_ending_between_entries_is_accepted);
  RUN(bytes_after_end_blocks_are_ignored);
  RUN(gnu_long_names_are_read);
  RUN(pax_records_apply_and_globals_are_ignored);
  RUN(bad_pax_record_is_an_error);
  RUN(base256_sizes_are_read);
  RUN(huge_file_size_is_written_in_base256);
  RUN(on_entry_can_skip_and_abort);
  RUN(large_file_streams_in_flat_memory);
  TEST_EXIT();
}
