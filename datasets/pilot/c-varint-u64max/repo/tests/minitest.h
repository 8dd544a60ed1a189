/* minitest: just enough of a unit test harness.
 *
 *   static void test_foo(void) { EXPECT(1 + 1 == 2); EXPECT_U64(x, 42); }
 *   static const struct mt_case cases[] = { MT_CASE(test_foo), ... };
 *   int main(void) { return mt_run(cases, sizeof cases / sizeof cases[0]); }
 */
#ifndef MINITEST_H
#define MINITEST_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct mt_case {
    const char *name;
    void (*fn)(void);
};

#define MT_CASE(fn) { #fn, fn }

static int mt_failed_checks;

#define EXPECT(cond)                                                       \
    do {                                                                   \
        if (!(cond)) {                                                     \
            printf("  %s:%d: expected %s\n", __FILE__, __LINE__, #cond);   \
            mt_failed_checks++;                                            \
        }                                                                  \
    } while (0)

#define EXPECT_U64(actual, expected)                                       \
    do {                                                                   \
        uint64_t mt_a_ = (uint64_t)(actual), mt_e_ = (uint64_t)(expected); \
        if (mt_a_ != mt_e_) {                                              \
            printf("  %s:%d: %s is %" PRIu64 ", expected %" PRIu64 "\n",   \
                   __FILE__, __LINE__, #actual, mt_a_, mt_e_);             \
            mt_failed_checks++;                                            \
        }                                                                  \
    } while (0)

#define EXPECT_I64(actual, expected)                                       \
    do {                                                                   \
        int64_t mt_a_ = (int64_t)(actual), mt_e_ = (int64_t)(expected);    \
        if (mt_a_ != mt_e_) {                                              \
            printf("  %s:%d: %s is %" PRId64 ", expected %" PRId64 "\n",   \
                   __FILE__, __LINE__, #actual, mt_a_, mt_e_);             \
            mt_failed_checks++;                                            \
        }                                                                  \
    } while (0)

#define EXPECT_BYTES(actual, expected, n)                                  \
    EXPECT(memcmp((actual), (expected), (n)) == 0)

static int mt_run(const struct mt_case *cases, size_t count)
{
    size_t i;
    int passed = 0, failed = 0;

    for (i = 0; i < count; i++) {
        int before = mt_failed_checks;
        cases[i].fn();
        if (mt_failed_checks == before) {
            passed++;
        } else {
            failed++;
            printf("FAIL: %s\n", cases[i].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

#endif
