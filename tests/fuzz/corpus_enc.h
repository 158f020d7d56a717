/*
 * corpus_enc.h - one seed file from a writer, for the corpus generators
 * of encoded messages (gen_{mds,osd,proto,scrub}_corpus.c): the selector
 * byte that picks the target's decoder, then what the writer holds.  The
 * writer is emptied for the next message.  Apart from corpus_file.h,
 * which the generators of other formats (nbd) use without lib/.
 */
#ifndef ATOLL_FUZZ_CORPUS_ENC_H
#define ATOLL_FUZZ_CORPUS_ENC_H

#include <stdint.h>
#include <stdio.h>

#include "corpus_file.h"
#include "encode.h"

/* Writes DIR/NAME as sel then e's bytes and empties e: 0, or -1 after
 * saying on stderr what failed (an encoding that failed is not written). */
static inline int corpus_put_enc(const char *dir, const char *name, uint8_t sel, struct enc *e)
{
	int r = -1;

	if (e->err)
		fprintf(stderr, "cannot encode '%s': error %d\n", name, e->err);
	else
		r = corpus_write(dir, name, &sel, 1, e->buf, e->len);
	enc_reset(e);
	return r;
}

#endif
