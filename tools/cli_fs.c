/*
 * cli_fs.c - `atoll fs status`: the file system's metadata server (MDS)
 * state, its connected clients, the inode count, the journal position,
 * the requests it served (in all, per op and per client), its leases and
 * its metadata cache.
 *
 * An exception to "the CLI uses only the public API" (cli.h): the MDS is
 * not behind libatoll, so this command speaks the MDS protocol itself.
 * It links the MDS protocol library (posixfs/mds_proto.c) and the
 * internal messenger (lib/msg.h) and config reader (lib/config.h), and
 * asks the MDS with one MT_MDS_STATUS message.  The MDS is found through
 * --mds IP:PORT (or -o mds=IP:PORT, as atoll-fuse takes it), else the
 * active MDS the monitors name (`mds stat`: active, standbys, the
 * grant's epoch and what each said it does, which is printed first),
 * else mds_addr of the configuration ([mds] or [global]).  Only the
 * status message is sent, never a client request, so the MDS does not
 * count this command as a client.  `atoll fs authorize` sends requests
 * (lookups, the data namespace's attribute) as client 0, with no session
 * and no request id.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_call.h"
#include "config.h"
#include "encode.h"
#include "mds_proto.h"
#include "msg.h"

#define FS_STATUS_TIMEOUT_MS 10000u

/* The MDS's address: --mds, else mds_addr of the configuration. */
static int find_mds(struct cli *cl, const char *opt, char *out, size_t len)
{
	struct config *conf = NULL;
	char err[256];
	const char *v;

	if (opt) {
		snprintf(out, len, "%s", opt);
		return 0;
	}
	if (config_load(&conf, cl->conf, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		return CLI_EXIT_ERROR;
	}
	v = config_get(conf, "mds", "mds_addr", NULL);
	if (!v) {
		cli_err("no MDS address: the configuration%s%s has no mds_addr; give one with "
			"--mds IP:PORT (atoll-cluster up writes it to DIR/atoll.conf)",
			cl->conf ? " " : "", cl->conf ? cl->conf : "");
		config_free(conf);
		return CLI_EXIT_USAGE;
	}
	snprintf(out, len, "%s", v);
	config_free(conf);
	return 0;
}

/* The monitors' `mds stat` (JSON; NULL when it cannot be had: an older
 * monitor, none reachable). */
static cJSON *mds_roles(struct cli *cl)
{
	char *out = NULL, *status = NULL;
	cJSON *j = NULL;

	if (cli_connect(cl) == 0 &&
	    atoll_mon_command(cl->c, "{\"prefix\":\"mds stat\",\"format\":\"json\"}", &status,
			      &out, NULL) == 0)
		j = cJSON_Parse(out);
	atoll_free(out);
	atoll_free(status);
	return j;
}

/* The first file system's active MDS's address from roles, or NULL. */
static const char *roles_active_addr(cJSON *roles, cJSON **fs_out)
{
	cJSON *fss = cJSON_GetObjectItem(roles, "filesystems");
	cJSON *fs = cJSON_GetArrayItem(fss, 0);
	cJSON *act = cJSON_GetObjectItem(fs, "active");
	cJSON *addr = cJSON_GetObjectItem(act, "addr");

	*fs_out = fs;
	return cJSON_IsString(addr) ? addr->valuestring : NULL;
}

static void print_roles_plain(cJSON *roles)
{
	cJSON *fs;

	cJSON_ArrayForEach(fs, cJSON_GetObjectItem(roles, "filesystems")) {
		cJSON *act = cJSON_GetObjectItem(fs, "active"), *sb;
		const char *mp = cJSON_GetStringValue(cJSON_GetObjectItem(fs, "meta_pool"));
		const char *dp = cJSON_GetStringValue(cJSON_GetObjectItem(fs, "data_pool"));

		printf("file system %s+%s:\n", mp ? mp : "?", dp ? dp : "?");
		if (cJSON_IsObject(act))
			printf("  active:   mds.%s at %s (client.%s), granted in epoch %.0f, %s, "
			       "journal %.0f:%.0f\n",
			       cJSON_GetStringValue(cJSON_GetObjectItem(act, "name")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(act, "addr")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(act, "instance")),
			       cJSON_GetNumberValue(cJSON_GetObjectItem(fs, "grant_epoch")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(act, "state")),
			       cJSON_GetNumberValue(cJSON_GetObjectItem(act, "journal_segment")),
			       cJSON_GetNumberValue(cJSON_GetObjectItem(act, "journal_seq")));
		else
			printf("  active:   none (a standby takes over within mds_beacon_grace)\n");
		cJSON_ArrayForEach(sb, cJSON_GetObjectItem(fs, "standbys"))
			printf("  standby:  mds.%s at %s (client.%s), journal followed to %.0f:%.0f\n",
			       cJSON_GetStringValue(cJSON_GetObjectItem(sb, "name")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(sb, "addr")),
			       cJSON_GetStringValue(cJSON_GetObjectItem(sb, "instance")),
			       cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "journal_segment")),
			       cJSON_GetNumberValue(cJSON_GetObjectItem(sb, "journal_seq")));
	}
}

/* Sends MT_MDS_STATUS to addr and decodes the answer into st. */
static int ask_status(const char *addr, struct mds_status *st)
{
	struct cli_msgr *cm = NULL;
	struct msg *reply = NULL;
	struct enc e;
	struct dec d;
	int ret;

	ret = cli_msgr_new(&cm);
	if (ret)
		return ret;
	enc_init(&e);
	ret = cli_msgr_call(cm, addr, MT_MDS_STATUS, &e, FS_STATUS_TIMEOUT_MS, &reply);
	enc_free(&e);
	if (!ret) {
		dec_init(&d, reply->front, reply->front_len);
		ret = mds_status_decode(&d, st);
	}
	msg_free(reply);
	cli_msgr_free(cm);
	return ret;
}

static void add_u64(cJSON *o, const char *k, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cJSON_AddRawToObject(o, k, buf);
}

static void print_json(const struct mds_status *st, cJSON *fs)
{
	cJSON *o = cJSON_CreateObject(), *j, *cs, *ops;
	char *s;

	if (fs) {
		/* the monitors' view: active, standbys, grant epoch */
		cJSON_AddItemToObject(o, "active", cJSON_Duplicate(cJSON_GetObjectItem(fs, "active"), 1));
		cJSON_AddItemToObject(o, "standbys",
				      cJSON_Duplicate(cJSON_GetObjectItem(fs, "standbys"), 1));
		cJSON_AddNumberToObject(o, "grant_epoch",
					cJSON_GetNumberValue(cJSON_GetObjectItem(fs, "grant_epoch")));
	}
	cJSON_AddStringToObject(o, "addr", st->addr);
	cJSON_AddStringToObject(o, "state", mds_state_name(st->state));
	add_u64(o, "uptime_ms", st->uptime_ms);
	cJSON_AddStringToObject(o, "meta_pool", st->meta_pool);
	cJSON_AddStringToObject(o, "data_pool", st->data_pool);
	add_u64(o, "inodes", st->inodes);
	add_u64(o, "next_ino", st->next_ino);
	j = cJSON_AddObjectToObject(o, "journal");
	add_u64(j, "segment", st->j_seg);
	add_u64(j, "entries", st->j_entries);
	add_u64(j, "offset", st->j_offset);
	add_u64(j, "seq", st->j_seq);
	add_u64(j, "durable", st->j_durable);
	add_u64(o, "num_clients", st->nclients);
	add_u64(o, "sessions", st->sessions);
	add_u64(o, "session_timeout_ms", st->session_timeout_ms);
	cs = cJSON_AddArrayToObject(o, "clients");
	for (uint32_t i = 0; i < st->nclients; i++) {
		cJSON *ci = cJSON_CreateObject();
		add_u64(ci, "id", st->clients[i].id);
		cJSON_AddStringToObject(ci, "addr", st->clients[i].addr);
		add_u64(ci, "requests", st->clients[i].requests);
		add_u64(ci, "connected_ms", st->clients[i].connected_ms);
		cJSON_AddItemToArray(cs, ci);
	}
	j = cJSON_AddObjectToObject(o, "requests");
	add_u64(j, "total", st->requests);
	add_u64(j, "malformed", st->malformed);
	add_u64(j, "status", st->status_requests);
	ops = cJSON_AddObjectToObject(j, "by_op");
	for (uint32_t op = 1; op < st->nops; op++)
		add_u64(ops, mds_op_name(op), st->op_count[op]);
	j = cJSON_AddObjectToObject(o, "leases");
	add_u64(j, "lease_ms", st->lease_ms);
	add_u64(j, "held", st->leases);
	add_u64(j, "max", st->leases_max);
	add_u64(j, "grants", st->grants);
	add_u64(j, "revokes", st->revokes);
	add_u64(j, "revoke_timeouts", st->revoke_timeouts);
	j = cJSON_AddObjectToObject(o, "inflight");
	add_u64(j, "files", st->inflight);
	add_u64(j, "waits", st->inflight_waits);
	add_u64(j, "wait_timeouts", st->inflight_timeouts);
	j = cJSON_AddObjectToObject(o, "cache");
	add_u64(j, "bytes", st->cache_bytes);
	add_u64(j, "max", st->cache_max);
	add_u64(j, "nodes", st->cache_nodes);
	add_u64(j, "hits", st->cache_hits);
	add_u64(j, "misses", st->cache_misses);
	add_u64(j, "evictions", st->cache_evictions);
	s = cJSON_PrintUnformatted(o);
	if (s)
		printf("%s\n", s);
	free(s);
	cJSON_Delete(o);
}

static void human_ms(uint64_t ms, char *buf, size_t len)
{
	uint64_t s = ms / 1000;

	if (s < 60)
		snprintf(buf, len, "%" PRIu64 ".%01" PRIu64 " s", s, (ms % 1000) / 100);
	else if (s < 3600)
		snprintf(buf, len, "%" PRIu64 " min %" PRIu64 " s", s / 60, s % 60);
	else
		snprintf(buf, len, "%" PRIu64 " h %" PRIu64 " min", s / 3600, (s / 60) % 60);
}

static void print_plain(const struct mds_status *st)
{
	char up[32], sz[32];

	human_ms(st->uptime_ms, up, sizeof(up));
	cli_human_bytes((double)st->j_offset, sz, sizeof(sz));
	printf("mds %s: %s, up %s\n", st->addr, mds_state_name(st->state), up);
	printf("  pools:    metadata '%s', data '%s'\n", st->meta_pool, st->data_pool);
	printf("  inodes:   %" PRIu64 " (next inode number %" PRIu64 ")\n", st->inodes,
	       st->next_ino);
	printf("  journal:  segment %" PRIu64 ", %" PRIu64 " entr%s, offset %" PRIu64
	       " (%s), last sequence %" PRIu64 "\n", st->j_seg, st->j_entries,
	       st->j_entries == 1 ? "y" : "ies", st->j_offset, sz, st->j_seq);
	printf("  clients:  %u connected, %" PRIu64 " session%s", st->nclients, st->sessions,
	       st->sessions == 1 ? "" : "s");
	if (st->session_timeout_ms)
		printf(" (evicted after %u ms without a connection)", st->session_timeout_ms);
	printf("\n");
	for (uint32_t i = 0; i < st->nclients; i++) {
		human_ms(st->clients[i].connected_ms, up, sizeof(up));
		printf("    client.%" PRIu64 "  %-22s %" PRIu64 " requests, connected %s\n",
		       st->clients[i].id, st->clients[i].addr, st->clients[i].requests, up);
	}
	printf("  requests: %" PRIu64 " served", st->requests);
	if (st->malformed)
		printf(", %" PRIu64 " malformed", st->malformed);
	printf(", %" PRIu64 " status\n", st->status_requests);
	int col = 0;
	for (uint32_t op = 1; op < st->nops; op++) {
		if (!st->op_count[op])
			continue;
		printf("%s%s %" PRIu64, col % 6 == 0 ? (col ? "\n    " : "    ") : ", ",
		       mds_op_name(op), st->op_count[op]);
		col++;
	}
	if (col)
		printf("\n");
	if (st->lease_ms)
		printf("  leases:   %" PRIu64 " held (at most %" PRIu64 "), %" PRIu64 " ms each; %"
		       PRIu64 " granted, %" PRIu64 " revoked, %" PRIu64 " not acked in time\n",
		       st->leases, st->leases_max, (uint64_t)st->lease_ms, st->grants,
		       st->revokes, st->revoke_timeouts);
	else
		printf("  leases:   off (clients cache metadata for 1 s)\n");
	printf("  closed with writes in flight: %" PRIu64 " files now; %" PRIu64 " opens waited "
	       "for such writes, %" PRIu64 " of them in vain\n", st->inflight,
	       st->inflight_waits, st->inflight_timeouts);
	if (st->cache_max) {
		char b1[32], b2[32];
		cli_human_bytes((double)st->cache_bytes, b1, sizeof(b1));
		cli_human_bytes((double)st->cache_max, b2, sizeof(b2));
		printf("  cache:    %s of %s, %" PRIu64 " inodes; %" PRIu64 " hits, %" PRIu64
		       " misses, %" PRIu64 " evictions\n", b1, b2, st->cache_nodes,
		       st->cache_hits, st->cache_misses, st->cache_evictions);
	}
}

static int run_status(struct cli *cl, const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *opt = NULL;
	struct mds_status st;
	char addr[128];
	int ret;

	for (int i = 0; i < argc; i++) {
		if ((strcmp(argv[i], "--mds") == 0) && i + 1 < argc)
			opt = argv[++i];
		else if (strncmp(argv[i], "--mds=", 6) == 0)
			opt = argv[i] + 6;
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc &&
			 strncmp(argv[i + 1], "mds=", 4) == 0)
			opt = argv[++i] + 4;
		else
			return cli_usage(cmd, "unexpected argument '%s'", argv[i]);
	}
	cJSON *roles = mds_roles(cl), *fs = NULL;
	const char *act = roles ? roles_active_addr(roles, &fs) : NULL;
	if (!opt && act) {
		snprintf(addr, sizeof(addr), "%s", act);
	} else if (!opt && fs) {
		/* file systems known, none active now: say who waits */
		if (cl->json) {
			char *s = cJSON_PrintUnformatted(roles);
			printf("%s\n", s ? s : "{}");
			free(s);
		} else {
			print_roles_plain(roles);
		}
		cJSON_Delete(roles);
		return CLI_EXIT_CONNECT;
	} else {
		ret = find_mds(cl, opt, addr, sizeof(addr));
		if (ret) {
			cJSON_Delete(roles);
			return ret;
		}
	}
	if (!cl->json && fs)
		print_roles_plain(roles);
	ret = ask_status(addr, &st);
	if (ret) {
		if (ret == -EINVAL)
			cli_err("'%s' is not an MDS address (IP:PORT)", addr);
		else
			cli_err("the MDS at %s does not answer: %s; is it running? "
				"(atoll-cluster status shows it)", addr, atoll_strerror(ret));
		cJSON_Delete(roles);
		return ret == -EINVAL ? CLI_EXIT_USAGE : CLI_EXIT_CONNECT;
	}
	if (cl->json)
		print_json(&st, fs);
	else
		print_plain(&st);
	free(st.clients);
	cJSON_Delete(roles);
	return CLI_EXIT_OK;
}

/* ---- fs authorize ---------------------------------------------------------- */

/* One MDS request from the CLI: client 0 and request id 0 (no session,
 * no lease, not kept in the index of answered requests).  The answer's
 * rc, or -errno when the MDS did not answer; rp is the caller's to
 * free (ents, plus, value). */
static int mds_req1(struct cli_msgr *cm, const char *addr, struct mds_req *rq,
		    struct mds_reply *rp)
{
	struct msg *reply = NULL;
	struct enc e;
	struct dec d;
	int ret;

	enc_init(&e);
	mds_req_encode(&e, rq);
	ret = cli_msgr_call(cm, addr, MT_MDS_REQUEST, &e, FS_STATUS_TIMEOUT_MS, &reply);
	enc_free(&e);
	if (ret)
		return ret;
	dec_init(&d, reply->front, reply->front_len);
	ret = mds_reply_decode(&d, rp);
	msg_free(reply);
	return ret ? ret : rp->rc;
}

static void reply_free(struct mds_reply *rp)
{
	free(rp->ents);
	free(rp->plus);
	free(rp->value);
	memset(rp, 0, sizeof(*rp));
}

/* The data namespace of directory path (made when it has none): its
 * prefix in out. */
static int dir_namespace(struct cli_msgr *cm, const char *addr, const char *path, char *out,
			 size_t outlen)
{
	struct mds_req *rq = calloc(1, sizeof(*rq));
	struct mds_reply *rp = calloc(1, sizeof(*rp));
	uint64_t ino = MDS_ROOT_INO;
	const char *p = path;
	int ret = -ENOMEM;

	if (!rq || !rp)
		goto out;
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (!n)
			break;
		memset(rq, 0, sizeof(*rq));
		rq->op = MDS_OP_LOOKUP;
		rq->ino = ino;
		snprintf(rq->name, sizeof(rq->name), "%.*s", (int)n, p);
		p += n;
		ret = mds_req1(cm, addr, rq, rp);
		if (!ret && (!rp->ninodes || !S_ISDIR(rp->in[0].mode)))
			ret = -ENOTDIR;
		if (ret) {
			cli_err("'%s' is not a directory of the file system: %s", path,
				atoll_strerror(ret));
			goto out;
		}
		ino = rp->in[0].ino;
		reply_free(rp);
	}
	memset(rq, 0, sizeof(*rq));
	rq->op = MDS_OP_GETXATTR;
	rq->ino = ino;
	snprintf(rq->name, sizeof(rq->name), "%s", MDS_XATTR_DNS);
	ret = mds_req1(cm, addr, rq, rp);
	if (ret == -ENODATA) {
		reply_free(rp);
		rq->op = MDS_OP_SETXATTR;
		rq->value = "1";
		rq->vlen = 1;
		ret = mds_req1(cm, addr, rq, rp);
		if (ret == -ENOTEMPTY) {
			cli_err("'%s' has subfolders made before it had a data namespace; give the "
				"namespace to a new folder (mkdir, then fs authorize) and move the "
				"files in", path);
			goto out;
		}
		if (!ret) {
			reply_free(rp);
			rq->op = MDS_OP_GETXATTR;
			rq->value = NULL;
			rq->vlen = 0;
			ret = mds_req1(cm, addr, rq, rp);
		}
	}
	if (ret) {
		cli_err("cannot give '%s' a data namespace: %s (the key needs mds caps "
			"'allow *')", path, atoll_strerror(ret));
		goto out;
	}
	snprintf(out, outlen, "%.*s", (int)rp->vlen, rp->value ? (const char *)rp->value : "");
out:
	if (rp)
		reply_free(rp);
	free(rp);
	free(rq);
	return ret;
}

static int run_authorize(struct cli *cl, const struct cli_cmd *cmd, int argc, char **argv)
{
	const char *opt = NULL, *out_path = NULL, *pos[3] = { NULL, NULL, NULL };
	int npos = 0;
	char addr[128], prefix[64], pool[128] = "fs_data", osd_caps[256], mds_caps[256];
	struct mds_status st;
	struct cli_msgr *cm = NULL;
	int ret;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--mds") == 0 && i + 1 < argc)
			opt = argv[++i];
		else if (strncmp(argv[i], "--mds=", 6) == 0)
			opt = argv[i] + 6;
		else if (strcmp(argv[i], "--keyring-out") == 0 && i + 1 < argc)
			out_path = argv[++i];
		else if (npos < 3)
			pos[npos++] = argv[i];
		else
			return cli_usage(cmd, "unexpected argument '%s'", argv[i]);
	}
	if (npos != 3)
		return cli_usage(cmd, "give the client, the path and r or rw");
	if (strncmp(pos[0], "client.", 7) || !pos[0][7])
		return cli_usage(cmd, "'%s' is not a client entity (client.NAME)", pos[0]);
	if (pos[1][0] != '/' || strstr(pos[1], "/../") || strstr(pos[1], "/./"))
		return cli_usage(cmd, "'%s' is not an absolute path", pos[1]);
	if (strcmp(pos[2], "r") && strcmp(pos[2], "rw"))
		return cli_usage(cmd, "access '%s' is neither r nor rw", pos[2]);
	cJSON *roles = mds_roles(cl), *fs = NULL;
	const char *act = roles ? roles_active_addr(roles, &fs) : NULL;
	if (!opt && act)
		snprintf(addr, sizeof(addr), "%s", act);
	else if ((ret = find_mds(cl, opt, addr, sizeof(addr)))) {
		cJSON_Delete(roles);
		return ret;
	}
	cJSON_Delete(roles);
	if ((ret = ask_status(addr, &st))) {
		cli_err("the MDS at %s does not answer: %s", addr, atoll_strerror(ret));
		return CLI_EXIT_CONNECT;
	}
	snprintf(pool, sizeof(pool), "%s", st.data_pool);
	free(st.clients);
	if ((ret = cli_msgr_new(&cm)))
		return CLI_EXIT_CONNECT;
	ret = dir_namespace(cm, addr, pos[1], prefix, sizeof(prefix));
	cli_msgr_free(cm);
	if (ret)
		return CLI_EXIT_ERROR;
	snprintf(osd_caps, sizeof(osd_caps), "allow %s pool=%s object_prefix=%s", pos[2], pool,
		 prefix);
	snprintf(mds_caps, sizeof(mds_caps), "allow %s path=%s", pos[2], pos[1]);
	const char *caps[] = { "mon", "allow r", "osd", osd_caps, "mds", mds_caps };

	return cli_auth_get_or_create(cl, pos[0], caps, 6, out_path);
}

const struct cli_cmd cli_fs_cmds[] = {
	{ "fs status", "[--mds IP:PORT]",
	  "The file system's metadata server: its state (replaying while it loads the\n"
	  "namespace and replays its journal, then active), uptime, connected clients\n"
	  "(atoll-fuse mounts) with their ids, the inode count, the journal position\n"
	  "(segment, entries, byte offset, last sequence number), the requests it\n"
	  "served (in all, per op, per client) and the leases it holds for clients'\n"
	  "caches (granted, revoked, revokes not acked in time); first, what the\n"
	  "monitors say: the active MDS (name, address, instance, the epoch of its\n"
	  "grant, and replaying/reconnect/active), and the standbys.  The MDS asked is\n"
	  "--mds IP:PORT (or -o mds=IP:PORT), else the active one, else mds_addr of the\n"
	  "configuration.  Exit status 4 when the MDS does not answer (or none is\n"
	  "active).\n",
	  run_status },
	{ "fs authorize", "CLIENT PATH r|rw [--mds IP:PORT] [--keyring-out FILE]",
	  "Gives folder PATH of the file system a data namespace (unless it has one;\n"
	  "a folder with subfolders made before is refused) and makes the key of\n"
	  "CLIENT (client.NAME) with the caps that limit it to PATH: mds caps for\n"
	  "PATH and osd caps for the data objects of the files created below it\n"
	  "(object_prefix=), as `atoll auth get-or-create`: it prints the keyring\n"
	  "section (or merges it into FILE, mode 0600); a CLIENT that exists with\n"
	  "other caps is refused (change them with atoll auth caps).  Files made in\n"
	  "PATH before it had a namespace keep their objects where they are\n"
	  "(doc/security.md, \"File-system caps\").  Needs mds caps 'allow *' and\n"
	  "monitor caps 'allow *'.\n",
	  run_authorize },
	{ NULL, NULL, NULL, NULL },
};
