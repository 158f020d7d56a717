/*
 * names.c - the names of an image's objects and the checks of image and
 * snapshot names.  Every object of an image carries its id (not its name)
 * so that names could change without moving data; doc/images.md lists
 * the layout.
 */
#include "image-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* 1..ATOLL_IMAGE_NAME_MAX printable ASCII bytes without '/', '@', spaces. */
int img_check_name(const char *name)
{
	size_t i, n;

	if (!name)
		return -EINVAL;
	n = strlen(name);
	if (n == 0 || n > ATOLL_IMAGE_NAME_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (ch <= ' ' || ch >= 0x7f || ch == '/' || ch == '@')
			return -EINVAL;
	}
	return 0;
}

void img_oid_id(char *out, const char *name)
{
	snprintf(out, IMG_OID_MAX, "img_id.%s", name);
}

void img_oid_header(char *out, const char *id)
{
	snprintf(out, IMG_OID_MAX, "img_header.%s", id);
}

void img_oid_data(char *out, const char *id, uint64_t objno)
{
	snprintf(out, IMG_OID_MAX, "img_data.%s.%016" PRIx64, id, objno);
}

void img_oid_snap(char *out, const char *id, uint64_t snap, uint64_t objno)
{
	snprintf(out, IMG_OID_MAX, "img_snap.%s.%016" PRIx64 ".%016" PRIx64, id, snap, objno);
}

uint64_t img_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
