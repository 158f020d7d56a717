/*
 * workload.h - the crash tests' deterministic transactions and the
 * in-memory model of what the store must hold after them.
 *
 * Transaction n is a pure function of (seed, n, profile): the child builds
 * it to queue it, the parent builds it again to apply it to the model.  No
 * transaction can fail on any state (an op that needs its object first
 * touches it; an attribute is removed only after being set in the same
 * transaction), so "which transactions are applied" is always a prefix
 * 0..m, and every transaction ends by writing m+1 into the ledger object's
 * first 8 bytes of its one 4 KiB block (a logged overwrite in the store).
 */
#ifndef ATOLL_CRASH_WORKLOAD_H
#define ATOLL_CRASH_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define WL_COLL		1ull	/* plain collection */
#define WL_CCOLL	2ull	/* created with STORE_COLL_COMPRESS */
#define WL_NOBJ		7	/* objects the workload touches, ledger included */
#define WL_LEDGER	6	/* index of the ledger object */
#define WL_MAXOPS	16
#define WL_LEDGER_KEY	"applied"
#define WL_LEDGER_SIZE	4096	/* the ledger: first 8 bytes of this block */

/* profile: what mix of ops */
enum wl_profile {
	WL_PROFILE_MIXED = 0,	/* everything, and runs of large aligned writes
				 * only; the kill and power-cut tests */
	WL_PROFILE_DATA = 1,	/* mostly large writes of fresh data (unsafe-flush test) */
};

enum wl_op_type {
	WL_TOUCH, WL_CREATE, WL_WRITE, WL_ZERO, WL_TRUNCATE, WL_REMOVE,
	WL_SETATTR, WL_RMATTR, WL_OMAP_SET, WL_OMAP_RM, WL_OMAP_CLEAR,
};

struct wl_op {
	enum wl_op_type type;
	int obj;			/* index into wl_objects */
	uint64_t off, len;		/* write, zero; len = size for truncate */
	uint32_t flags;			/* write flags */
	unsigned char key[256];		/* attr name (NUL-terminated) or omap key */
	size_t klen;
	unsigned char *data;		/* write data, attr or omap value (malloc'd) */
	size_t dlen;
};

struct wl_txn {
	uint64_t n;
	size_t nops;
	struct wl_op ops[WL_MAXOPS];
};

struct wl_object {
	uint64_t coll;
	const char *name;
};
extern const struct wl_object wl_objects[WL_NOBJ];

/* Builds transaction n; release it with wl_txn_release(). */
void wl_gen(uint64_t seed, uint64_t n, enum wl_profile prof, struct wl_txn *t);
void wl_txn_release(struct wl_txn *t);
/* Adds t's ops to a store transaction: 0 or the builder's negative errno. */
int wl_to_store(const struct wl_txn *t, struct store_txn *st);
/* Human-readable one-line description of t into buf (for failure reports). */
void wl_describe(const struct wl_txn *t, char *buf, size_t len);

/* ---- the model ---- */

struct wl_kv {
	unsigned char *k, *v;
	size_t klen, vlen;
};

struct wl_mobj {
	bool exists;
	unsigned char *data;
	uint64_t size, cap;
	struct wl_kv *attrs, *omap;	/* sorted by key (memcmp, shorter first) */
	size_t nattrs, nomap, capattrs, capomap;
};

struct wl_model {
	uint64_t applied;		/* transactions 0..applied-1 are in */
	struct wl_mobj obj[WL_NOBJ];
};

/* The state right after wl_setup_store(): both collections, the ledger
 * (a 4 KiB block of zeros: "applied" = 0), nothing else. */
void wl_model_init(struct wl_model *m);
void wl_model_free(struct wl_model *m);
void wl_model_apply(struct wl_model *m, const struct wl_txn *t);
/* Applies transactions m->applied .. upto-1. */
void wl_model_advance(struct wl_model *m, uint64_t seed, enum wl_profile prof, uint64_t upto);

/* Creates the collections and the ledger in a fresh store. */
int wl_setup_store(struct store *st);
/* Reads the ledger: the number of applied transactions, or a negative errno. */
int64_t wl_read_ledger(struct store *st);

/* Compares the whole store with the model: collections, object names,
 * sizes, data, attributes, omaps.  report(arg, sentence) once per
 * difference (at most a few per object); returns the number found. */
typedef void (*wl_report_fn)(void *arg, const char *msg);
int wl_verify(struct store *st, const struct wl_model *m, wl_report_fn report, void *arg);

#endif
