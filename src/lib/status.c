/* The text of each status code and each result status: the words every message and report uses. */
#include "p2pscope/bench.h"

const char *psc_status_string(psc_status_t status)
{
    switch (status) {
    case PSC_OK: return "ok";
    case PSC_ERR_INVALID: return "invalid argument";
    case PSC_ERR_NO_DRIVER: return "no usable NVIDIA driver";
    case PSC_ERR_NO_DEVICE: return "no GPU";
    case PSC_ERR_DRIVER: return "CUDA driver call failed";
    case PSC_ERR_NO_MEMORY: return "out of memory";
    case PSC_ERR_UNSUPPORTED: return "not supported here";
    case PSC_ERR_TIMEOUT: return "timed out";
    case PSC_ERR_IO: return "input/output error";
    }
    return "unknown status";
}

const char *psc_result_status_string(psc_result_status_t s)
{
    switch (s) {
    case PSC_RESULT_PASSED: return "passed";
    case PSC_RESULT_FAILED: return "failed";
    case PSC_RESULT_WAIVED: return "waived";
    }
    return "unknown";
}
