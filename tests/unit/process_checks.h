/*
 * For tests that start processes or threads or pass descriptors (cmocka): how
 * many descriptors and threads this process has, and that no child is left unreaped.
 */
#ifndef PSC_TESTS_PROCESS_CHECKS_H
#define PSC_TESTS_PROCESS_CHECKS_H

#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>
#include <time.h>

/* Entries of a /proc directory, "." and ".." left out. */
static inline int psc_test_proc_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Open descriptors, the directory listing them left out. */
static inline int psc_test_open_fds(void)
{
    return psc_test_proc_entries("/proc/self/fd") - 1;
}

/* Threads of this process. */
static inline int psc_test_threads(void)
{
    return psc_test_proc_entries("/proc/self/task");
}

/*
 * This process's threads, once they are `want` or 2 s have passed: a thread that pthread_join has waited for
 * leaves /proc/self/task a moment later (the kernel wakes the joiner as the thread exits, and releases the task
 * after), so a count taken at once can still hold it. A thread that never ends still fails the caller's check.
 */
static inline int psc_test_threads_settled(int want)
{
    struct timespec pause = {0, 1000000};
    int n = psc_test_threads();

    for (int i = 0; i < 2000 && n != want; i++) {
        nanosleep(&pause, NULL);
        n = psc_test_threads();
    }
    return n;
}

/* Every child ended and reaped. */
static inline void psc_test_assert_no_children(void)
{
    errno = 0;
    assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

#endif
