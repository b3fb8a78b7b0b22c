/*
 * A rank of check --fleet's test job whose process dies: it joins the job, says hello to rank 0 as a rank of the
 * fleet does (its host name, "rank-that-dies", under check --fleet's tag, cmd_check_fleet.c's PSC__TAG_HELLO) by a
 * synchronous send, which returns once rank 0 took it (so rank 0 is gathering), then is killed by SIGKILL, as a
 * node that goes down. Open MPI then ends the job, and rank 0 must still write the fleet's JSON naming this rank.
 */
#include <mpi.h>
#include <signal.h>

int main(int argc, char **argv)
{
    static char host[] = "rank-that-dies";

    MPI_Init(&argc, &argv);
    MPI_Ssend(host, (int)sizeof(host), MPI_BYTE, 0, 0x5c1, MPI_COMM_WORLD);
    raise(SIGKILL);
    return 0;
}
