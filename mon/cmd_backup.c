/*
 * cmd_backup.c - `mon backup`: the monitor's map history in pieces.
 *
 * The history may be longer than any reply can hold, so the CLI asks in
 * steps (doc/cli.md, "mon backup"):
 *   {"prefix": "mon backup", "part": "head"}  the file's head (the full
 *        map of the last epoch, and the history's range first..last:
 *        store.c, "Backup file")
 *   {"prefix": "mon backup", "part": "history", "from": E, "to": L,
 *    "max_bytes": N}  the records from E on, at most N bytes (and at
 *        least one), N at most BACKUP_CHUNK_MAX
 * and writes the pieces one after another, then the checksum.  An
 * incremental at or below the head's last epoch never changes, so the
 * pieces make one consistent file while the map moves on.  Without
 * "part" the whole file comes in one reply when it fits (tests, small
 * clusters).
 *
 * With authentication on, the head holds the monitors' auth state (every
 * key and service secret): it is sent only over a secure session, as
 * `auth get` (doc/security.md, "Backups").
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "crc32c.h"
#include "encode.h"
#include "auth.h"
#include "mon.h"
#include "msg.h"

#define BACKUP_CHUNK_MAX	(8u << 20)
#define BACKUP_ONESHOT_MAX	(48u << 20)

static int fail_store(struct cmd_out *o, int r)
{
	if (r == -ENODATA)
		return cmd_fail(o, r, "the monitor has no map yet; nothing to back up");
	if (r == -ERANGE)
		return cmd_fail(o, r, "the history asked for is no longer kept (trimmed "
				"meanwhile); run atoll mon backup again");
	return cmd_fail(o, r, "cannot read the monitor store: %s", strerror(-r));
}

/* The auth section of the head (*alen 0: authentication is off); < 0
 * with o failed when it may not leave over this session. */
static int auth_section(struct mon *mon, struct cmd_out *o, struct enc *a)
{
	enc_init(a);
	if (!mon_auth_ready(mon))
		return 0;
	if (!o->conn || msg_conn_mode(o->conn) != AUTH_MODE_SECURE)
		return cmd_fail(o, -EPERM, "a backup holds every key of the cluster and leaves a "
				"monitor only over a secure session; set ms_mon_mode = secure "
				"in atoll.conf");
	mon_auth_state_append(mon, a);
	return a->err;
}

static void auth_section_free(struct enc *a)
{
	auth_wipe(a->buf, a->len);
	enc_free(a);
}

static int head_of(struct mon *mon, struct cmd_out *o, void **buf, size_t *len,
		   uint64_t *first, uint64_t *last)
{
	struct enc a;
	int r = auth_section(mon, o, &a);

	if (r == 0)
		r = mon_store_backup_head(mon->store, a.buf, a.len, buf, len, first, last);
	auth_section_free(&a);
	return r;
}

static int whole(struct mon *mon, struct cmd_out *o)
{
	uint64_t first, last, next;
	void *head = NULL, *incs = NULL;
	size_t hlen, ilen = 0;
	struct enc e;
	int r;

	r = head_of(mon, o, &head, &hlen, &first, &last);
	if (r == 0 && first <= last)
		r = mon_store_backup_incs(mon->store, first, last, BACKUP_ONESHOT_MAX,
					  &incs, &ilen, &next);
	if (r < 0)
		goto out;
	if (first <= last && next != last + 1) {
		r = cmd_fail(o, -EFBIG, "the map history is too large for one reply; "
			     "use the CLI, which fetches it in pieces: atoll mon backup FILE");
		goto out;
	}
	enc_init(&e);
	enc_raw(&e, head, hlen);
	enc_raw(&e, incs, ilen);
	enc_u32(&e, atoll__crc32c(0, e.buf, e.len));
	r = e.err;
	if (r == 0) {
		o->bin = enc_take(&e, &o->binlen);
		r = o->bin ? 0 : -ENOMEM;
	}
	enc_free(&e);
	if (r == 0)
		cmd_say(o, "backup of epochs %llu..%llu (%zu bytes)",
			(unsigned long long)first, (unsigned long long)last, o->binlen);
out:
	if (head)
		auth_wipe(head, hlen);
	free(head);
	free(incs);
	return r < 0 && !o->rc ? fail_store(o, r) : r;
}

int cmd_mon_backup(struct mon *mon, cJSON *a, struct cmd_out *o)
{
	const char *part;
	int64_t from, to, max;
	uint64_t first, last, next;
	bool have;
	int r;

	if (cmd_arg_str(a, "part", false, &part, o) < 0)
		return o->rc;
	if (!part)
		return whole(mon, o);
	if (!strcmp(part, "head")) {
		r = head_of(mon, o, &o->bin, &o->binlen, &first, &last);
		if (r < 0)
			return o->rc ? r : fail_store(o, r);
		cmd_say(o, "backup of epochs %llu..%llu", (unsigned long long)first,
			(unsigned long long)last);
		return 0;
	}
	if (strcmp(part, "history") != 0)
		return cmd_fail(o, -EINVAL, "argument 'part' is '%s', not head or history",
				part);
	if (cmd_arg_int(a, "from", 1, INT64_MAX, &from, &have, o) < 0 ||
	    (!have && cmd_fail(o, -EINVAL, "argument 'from' is missing")) ||
	    cmd_arg_int(a, "to", 1, INT64_MAX, &to, &have, o) < 0 ||
	    (!have && cmd_fail(o, -EINVAL, "argument 'to' is missing")) ||
	    cmd_arg_int(a, "max_bytes", 1, BACKUP_CHUNK_MAX, &max, &have, o) < 0)
		return o->rc;
	if (!have)
		max = BACKUP_CHUNK_MAX;
	r = mon_store_backup_incs(mon->store, (uint64_t)from, (uint64_t)to, (size_t)max,
				  &o->bin, &o->binlen, &next);
	if (r < 0)
		return fail_store(o, r);
	cmd_say(o, "epochs %lld..%llu", (long long)from, (unsigned long long)(next - 1));
	return 0;
}
