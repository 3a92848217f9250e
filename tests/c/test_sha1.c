/* sha1: known answers (FIPS 180-4 examples), and lengths around the padding's
 * block boundaries (55, 56, 63, 64, ... bytes; answers from Python's hashlib). */
#include "../../src/core/sha1.h"

#include <stdlib.h>

#include "test.h"

static void hex_of(const void *data, size_t n, char out[41]) {
  unsigned char d[SHA1_DIGEST_LEN];
  sha1(data, n, d);
  for (int i = 0; i < SHA1_DIGEST_LEN; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void known_answers(void) {
  char hex[41];
  hex_of("", 0, hex);
  CHECK_STR(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  hex_of("abc", 3, hex);
  CHECK_STR(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  hex_of(two, strlen(two), hex);
  CHECK_STR(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
  size_t n = 1000000;
  char *a = malloc(n);
  memset(a, 'a', n);
  hex_of(a, n, hex);
  CHECK_STR(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
  free(a);
}

static void lengths_around_the_padding(void) {
  static const struct {
    size_t n;
    const char *hex;
  } cases[] = {{55, "ddf57317ef34bfee3b6df83d359098930eb278bc"}, {56, "a0d492bb0fc889d0eca3bc137066ab6f4f74f369"},
               {63, "c55856749bef509bdfe6bfebfc7bf4e793e82132"}, {64, "bede92be29c3874e1b54ddc77988d606fc857a8e"},
               {65, "b05a80522b053d6dc7e0a517d0e70212c7dad11f"}, {119, "504e27376a6e0f0dba8295b85cb25dc4dfa17d23"},
               {120, "82134b02fb3f702491be9bed581eeab59334acb2"}, {128, "a09133e6730ffe899efb70204cb5646cd5dc24ee"}};
  unsigned char data[128];
  for (int i = 0; i < 128; i++) data[i] = (unsigned char)((i * 7 + 3) & 255);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char hex[41];
    hex_of(data, cases[i].n, hex);
    CHECK_STR(hex, cases[i].hex);
  }
}

int main(void) {
  RUN(known_answers);
  RUN(lengths_around_the_padding);
  TEST_EXIT();
}
