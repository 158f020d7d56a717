/*
 * fuzz_nbd_acl.c - libFuzzer target for atoll-nbd's export rules
 * (--tls-exports, blockdev/nbd/nbd_acl.c): the file's text is parsed; an
 * accepted file is then asked about a few identities and export names,
 * which must give the same answer twice and never fault.  Checks what
 * can be checked without a second parser: a rule count within the bound,
 * and "*" rules that allow a name for everyone (an identity, or none).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nbd_acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
	if (!ok)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const ids[] = { "", "alice", "bob", "*", "a b" };
	static const char *const names[] = { "disk1", "disk1@snap", "vm-7", "", "@", "x@y@z" };
	struct nbd_acl *acl;
	char err[256];

	if (nbd_acl_parse((const char *)data, size, &acl, err, sizeof(err)) != 0) {
		check(err[0] != 0);
		return 0;
	}
	check(nbd_acl_count(acl) <= NBD_ACL_RULES_MAX);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
			bool a = nbd_acl_allows(acl, ids[i], names[j]);

			check(a == nbd_acl_allows(acl, ids[i], names[j]));
			/* what "no identity" may use, any identity may use */
			if (nbd_acl_allows(acl, "", names[j]))
				check(a);
		}
	}
	nbd_acl_free(acl);
	return 0;
}
