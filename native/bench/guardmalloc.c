// guardmalloc: an LD_PRELOAD allocator that found issue 18's Vulkan fault (a diagnostic, not product
// code; see bench/results/vulkan-fault-issue18.md). Every allocation of at least GM_MIN bytes (default
// 4096) gets its own mmap, placed so that it ends at most 15 bytes (or alignment - 1) before an
// inaccessible guard page; freed blocks stay mapped PROT_NONE (the last GM_QUARANTINE of them, default
// 20,000; older ones are unmapped and their pages may be reused), so that an access after free faults
// too. A SIGSEGV handler prints the fault address and the block it hits (size, live or FREED, the
// allocating return address), then aborts. Small GM_MIN needs a larger vm.max_map_count (two
// mappings per block): with the default 65,530 its own mprotect fails (ENOMEM) and the run breaks.
//   gcc -O1 -g -shared -fPIC native/bench/guardmalloc.c -o guardmalloc.so -ldl -lpthread
//   sysctl -w vm.max_map_count=2000000
//   LD_PRELOAD=$PWD/guardmalloc.so GM_MIN=64 GM_QUARANTINE=1900000 GGML_VK_VISIBLE_DEVICES=0 ./snapkv-repro 512 256 64
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <execinfo.h>

extern void *__libc_malloc(size_t);
extern void  __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define NSLOT (1u << 20)
typedef struct { uintptr_t user; uintptr_t base; size_t len; size_t n; int freed; void *ra[4]; } slot_t;
static slot_t *tab;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t gm_min = 4096;
static int inited;
static const size_t PG = 4096;
static size_t n_live, n_freed, quarantine_max = 20000;

static void segv(int sig, siginfo_t *si, void *uc) {
    (void) uc;
    uintptr_t a = (uintptr_t) si->si_addr;
    char buf[512];
    int k = snprintf(buf, sizeof buf, "\n[guardmalloc] signal %d at address %p\n", sig, si->si_addr);
    write(2, buf, k);
    for (uint32_t i = 0; i < NSLOT; ++i) {
        slot_t *s = &tab[i];
        if (s->user <= 1) continue;
        if (a >= s->base && a < s->base + s->len + PG) {
            k = snprintf(buf, sizeof buf, "[guardmalloc] block user %p n %zu (%s), fault at user+%ld, region [%p, %p) + guard; allocated from %p %p %p %p\n",
                (void *) s->user, s->n, s->freed ? "FREED" : "live", (long) (a - s->user), (void *) s->base, (void *) (s->base + s->len),
                s->ra[0], s->ra[1], s->ra[2], s->ra[3]);
            write(2, buf, k);
        }
    }
    void *bt[64];
    int nb = backtrace(bt, 64);
    backtrace_symbols_fd(bt, nb, 2);
    signal(SIGABRT, SIG_DFL);
    abort();
}

static void init(void) {
    if (inited) return;
    inited = 1;
    const char *e = getenv("GM_MIN");
    if (e) gm_min = strtoull(e, 0, 10);
    e = getenv("GM_QUARANTINE");
    if (e) quarantine_max = strtoull(e, 0, 10);
    tab = mmap(0, sizeof(slot_t) * NSLOT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct sigaction sa; memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = segv; sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
}

static uint32_t h(uintptr_t p) { return (uint32_t) ((p >> 4) * 2654435761u) & (NSLOT - 1); }

static void *gm_alloc(size_t n, size_t align) {
    if (align < 16) align = 16;
    size_t len = (n + align - 1 + PG - 1) / PG * PG;
    if (len == 0) len = PG;
    uint8_t *base = mmap(0, len + PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) return 0;
    mprotect(base + len, PG, PROT_NONE);
    uintptr_t user = ((uintptr_t) base + len - n) & ~(uintptr_t) (align - 1);
    pthread_mutex_lock(&mu);
    uint32_t i = h(user);
    while (tab[i].user > 1 && !(tab[i].freed && tab[i].user == user)) i = (i + 1) & (NSLOT - 1);
    tab[i].user = user; tab[i].base = (uintptr_t) base; tab[i].len = len; tab[i].n = n; tab[i].freed = 0;
    tab[i].ra[0] = __builtin_return_address(0);
    tab[i].ra[1] = 0;
    tab[i].ra[2] = 0; tab[i].ra[3] = 0;
    ++n_live;
    pthread_mutex_unlock(&mu);
    return (void *) user;
}

// returns the slot of a live block of ours, or 0
static slot_t *find(void *p) {
    uintptr_t u = (uintptr_t) p;
    uint32_t i = h(u);
    while (tab[i].user) {
        if (tab[i].user == u && !tab[i].freed) return &tab[i];
        // tombstones (user == 1) keep the probe chain going
        i = (i + 1) & (NSLOT - 1);
    }
    return 0;
}

static size_t (*real_mus)(void *);
static size_t real_usable(void *p) {
    if (!real_mus) real_mus = (size_t (*)(void *)) dlsym(RTLD_NEXT, "malloc_usable_size");
    return real_mus(p);
}
size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    init();
    pthread_mutex_lock(&mu);
    slot_t *s = find(p);
    size_t n = s ? s->n : 0;
    pthread_mutex_unlock(&mu);
    return s ? n : real_usable(p);
}
void *malloc(size_t n) {
    init();
    if (n >= gm_min) return gm_alloc(n, 16);
    return __libc_malloc(n);
}
void free(void *p) {
    if (!p) return;
    init();
    pthread_mutex_lock(&mu);
    slot_t *s = find(p);
    if (s) {
        --n_live;
        if (n_freed < quarantine_max) {
            madvise((void *) s->base, s->len, MADV_DONTNEED);
            mprotect((void *) s->base, s->len, PROT_NONE);
            s->freed = 1; ++n_freed;
        } else {
            munmap((void *) s->base, s->len + PG);
            s->user = 1; s->freed = 1;
        }
        pthread_mutex_unlock(&mu);
        return;
    }
    pthread_mutex_unlock(&mu);
    __libc_free(p);
}
void *calloc(size_t a, size_t b) {
    init();
    size_t n = a * b;
    if (n >= gm_min) return gm_alloc(n, 16); // mmap is zeroed
    return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n) {
    init();
    if (!p) return malloc(n);
    pthread_mutex_lock(&mu);
    slot_t *s = find(p);
    size_t old = s ? s->n : 0;
    pthread_mutex_unlock(&mu);
    if (!s && n < gm_min) return __libc_realloc(p, n);
    if (!s) old = real_usable(p);
    void *q = malloc(n);
    if (!q) return 0;
    memcpy(q, p, old < n ? old : n);
    free(p);
    return q;
}
void *memalign(size_t al, size_t n) {
    init();
    if (n >= gm_min && al <= PG) return gm_alloc(n, al);
    return __libc_memalign(al, n);
}
void *aligned_alloc(size_t al, size_t n) { return memalign(al, n); }
int posix_memalign(void **out, size_t al, size_t n) {
    void *p = memalign(al, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
void *valloc(size_t n) { return memalign(PG, n); }
void *pvalloc(size_t n) { return memalign(PG, (n + PG - 1) / PG * PG); }
