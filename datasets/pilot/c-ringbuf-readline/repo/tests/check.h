/* A tiny test harness: CHECK* record failures, RUN runs a test function,
 * check_summary prints "N passed, N failed" and gives the exit status. */
#ifndef CHECK_H
#define CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures_in_test;
static int check_tests_passed;
static int check_tests_failed;

#define CHECK(cond)                                                        \
    do {                                                                   \
        if (!(cond)) {                                                     \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #cond);                                      \
            check_failures_in_test++;                                      \
        }                                                                  \
    } while (0)

#define CHECK_EQ(a, b)                                                     \
    do {                                                                   \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);    \
        if (check_a_ != check_b_) {                                        \
            fprintf(stderr, "%s:%d: %s == %s failed: %lld != %lld\n",      \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);       \
            check_failures_in_test++;                                      \
        }                                                                  \
    } while (0)

#define CHECK_STR(a, b)                                                    \
    do {                                                                   \
        const char *check_a_ = (a), *check_b_ = (b);                       \
        if (strcmp(check_a_, check_b_) != 0) {                             \
            fprintf(stderr, "%s:%d: %s == %s failed: \"%s\" != \"%s\"\n",  \
                    __FILE__, __LINE__, #a, #b, check_a_, check_b_);       \
            check_failures_in_test++;                                      \
        }                                                                  \
    } while (0)

#define RUN(test)                                                          \
    do {                                                                   \
        check_failures_in_test = 0;                                        \
        test();                                                            \
        if (check_failures_in_test) {                                      \
            check_tests_failed++;                                          \
            fprintf(stderr, "FAIL %s\n", #test);                           \
        } else {                                                           \
            check_tests_passed++;                                          \
        }                                                                  \
    } while (0)

static int check_summary(void)
{
    printf("%d passed, %d failed\n", check_tests_passed, check_tests_failed);
    return check_tests_failed ? 1 : 0;
}

#endif
