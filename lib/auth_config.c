/*
 * auth_config.c - a program's authentication from atoll.conf: `auth`
 * (none | ticket), `keyring` (the keyring file), `auth_clock_skew`, the
 * wire modes (`ms_mon_mode`, `ms_client_mode`, `ms_cluster_mode`: crc |
 * secure | prefer-secure, negotiated in the authenticated handshake, so
 * meaningless with auth = none), the test-only `debug_clock_offset`
 * (seconds added to this program's clock), and the struct msg_auth its
 * messenger gets (doc/security.md).  One place,
 * so that every daemon, tool and the client library read the same keys
 * the same way and refuse a world-readable keyring with the same words.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "auth_config.h"
#include "config.h"
#include "mono.h"
#include "monc.h"
#include "msg.h"

int auth_config_load(const struct config *cfg, const char *who, const char *entity,
		     struct keyring *kr, struct msg_auth **out, char *err, size_t errlen)
{
	const char *mode = NULL, *path = NULL;
	const struct keyring_entry *en;
	struct keyring local;
	static const char *const mode_keys[MSG_MODE_CLASSES] = {
		[MSG_MODE_MON] = "ms_mon_mode",
		[MSG_MODE_CLIENT] = "ms_client_mode",
		[MSG_MODE_CLUSTER] = "ms_cluster_mode",
	};
	static const char *const mode_defaults[MSG_MODE_CLASSES] = {
		[MSG_MODE_MON] = "secure",
		[MSG_MODE_CLIENT] = "crc",
		[MSG_MODE_CLUSTER] = "crc",
	};
	uint32_t modes[MSG_MODE_CLASSES];
	int64_t skew = 30, offset = 0;
	bool allow_none = false;
	int r;

	*out = NULL;
	if (kr)
		memset(kr, 0, sizeof(*kr));
	r = config_get_str(cfg, who, "auth", "none", &mode, err, errlen);
	if (r < 0)
		return r;
	if (!strcmp(mode, "none"))
		return 0;
	if (strcmp(mode, "ticket")) {
		snprintf(err, errlen, "option 'auth': '%s' is neither 'none' nor 'ticket'", mode);
		return -EINVAL;
	}
	r = config_get_str(cfg, who, "keyring", "/etc/atoll/keyring", &path, err, errlen);
	if (r < 0)
		return r;
	r = config_get_int(cfg, who, "auth_clock_skew", 30, 0, 3600, &skew, err, errlen);
	if (r < 0)
		return r;
	for (int i = 0; i < MSG_MODE_CLASSES; i++) {
		const char *v = NULL;

		r = config_get_str(cfg, who, mode_keys[i], mode_defaults[i], &v, err, errlen);
		if (r < 0)
			return r;
		if (msg_mode_parse(v, &modes[i]) < 0) {
			snprintf(err, errlen, "option '%s': '%s' is not one of crc, secure, "
				 "prefer-secure", mode_keys[i], v);
			return -EINVAL;
		}
	}
	/* while turning authentication on: peers without it still admitted */
	r = config_get_bool(cfg, who, "auth_allow_none", false, &allow_none, err, errlen);
	if (r < 0)
		return r;
	/* test-only: moves this program's clock for its tickets and beacons
	 * (tests/auth/clockskew.sh); never set in production */
	r = config_get_int(cfg, who, "debug_clock_offset", 0, -86400, 86400, &offset, err,
			   errlen);
	if (r < 0)
		return r;
	if (!kr)
		kr = &local;
	r = keyring_load(path, kr, err, errlen);
	if (r < 0)
		goto out_free;
	en = keyring_find(kr, entity);
	if (!en) {
		snprintf(err, errlen, "keyring '%s' holds no key for '%s'; add one with: "
			 "atoll auth get-or-create %s", path, entity, entity);
		r = -ENOKEY;
		goto out_free;
	}
	*out = msg_auth_new(entity, en->key);
	if (!*out) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto out_free;
	}
	msg_auth_set_skew(*out, (uint32_t)skew);
	for (int i = 0; i < MSG_MODE_CLASSES; i++)
		msg_auth_set_modes(*out, (enum msg_mode_class)i, modes[i]);
	msg_auth_set_clock_offset(*out, offset);
	msg_auth_set_allow_none(*out, allow_none);
	if (kr != &local)
		return 0;
out_free:
	keyring_free(kr);
	return r;
}

int auth_login(struct msgr *m, const char *mon_host, uint32_t timeout_ms,
	       struct msg_conn **keep, char *err, size_t errlen)
{
	monc_addr_t addrs[MONC_HOSTS_MAX];
	uint64_t end = mono_now_ms() + timeout_ms;
	struct msg_conn *c[MONC_HOSTS_MAX] = { 0 };
	int n, r = -ETIMEDOUT;

	n = monc_parse_hosts(mon_host, addrs, MONC_HOSTS_MAX, err, errlen);
	if (n < 0)
		return n;
	/* every monitor at once: the first handshake to complete wins */
	for (int i = 0; i < n; i++)
		c[i] = msgr_connect(m, addrs[i]);
	int won = -1;

	while (won < 0 && mono_now_ms() < end) {
		for (int i = 0; i < n && won < 0; i++)
			if (c[i] && msg_conn_is_open(c[i]))
				won = i;
		if (won < 0)
			usleep(2000);
	}
	r = won < 0 ? -ETIMEDOUT : 0;
	if (keep) {
		*keep = won < 0 ? NULL : c[won];
		if (won >= 0)
			c[won] = NULL;	/* the caller's reference now */
	}
	for (int i = 0; i < n; i++)
		msg_conn_put(c[i]);
	if (r)
		snprintf(err, errlen, "no monitor (%s) authenticated this client within %u ms; "
			 "check the keyring and that the monitors run", mon_host, timeout_ms);
	return r;
}
