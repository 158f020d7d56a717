/*
 * cli_auth.c - `atoll auth ...`: the entities and keys the monitors hold
 * (doc/security.md, "The monitors' state").  Each command is one monitor
 * command; the monitor renders the reply (keyring text, or JSON).
 *
 * --keyring-out PATH (add, get-or-create, get, rotate) merges the
 * entity's section into the keyring file PATH instead of printing it:
 * written mode 0600 through a temporary file renamed over the old one
 * (lib/keyring.c), so a program reading PATH sees the old keyring or the
 * new one, never half of either.  `atoll auth rotate client.admin
 * --keyring-out KEYRING` rotates the admin's own key that way.  This
 * file uses lib/keyring.c, as cli_fs.c uses the core (tools/meson.build).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "auth.h"

/* Merges the keyring text (the monitor's reply) into path. */
static int write_out(const char *path, const char *text, size_t len)
{
	struct keyring got, kr;
	char err[512];
	int r;

	memset(&kr, 0, sizeof(kr));
	r = keyring_parse(text, len, &got, err, sizeof(err));
	if (r < 0 || got.n != 1) {
		cli_err("the monitor's reply is not one keyring section: %s", r < 0 ? err : "");
		keyring_free(&got);
		return CLI_EXIT_ERROR;
	}
	if (access(path, F_OK) == 0 && keyring_load(path, &kr, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		r = -EINVAL;
		goto out;
	}
	r = keyring_set(&kr, got.e[0].name, got.e[0].key);
	for (uint32_t i = 0; !r && i < kr.n; i++)
		if (!strcmp(kr.e[i].name, got.e[0].name)) {
			kr.e[i].ncaps = got.e[0].ncaps;
			memcpy(kr.e[i].caps, got.e[0].caps, sizeof(got.e[0].caps));
		}
	if (!r)
		r = keyring_save(path, &kr);
	if (r < 0)
		cli_err("cannot write '%s': %s", path, strerror(-r));
	else
		fprintf(stderr, "wrote the key of '%s' to %s\n", got.e[0].name, path);
out:
	keyring_free(&got);
	keyring_free(&kr);
	return r < 0 ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

/* Sends cmd (consumed); prints the reply, or merges it into out_path. */
static int auth_cmd(struct cli *cl, cJSON *cmd, const char *out_path)
{
	char *status, *out;
	size_t outlen;
	int r;

	r = cli_mon_call(cl, cmd, cl->json && !out_path, &status, &out, &outlen);
	if (r)
		return r;
	if (out_path) {
		r = write_out(out_path, out ? out : "", outlen);
	} else {
		if (out && outlen)
			fwrite(out, 1, outlen, stdout);
		if (out && outlen && out[outlen - 1] != '\n')
			putchar('\n');
		if (status && *status)
			fprintf(stderr, "%s\n", status);
		r = CLI_EXIT_OK;
	}
	if (out)
		auth_wipe(out, outlen);
	atoll_free(status);
	atoll_free(out);
	return r;
}

int cli_auth_get_or_create(struct cli *cl, const char *entity, const char *const *caps,
			   int ncaps, const char *out_path)
{
	cJSON *cmd = cJSON_CreateObject(), *arr;

	cJSON_AddStringToObject(cmd, "prefix", "auth get-or-create");
	cJSON_AddStringToObject(cmd, "entity", entity);
	arr = cJSON_AddArrayToObject(cmd, "caps");
	for (int i = 0; i < ncaps; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(caps[i]));
	return auth_cmd(cl, cmd, out_path);
}

/* NAME [SERVICE CAPS]... [--keyring-out PATH] */
static int run_named(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	bool with_caps = strstr(c->args, "CAPS") != NULL;
	bool with_out = strstr(c->args, "--keyring-out") != NULL;
	const char *out_path = NULL;
	cJSON *cmd, *caps = NULL;
	int n = 0;

	if (argc < 1 || argv[0][0] == '-')
		return cli_usage(c, "give an entity name such as client.alice");
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", c->words);
	cJSON_AddStringToObject(cmd, "entity", argv[0]);
	if (with_caps)
		caps = cJSON_AddArrayToObject(cmd, "caps");
	for (int i = 1; i < argc; i++) {
		if (with_out && !strcmp(argv[i], "--keyring-out") && i + 1 < argc) {
			out_path = argv[++i];
		} else if (with_caps) {
			cJSON_AddItemToArray(caps, cJSON_CreateString(argv[i]));
			n++;
		} else {
			cJSON_Delete(cmd);
			return cli_usage(c, "unexpected argument '%s'", argv[i]);
		}
	}
	if (n % 2) {
		cJSON_Delete(cmd);
		return cli_usage(c, "caps come in pairs: SERVICE CAPS (e.g. osd 'allow rw')");
	}
	return auth_cmd(cl, cmd, out_path);
}

static int run_ls(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	cJSON *cmd;

	(void)argv;
	if (argc)
		return cli_usage(c, "no arguments");
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "auth ls");
	return auth_cmd(cl, cmd, NULL);
}

static int run_import(struct cli *cl, const struct cli_cmd *c, int argc, char **argv)
{
	struct keyring kr;
	char err[512], *text = NULL;
	size_t len = 0;
	FILE *f;
	cJSON *cmd;
	int r;

	if (argc != 1)
		return cli_usage(c, "give one keyring file");
	/* keyring_load checks the file's mode and syntax first */
	r = keyring_load(argv[0], &kr, err, sizeof(err));
	if (r < 0) {
		cli_err("%s", err);
		keyring_free(&kr);
		return CLI_EXIT_ERROR;
	}
	f = open_memstream(&text, &len);
	if (!f) {
		keyring_free(&kr);
		return CLI_EXIT_ERROR;
	}
	for (uint32_t i = 0; i < kr.n; i++)
		keyring_entry_write(f, &kr.e[i], true);
	fclose(f);
	keyring_free(&kr);
	cmd = cJSON_CreateObject();
	cJSON_AddStringToObject(cmd, "prefix", "auth import");
	cJSON_AddStringToObject(cmd, "keyring", text ? text : "");
	if (text)
		auth_wipe(text, len);
	free(text);
	return auth_cmd(cl, cmd, NULL);
}

const struct cli_cmd cli_auth_cmds[] = {
	{ "auth add", "NAME [SERVICE CAPS]... [--keyring-out PATH]",
	  "Adds an entity with a fresh key and its caps (SERVICE: mon, osd or mds) and\n"
	  "prints its keyring section (or merges it into PATH, mode 0600).\n", run_named },
	{ "auth get-or-create", "NAME [SERVICE CAPS]... [--keyring-out PATH]",
	  "The same, or the existing entity (its key only over a secure session).\n",
	  run_named },
	{ "auth get", "NAME [--keyring-out PATH]",
	  "Prints an entity's keyring section; refused unless the session to the\n"
	  "monitor is secure (ms_mon_mode).\n", run_named },
	{ "auth ls", "", "Every entity and its caps, never a key.\n", run_ls },
	{ "auth rm", "NAME", "Removes an entity: it can no longer log in.\n", run_named },
	{ "auth caps", "NAME [SERVICE CAPS]...", "Replaces an entity's caps.\n", run_named },
	{ "auth rotate", "NAME [--keyring-out PATH]",
	  "Gives an entity a new key and prints it (or merges it into PATH: rotate the\n"
	  "admin's own key with: atoll auth rotate client.admin --keyring-out KEYRING).\n",
	  run_named },
	{ "auth import", "FILE",
	  "Adds or replaces the entities of a keyring file, keys and caps as written.\n",
	  run_import },
	{ NULL, NULL, NULL, NULL },
};
