/*
 * ThreadSanitizer and the engine's DMA.
 *
 * The engine's copies into and out of application buffers stand for a NIC's
 * DMA: what the application does with the buffer meanwhile is its own
 * affair (programs such as ibv_srq_pingpong post every receive and send on
 * one buffer, so two QPs' copies into it race by design, as DMA would).
 * TSan must not look at these copies at all.  A suppression is not enough:
 * TSan symbolizes a report before it can match it, and the first
 * symbolization in a process (libbacktrace reading the DWARF of every
 * library) can outlast a peer's whole ack-timer budget on a loaded machine
 * (docs/measurements.md, 'TSan ignores the engine's DMA copies').  The
 * copying thread holds its QP's lock meanwhile, and the progress thread
 * then waited for that lock and served no QP of the process (it still
 * waits for it to run a timer): peers' ack timers expire and their QPs
 * fail with RETRY_EXC_ERR.
 *
 * sv_dma_begin() / sv_dma_end(): TSan ignores this thread's memory accesses
 * in between.  Without TSan they are nothing.
 */
#ifndef SV_UTIL_TSAN_H
#define SV_UTIL_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define SV_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SV_TSAN 1
#endif
#endif

#ifdef SV_TSAN
/* The TSan runtime's dynamic annotations (tsan_interface_ann.cpp). */
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);

#define sv_dma_begin() do {                                   \
		AnnotateIgnoreReadsBegin(__FILE__, __LINE__);  \
		AnnotateIgnoreWritesBegin(__FILE__, __LINE__); \
	} while (0)
#define sv_dma_end() do {                                     \
		AnnotateIgnoreWritesEnd(__FILE__, __LINE__);   \
		AnnotateIgnoreReadsEnd(__FILE__, __LINE__);    \
	} while (0)
#else
#define sv_dma_begin() do { } while (0)
#define sv_dma_end() do { } while (0)
#endif

#endif
