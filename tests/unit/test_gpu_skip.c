/*
 * A GPU test binary skips (exit 77) only where there is nothing to measure:
 * no driver, or a driver that sees no GPU. A driver that fails otherwise, or
 * a test that fails on a context it did open, is a failure (exit 1), never a
 * skip. Run on a real GPU test binary through the fake driver.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

/* The exit status of GPU_TEST run with these variables ("NAME=value", NULL-terminated) added. */
static int exit_status(const char *const *env)
{
    int status = 0;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);

        for (int i = 0; env[i]; i++)
            putenv((char *)env[i]);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        execl(GPU_TEST, GPU_TEST, (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status)); /* never a crash */
    return WEXITSTATUS(status);
}

static void test_no_driver_skips(void **state)
{
    const char *const env[] = {"P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1", NULL};

    (void)state;
    assert_int_equal(exit_status(env), 77);
}

static void test_no_gpu_skips(void **state)
{
    const char *const nodevice[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=nodevice", NULL};
    const char *const zero[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus", "FAKE_CUDA_COUNT=0", NULL};

    (void)state;
    assert_int_equal(exit_status(nodevice), 77);
    assert_int_equal(exit_status(zero), 77);
}

/* The fake's GPUs enumerate but make no context: the test runs and fails. */
static void test_failing_gpu_fails(void **state)
{
    const char *const env[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=gpus", NULL};

    (void)state;
    assert_int_equal(exit_status(env), 1);
}

/* cuInit fails for another reason than "no device": the driver is broken, which is not a skip. */
static void test_broken_driver_fails(void **state)
{
    const char *const env[] = {"P2PSCOPE_LIBCUDA=" FAKE_LIBCUDA, "FAKE_CUDA_MODE=initfail", NULL};

    (void)state;
    assert_int_equal(exit_status(env), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_driver_skips),
        cmocka_unit_test(test_no_gpu_skips),
        cmocka_unit_test(test_failing_gpu_fails),
        cmocka_unit_test(test_broken_driver_fails),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
