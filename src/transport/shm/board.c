#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "transport/shm/board.h"
#include "transport/shm/procmap.h"
#include "transport/transport.h"
#include "util/log.h"
#include "util/sys.h"
#include "util/tsan.h"

#define WORDS (SV_BOARD_SLOTS / 64)

/* Ours: the board, which channel holds each slot, and which are taken. */
static struct {
	pthread_mutex_t lock;        /* slot allocation; the board's creation */
	struct sv_board *b;
	int fd;
	struct sv_conn **owner;      /* by slot; read by pollers without the lock */
	uint64_t used[WORDS];
	uint32_t words;              /* words with a slot ever taken: pollers read so many */
	uint32_t hint;               /* a word that may have a free slot */
} self = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

static void board_create(void)
{
	int fd = memfd_create("softverbs-board", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	struct sv_board *b;

	/* peers write bits, but none may shrink it under our mapping */
	if (fd < 0 || ftruncate(fd, sizeof(*b)) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		if (fd >= 0)
			sv_close(fd);
		return;
	}
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	self.owner = calloc(SV_BOARD_SLOTS, sizeof(*self.owner));
	if (b == MAP_FAILED || !self.owner) {
		if (b != MAP_FAILED)
			munmap(b, sizeof(*b));
		free(self.owner);
		self.owner = NULL;
		sv_close(fd);
		return;
	}
	b->magic = SV_BOARD_MAGIC;
	b->slots = SV_BOARD_SLOTS;
	self.fd = fd;
	__atomic_store_n(&self.b, b, __ATOMIC_RELEASE);
}

int sv_board_fd(void)
{
	if (__atomic_load_n(&self.b, __ATOMIC_ACQUIRE))
		return self.fd;
	pthread_mutex_lock(&self.lock);
	if (!self.b)
		board_create();
	pthread_mutex_unlock(&self.lock);
	return self.fd;
}

void sv_board_forget_after_fork(void)
{
	pthread_mutex_init(&self.lock, NULL);
	if (self.fd >= 0)
		sv_close(self.fd);
	/* the parent's board and table are not the child's: its channels will
	 * be its own, and the parent's it inherited are no longer on a board */
	if (self.b)
		munmap(self.b, sizeof(*self.b));
	free(self.owner);
	self.fd = -1;
	self.b = NULL;
	self.owner = NULL;
	self.words = self.hint = 0;
	for (uint32_t i = 0; i < WORDS; i++)
		self.used[i] = 0;
}

static bool board_valid(const void *base)
{
	const struct sv_board *b = base;

	return b->magic == SV_BOARD_MAGIC && b->slots == SV_BOARD_SLOTS;
}

struct sv_board *sv_board_map(int fd)
{
	return sv_procmap_get(fd, sizeof(struct sv_board), PROT_READ | PROT_WRITE, board_valid);
}

void sv_board_unmap(struct sv_board *b)
{
	sv_procmap_put(b);
}

/* ---- slots ---- */

static uint32_t slot_alloc(struct sv_conn *c)
{
	uint32_t slot = 0;

	pthread_mutex_lock(&self.lock);
	for (uint32_t n = 0; n < WORDS && !slot; n++) {
		uint32_t w = (self.hint + n) % WORDS;
		uint64_t free_bits = ~self.used[w] & (w ? ~0ull : ~1ull);    /* slot 0: none */

		if (!free_bits)
			continue;
		slot = w * 64 + (uint32_t)__builtin_ctzll(free_bits);
		self.used[w] |= 1ull << (slot & 63);
		self.hint = w;
		if (w + 1 > self.words)
			__atomic_store_n(&self.words, w + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&self.owner[slot], c, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&self.lock);
	return slot;
}

static void slot_free(uint32_t slot)
{
	pthread_mutex_lock(&self.lock);
	__atomic_store_n(&self.owner[slot], NULL, __ATOMIC_RELEASE);
	__atomic_and_fetch(&self.b->bits[slot / 64], ~(1ull << (slot & 63)), __ATOMIC_RELAXED);
	self.used[slot / 64] &= ~(1ull << (slot & 63));
	pthread_mutex_unlock(&self.lock);
}

/* A bit set unless it is already: a look is cheaper than a locked write to
 * a line the reader clears.  True if this call set it. */
static bool set_once(uint64_t *w, uint32_t bit)
{
	uint64_t m = 1ull << (bit & 63);

	return !(__atomic_load_n(w, __ATOMIC_RELAXED) & m) &&
	       !(__atomic_fetch_or(w, m, __ATOMIC_SEQ_CST) & m);
}

/* The slot's bit, then its word's summary bit: the reader clears the
 * summary bit before it reads the word, so one of us sees the other.  A
 * bit already set needs no summary: whoever set it saw to that. */
static void bit_set(struct sv_board *b, uint32_t slot)
{
	uint32_t w = slot / 64;

	if (set_once(&b->bits[w], slot))
		set_once(&b->summary[w / 64], w);
}

bool sv_conn_board_join(struct sv_conn *c)
{
	uint32_t slot;

	if (!(c->caps & SV_CAP_MAPPED) || c->shm.slot || sv_board_fd() < 0 ||
	    !(slot = slot_alloc(c)))
		return false;
	__atomic_store_n(&c->shm.slot, slot, __ATOMIC_RELEASE);   /* the progress thread reads it */
	__atomic_store_n(&c->shm.rx->consumer_slot, slot, __ATOMIC_SEQ_CST);
	sv_conn_board_remind(c);         /* what came before the peer saw the slot */
	return true;
}

/* Is the channel's slot on this process's board?  (Not a channel a forked
 * child inherited: its slot was the parent's.) */
static bool slot_ours(const struct sv_conn *c)
{
	return c->shm.slot && self.owner &&
	       __atomic_load_n(&self.owner[c->shm.slot], __ATOMIC_RELAXED) == c;
}

void sv_conn_board_leave(struct sv_conn *c)
{
	if (!c->shm.slot)
		return;
	if (c->shm.rx)
		__atomic_store_n(&c->shm.rx->consumer_slot, 0, __ATOMIC_SEQ_CST);
	if (slot_ours(c))
		slot_free(c->shm.slot);
	__atomic_store_n(&c->shm.slot, 0, __ATOMIC_RELEASE);
}

void sv_conn_board_remind(struct sv_conn *c)
{
	if (slot_ours(c))
		bit_set(self.b, c->shm.slot);
}

void sv_conn_board_post(struct sv_conn *c)
{
	struct sv_board *b = c->peer_board;
	uint32_t slot = b ? __atomic_load_n(&c->shm.tx->consumer_slot, __ATOMIC_RELAXED) : 0;

	if (!slot || slot >= SV_BOARD_SLOTS)   /* the peer's word: checked, never trusted */
		return;
	/* What we wrote before our look at the bit: the reader clears the bit
	 * before it looks at the ring (sv_board_take), so one of us sees the other. */
#ifdef SV_TSAN
	__atomic_fetch_or(&b->bits[slot / 64], 0, __ATOMIC_SEQ_CST);   /* TSan has no fences */
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	bit_set(b, slot);
}

/* The channels of one word's set bits that the caller takes. */
static int take_word(uint32_t w, bool (*mine)(const struct sv_conn *c, const void *arg),
		     const void *arg, struct sv_conn **out, int max)
{
	uint64_t v = __atomic_load_n(&self.b->bits[w], __ATOMIC_RELAXED);
	int k = 0;

	while (v && k < max) {
		uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(v);
		struct sv_conn *c = __atomic_load_n(&self.owner[slot], __ATOMIC_ACQUIRE);

		v &= v - 1;
		if (c && !mine(c, arg))
			continue;        /* another CQ's: its poller's, or the progress thread's */
		__atomic_and_fetch(&self.b->bits[w], ~(1ull << (slot & 63)), __ATOMIC_SEQ_CST);
		if (c)
			out[k++] = c;
	}
	return k;
}

/* One summary word's words.  A word's summary bit is cleared only once
 * the word is empty, then the word is read again: a writer that set a bit
 * meanwhile either sees the summary bit clear (and sets it) or is seen
 * here.  A word that keeps bits (another caller's, or beyond `max`) keeps
 * its summary bit. */
static int take_summary(uint32_t j, uint32_t words, bool (*mine)(const struct sv_conn *c, const void *arg),
			const void *arg, struct sv_conn **out, int max)
{
	uint64_t s = __atomic_load_n(&self.b->summary[j], __ATOMIC_RELAXED);
	int k = 0;

	while (s && k < max) {
		uint32_t w = j * 64 + (uint32_t)__builtin_ctzll(s);
		uint64_t m = 1ull << (w & 63);

		s &= s - 1;
		if (w >= words)
			continue;
		k += take_word(w, mine, arg, out + k, max - k);
		if (__atomic_load_n(&self.b->bits[w], __ATOMIC_RELAXED))
			continue;
		__atomic_and_fetch(&self.b->summary[j], ~m, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&self.b->bits[w], __ATOMIC_SEQ_CST))
			set_once(&self.b->summary[j], w);
	}
	return k;
}

int sv_board_take(bool (*mine)(const struct sv_conn *c, const void *arg), const void *arg,
		  struct sv_conn **out, int max, uint32_t *cursor)
{
	uint32_t words = __atomic_load_n(&self.words, __ATOMIC_ACQUIRE), sums, j;
	int k = 0;

	if (!words || max <= 0)
		return 0;
	sums = (words + 63) / 64;
	j = __atomic_load_n(cursor, __ATOMIC_RELAXED);
	for (uint32_t n = 0; n < sums; n++, j++) {
		if (j >= sums)
			j = 0;
		k += take_summary(j, words, mine, arg, out + k, max - k);
		if (k == max) {
			__atomic_store_n(cursor, j, __ATOMIC_RELAXED);   /* the rest next time */
			break;
		}
	}
	return k;
}
