/* sha256: known answers (FIPS 180-4 examples) and chunking independence. */
#include "../../src/core/sha256.h"

#include <stdlib.h>

#include "test.h"

static void hex_of(const char *s, size_t n, size_t step, char out[65]) {
  sha256_ctx c;
  sha256_init(&c);
  for (size_t i = 0; i < n; i += step) sha256_update(&c, s + i, n - i < step ? n - i : step);
  sha256_final_hex(&c, out);
}

static void known_answers(void) {
  char hex[65];
  hex_of("", 0, 1, hex);
  CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  hex_of("abc", 3, 1, hex);
  CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hex_of(two, strlen(two), 64, hex);
  CHECK_STR(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void chunking_does_not_matter(void) {
  size_t n = 1000000;
  char *a = malloc(n);
  memset(a, 'a', n);
  char whole[65], pieces[65];
  hex_of(a, n, n, whole);
  hex_of(a, n, 7, pieces);
  CHECK_STR(whole, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  CHECK_STR(pieces, whole);
  free(a);
}

int main(void) {
  RUN(known_answers);
  RUN(chunking_does_not_matter);
  TEST_EXIT();
}
