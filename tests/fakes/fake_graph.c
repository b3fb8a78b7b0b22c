/*
 * The fake driver's CUDA graphs (FAKE_CUDA_GRAPHS=1 when a capture begins;
 * unset, a capture's begin answers CUDA_ERROR_NOT_SUPPORTED, as a driver
 * that cannot capture). Enough for the order of the calls
 * that capture, not for the work: what is issued to a capturing stream runs
 * at once, as when issued eagerly, and a replay runs nothing (so a check
 * after replays sees the captured calls' results). The driver's rules that a
 * caller can break are kept: a stream captures once at a time, an end needs a
 * begin, and instantiating a graph while this thread has a capture open is
 * refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) and invalidates that
 * capture, whose end then answers CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, as
 * does a synchronisation from a thread with a capture open; a launch into a
 * capturing stream is counted as the graph's node (fake_cuda_graph_nodes:
 * the nodes of every graph ended well), so a launch that escapes the
 * capture shows. Copies (cuMemcpyAsync) into a capturing stream are kept
 * in the graph too; with fake_cuda_graph_replay_copies(1) a replay runs them
 * again, in order (kernels are never replayed), so a test can change a
 * source between replays and see the captured copy move it. A call the
 * driver refuses in a capture (cuMemcpyPeerAsync) invalidates it.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void fake_cuda_capture_set(void *stream, unsigned long long id);

#define FAKE_GRAPH_OPEN_MAX 64
#define FAKE_GRAPH_COPIES_MAX 32
/* A graph (and its instance): the copies captured, in order. */
typedef struct {
    int n;
    struct { CUdeviceptr d, s; size_t len; } c[FAKE_GRAPH_COPIES_MAX];
} fake_graph_t;
static __thread struct { CUstream s; int invalid, nodes; unsigned long long id; fake_graph_t *g; } fake_open[FAKE_GRAPH_OPEN_MAX]; /* this thread's */
static int fake_replay_copies;
void fake_cuda_graph_replay_copies(int on) { fake_replay_copies = on; }
static __thread int fake_nopen;
static unsigned long long fake_next_id = 1000;
static int fake_graphs_made, fake_graphs_live, fake_replays, fake_nodes;

int fake_cuda_graph_replays(void) { return fake_replays; }
int fake_cuda_graph_nodes(void) { return fake_nodes; }
int fake_cuda_graphs_live(void) { return fake_graphs_live; }
int fake_cuda_graphs_made(void) { return fake_graphs_made; }

static int fake_find(CUstream s)
{
    for (int i = 0; i < fake_nopen; i++)
        if (fake_open[i].s == s)
            return i;
    return -1;
}

static CUresult fake_begin(CUstream s, CUstreamCaptureMode mode)
{
    const char *on = getenv("FAKE_CUDA_GRAPHS");

    (void)mode;
    if (!on || strcmp(on, "1") != 0)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!s || fake_find(s) >= 0 || fake_nopen == FAKE_GRAPH_OPEN_MAX)
        return CUDA_ERROR_ILLEGAL_STATE;
    if (!(fake_open[fake_nopen].g = calloc(1, sizeof(fake_graph_t))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    fake_open[fake_nopen].s = s;
    fake_open[fake_nopen].nodes = 0;
    fake_open[fake_nopen].id = fake_next_id;
    fake_open[fake_nopen++].invalid = 0;
    fake_cuda_capture_set(s, fake_next_id++);
    return CUDA_SUCCESS;
}

static CUresult fake_end(CUstream s, CUgraph *g)
{
    int i = fake_find(s), invalid, nodes;
    fake_graph_t *fg;

    if (i < 0)
        return CUDA_ERROR_ILLEGAL_STATE;
    invalid = fake_open[i].invalid;
    nodes = fake_open[i].nodes;
    fg = fake_open[i].g;
    fake_open[i] = fake_open[--fake_nopen];
    fake_cuda_capture_set(s, 0);
    *g = NULL;
    if (invalid) {
        free(fg);
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *g = (CUgraph)fg;
    fake_graphs_live++;
    fake_nodes += nodes;
    return CUDA_SUCCESS;
}

/* fake_libcuda.c's launches and synchronisations tell the captures of this thread. */
void fake_graph_note_launch(CUstream s)
{
    int i = fake_find(s);

    if (i >= 0)
        fake_open[i].nodes++;
}

/* A copy queued into a stream of capture `id`: kept in that capture's graph (this thread's captures only). */
void fake_graph_note_copy(unsigned long long id, CUdeviceptr d, CUdeviceptr s, size_t len)
{
    for (int i = 0; id && i < fake_nopen; i++)
        if (fake_open[i].id == id && fake_open[i].g->n < FAKE_GRAPH_COPIES_MAX) {
            fake_graph_t *g = fake_open[i].g;

            g->c[g->n].d = d;
            g->c[g->n].s = s;
            g->c[g->n++].len = len;
        }
}

/* A call the driver refuses in capture `id`: that capture is invalidated (its end answers so). */
void fake_graph_invalidate(unsigned long long id)
{
    for (int i = 0; id && i < fake_nopen; i++)
        if (fake_open[i].id == id)
            fake_open[i].invalid = 1;
}

/* 1 when this thread has a capture open (a synchronisation then invalidates every one of them). */
int fake_graph_refuse_sync(void)
{
    for (int i = 0; i < fake_nopen; i++)
        fake_open[i].invalid = 1;
    return fake_nopen > 0;
}

static CUresult fake_instantiate(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    (void)flags;
    if (fake_nopen > 0) {
        for (int i = 0; i < fake_nopen; i++)
            fake_open[i].invalid = 1;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    if (!(*e = malloc(sizeof(fake_graph_t))))
        return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(*e, g, sizeof(fake_graph_t));
    fake_graphs_made++;
    fake_graphs_live++;
    return CUDA_SUCCESS;
}

static CUresult fake_launch_graph(CUgraphExec e, CUstream s)
{
    const fake_graph_t *g = (const fake_graph_t *)e;

    (void)s;
    if (!e)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; fake_replay_copies && i < g->n; i++)
        memmove((void *)(uintptr_t)g->c[i].d, (const void *)(uintptr_t)g->c[i].s, g->c[i].len);
    fake_replays++;
    return CUDA_SUCCESS;
}

static CUresult fake_destroy(void *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    free(p);
    fake_graphs_live--;
    return CUDA_SUCCESS;
}

void *fake_graph_lookup(const char *symbol)
{
    static const struct { const char *name; void *fn; } t[] = {
        {"cuStreamBeginCapture", (void *)fake_begin},
        {"cuStreamEndCapture", (void *)fake_end},
        {"cuGraphInstantiateWithFlags", (void *)fake_instantiate},
        {"cuGraphLaunch", (void *)fake_launch_graph},
        {"cuGraphExecDestroy", (void *)fake_destroy},
        {"cuGraphDestroy", (void *)fake_destroy},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
        if (strcmp(symbol, t[i].name) == 0)
            return t[i].fn;
    return NULL;
}
