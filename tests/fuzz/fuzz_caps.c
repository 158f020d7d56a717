/*
 * fuzz_caps.c - libFuzzer target for the caps parsers (lib/caps.c): a
 * caps string arrives inside a ticket or an `auth add` argument.  The
 * first byte picks the parser (OSD or monitor), the rest is the string
 * (cut at its first NUL).  A parser must succeed or fail with an error
 * sentence; what an OSD parse accepts is then checked against a few
 * objects, which must not read past any bound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, err[256];

	if (size < 1)
		return 0;
	s = malloc(size);
	if (!s)
		return 0;
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	err[0] = '\0';
	if (data[0] & 1) {
		struct mon_caps m;

		if (caps_parse_mon(s, &m, err, sizeof(err)) < 0) {
			if (!err[0] || m.grants)
				abort();
		} else {
			for (int n = MON_NEED_R; n <= MON_NEED_BLOCKLIST; n++)
				(void)caps_mon_allows(&m, (enum mon_need)n);
		}
	} else {
		struct osd_caps *o = malloc(sizeof(*o));

		if (o && caps_parse_osd(s, o, err, sizeof(err)) < 0) {
			if (!err[0] || o->n)
				abort();
		} else if (o) {
			if (o->n > CAPS_CLAUSES_MAX)
				abort();
			(void)caps_osd_allows(o, "rbd", "rbd_data.1", 10, CAPS_R);
			(void)caps_osd_allows(o, NULL, NULL, 0, CAPS_R | CAPS_W | CAPS_X);
			(void)caps_osd_allows(o, s, s, strlen(s), CAPS_W);
		}
		free(o);
	}
	free(s);
	return 0;
}
