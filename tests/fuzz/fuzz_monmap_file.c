/*
 * fuzz_monmap_file.c - libFuzzer target for an OSD's saved monitor map
 * (osd/monmap_file.c, DIR/monmap): a damaged or hostile file must fail
 * cleanly; what decodes re-encodes to a monmap that decodes the same.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "osd.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct monmap_msg mm, again;
	struct enc e;
	struct dec d;

	if (osd_monmap_file_decode(data, size, &mm) != 0)
		return 0;
	enc_init(&e);
	monmap_msg_encode(&mm, &e);
	dec_init(&d, e.buf, e.len);
	if (monmap_msg_decode(&d, &again) != 0 || memcmp(&mm, &again, sizeof(mm)) != 0)
		abort();
	enc_free(&e);
	return 0;
}
