/*
 * forge_reqid.c - an authenticated client whose request ids name another
 * client: the OSD refuses its ops (-EPERM), and the same client with its
 * own id is served (doc/security.md, "Client ids").
 *
 *   auth-forge-reqid ATOLL_CONF
 *
 * Reaches into the client library (lib/client/client.h) to change the id
 * its objecter writes into request ids, which no program using the public
 * API can do.  Exit 0 when the OSD behaved, 1 otherwise, 77 when the
 * cluster does not run with authentication.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <atoll/atoll.h>

#include "client.h"
#include "msg_auth.h"

int main(int argc, char **argv)
{
	struct atoll_cluster *c = NULL;
	struct atoll_ioctx *io = NULL;
	uint64_t own;
	int r, rc = 1;

	if (argc != 2) {
		fprintf(stderr, "usage: auth-forge-reqid ATOLL_CONF\n");
		return 2;
	}
	if ((r = atoll_cluster_create(&c, argv[1], 0)) || (r = atoll_cluster_connect(c)) ||
	    (r = atoll_ioctx_create(c, "default", &io, 0))) {
		fprintf(stderr, "cannot connect: %s\n", atoll_strerror(r));
		goto out;
	}
	if (!c->auth) {
		fprintf(stderr, "the cluster runs without authentication\n");
		rc = 77;
		goto out;
	}
	own = c->id;
	if (own != msg_auth_client_id(c->auth)) {
		fprintf(stderr, "the client's id %llu is not its ticket's %llu\n",
			(unsigned long long)own, (unsigned long long)msg_auth_client_id(c->auth));
		goto out;
	}
	c->id = own ^ 0x5a5a;	/* another client's */
	r = atoll_write_full(io, "forged", "x", 1, 0);
	if (r != -EPERM) {
		fprintf(stderr, "a write with another client's request id: %d (%s), not -EPERM\n",
			r, atoll_strerror(r));
		goto out;
	}
	c->id = own;
	r = atoll_write_full(io, "forged", "x", 1, 0);
	if (r) {
		fprintf(stderr, "a write with its own id: %s\n", atoll_strerror(r));
		goto out;
	}
	printf("ok: another client's request id refused, its own served\n");
	rc = 0;
out:
	atoll_ioctx_destroy(io);
	atoll_cluster_shutdown(c);
	return rc;
}
