/*
 * Start one child program the way a run's workers start: fork, then in the
 * child only async-signal-safe calls before execve (CUDA is not fork-safe):
 * death with the parent (PR_SET_PDEATHSIG(SIGKILL), checked against the
 * race with getppid), signals at their defaults and unblocked, stdin from
 * /dev/null, every descriptor past the standard streams close-on-exec. A
 * program that cannot be executed is reported here, with execve's reason,
 * and its child reaped.
 */
#ifndef PSC_PROC_SPAWN_H
#define PSC_PROC_SPAWN_H

#include <sys/types.h>

#include "proc/message.h"

/* Tests only: nonzero makes children started after it come without a pidfd, as without pidfd_open. */
extern int psc__ipc_no_pidfd;

/* A name and its value: a placeholder in the arguments, or a variable of the environment. */
typedef struct {
    const char *name, *value;
} psc_ipc_kv_t;

/*
 * Start argv[0] (a path; argv NULL-terminated) with each subst[i].name in
 * its arguments replaced by subst[i].value (anywhere in an argument), and the
 * caller's environment with env[i] set as name=value (replacing the caller's
 * of that name). who names the child in errors ("worker 1"). *pid, and
 * *pidfd (pidfd_open's, -1 where the kernel has none) on success.
 */
psc_status_t psc__ipc_spawn(const char *const *argv, const psc_ipc_kv_t *subst, int nsubst, const psc_ipc_kv_t *env,
                            int nenv, const char *who, pid_t *pid, int *pidfd, psc_ipc_err_t *err);

#endif
