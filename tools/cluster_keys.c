/*
 * cluster_keys.c - the keys of a local cluster (doc/security.md): `up`
 * writes D/keyring (mode 0600) with a fresh key for mon., client.admin,
 * client.bootstrap-osd and client.dashboard (read only: the monitors'
 * dashboard) before the monitors start; the first monitor
 * leader imports that file into the monitors' replicated state, so a new
 * cluster needs nothing typed.  Each OSD or MDS made later gets its own
 * entry in D/keyring (its daemon reads its key there) and is registered
 * with the monitors through `auth import` as client.admin, as an admin
 * would do it by hand (doc/admin.md).  atoll.conf names the file
 * (`keyring`) and turns authentication on (`auth = ticket`); `--set
 * auth=none` turns it off.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "atoll/atoll.h"
#include "auth.h"
#include "cluster.h"

/* Registers one entry of kr with the monitors (auth import).  With auth
 * = none the monitors keep no keys: nothing to do. */
static int register_key(const struct cl_state *st, const struct keyring_entry *en)
{
	char conf[PATH_MAX + 16], *text = NULL, *status = NULL, *out = NULL;
	struct atoll_cluster *c = NULL;
	size_t len = 0, outlen = 0;
	cJSON *cmd;
	char *json;
	FILE *f;
	int ret;

	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	keyring_entry_write(f, en, true);
	fclose(f);
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "auth import");
	cJSON_AddStringToObject(cmd, "keyring", text ? text : "");
	json = cJSON_PrintUnformatted(cmd);
	cJSON_Delete(cmd);
	auth_wipe(text, len);
	free(text);
	if (!json)
		return -ENOMEM;
	cl_path(conf, sizeof(conf), st, "%s", CL_CONF_FILE);
	ret = atoll_cluster_create(&c, conf, 0);
	if (!ret)
		ret = atoll_cluster_set(c, "client_mount_timeout", "60s");
	if (!ret)
		ret = atoll_cluster_connect(c);
	if (!ret)
		ret = atoll_mon_command(c, json, &status, &out, &outlen);
	if (ret == -EOPNOTSUPP)
		ret = 0;	/* auth = none */
	if (ret)
		cl_err("cannot register '%s' with the monitors: %s", en->name,
		       status && *status ? status : atoll_strerror(ret));
	auth_wipe(json, strlen(json));
	free(json);
	atoll_free(status);
	atoll_free(out);
	atoll_cluster_shutdown(c);
	return ret;
}

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
	/* the four of `up` are in the file the first leader imports; the
	 * others (OSDs, MDSs, client.nbd) come later */
	if (!ret && strcmp(name, "mon.") && strcmp(name, "client.admin") &&
	    strcmp(name, "client.bootstrap-osd") && strcmp(name, "client.dashboard"))
		ret = register_key(st, keyring_find(&kr, name));
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
	/* the monitors' dashboard lists images and their locks as this
	 * read-only entity (doc/dashboard.md) */
	if (!ret)
		ret = cl_keyring_add(st, "client.dashboard", "allow r", "allow r", NULL);
	return ret;
}
