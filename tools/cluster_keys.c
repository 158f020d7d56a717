/*
 * cluster_keys.c - the keys of a local cluster (doc/security.md): `up`
 * writes D/keyring (mode 0600) with a fresh key for mon., client.admin
 * and client.bootstrap-osd, and each new OSD or MDS gets its own entry
 * as it is made.  The monitors read the same file (they hold every key
 * until keys move into their replicated state) and read it again when
 * an entity they do not know authenticates, so an OSD added later needs
 * no restart of anything.  atoll.conf names the file (`keyring`) and
 * turns authentication on (`auth = ticket`); `--set auth=none` turns it
 * off.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"
#include "cluster.h"

/* Adds name with a fresh key unless D/keyring holds it already. */
int cl_keyring_add(const struct cl_state *st, const char *name, const char *caps_mon,
		   const char *caps_osd, const char *caps_mds)
{
	char path[PATH_MAX + 16], err[512];
	uint8_t key[AUTH_KEY_LEN];
	struct keyring kr;
	int ret;

	cl_path(path, sizeof(path), st, "%s", CL_KEYRING_FILE);
	if (access(path, F_OK) == 0) {
		ret = keyring_load(path, &kr, err, sizeof(err));
		if (ret < 0) {
			cl_err("%s", err);
			keyring_free(&kr);
			return ret;
		}
	} else {
		memset(&kr, 0, sizeof(kr));
	}
	if (keyring_find(&kr, name)) {
		keyring_free(&kr);
		return 0;
	}
	ret = auth_random(key, sizeof(key));
	if (!ret)
		ret = keyring_set(&kr, name, key);
	auth_wipe(key, sizeof(key));
	if (!ret && caps_mon)
		ret = keyring_set_caps(&kr, name, "mon", caps_mon);
	if (!ret && caps_osd)
		ret = keyring_set_caps(&kr, name, "osd", caps_osd);
	if (!ret && caps_mds)
		ret = keyring_set_caps(&kr, name, "mds", caps_mds);
	if (!ret)
		ret = keyring_save(path, &kr);
	if (ret < 0)
		cl_err("cannot add '%s' to '%s': %s", name, path, strerror(-ret));
	keyring_free(&kr);
	return ret;
}

int cl_keyring_create(const struct cl_state *st)
{
	int ret = cl_keyring_add(st, "mon.", "allow *", NULL, NULL);

	if (!ret)
		ret = cl_keyring_add(st, "client.admin", "allow *", "allow *", "allow *");
	if (!ret)
		ret = cl_keyring_add(st, "client.bootstrap-osd", "profile bootstrap-osd", NULL,
				     NULL);
	return ret;
}
