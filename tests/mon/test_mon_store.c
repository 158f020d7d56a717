/*
 * test_mon_store.c - what the monitor keeps and how it survives: epochs
 * stay after a restart and are never reused, backup + restore gives the
 * same map, mkfs makes a new fsid each time, bad start-ups fail with a
 * sentence, and malformed frames close only their own connection.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static struct mh h;

static void setup(void)
{
	mh_init(&h, NULL);
	mh_start(&h);
}

static void teardown(void)
{
	mh_free(&h);
}

TestSuite(mon_store, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t epoch_of(struct mh *m)
{
	char *out = NULL;
	cJSON *j;
	uint64_t e;

	cr_assert_eq(mh_cmd(m, "{\"prefix\":\"status\",\"format\":\"json\"}", NULL, &out), 0);
	j = cJSON_Parse(out);
	cr_assert(j, "status is not JSON: %s", out);
	e = (uint64_t)cJSON_GetObjectItem(j, "epoch")->valuedouble;
	cJSON_Delete(j);
	free(out);
	return e;
}

Test(mon_store, restart_keeps_the_map_and_never_reuses_an_epoch)
{
	uint8_t u[16];
	int32_t id;
	uint64_t e, e2;
	char *out = NULL;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"keep\"}", NULL, NULL), 0);
	mh_uuid(u, 1);
	cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
	e = epoch_of(&h);
	cr_assert_eq(e, 3);
	cr_assert_eq(mh_stop(&h), 0, "SIGTERM did not stop the monitor cleanly");
	mh_start(&h);
	cr_assert_eq(epoch_of(&h), e);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool ls\"}", NULL, &out), 0);
	cr_assert_str_eq(out, "keep\n");
	free(out);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"next\"}", NULL, NULL), 0);
	e2 = epoch_of(&h);
	cr_assert_eq(e2, e + 1);
}

/* One command with a request id, sent as a client resending it would:
 * rc and status (malloc'd) of the answer in rc and st. */
static void cmd_with_id(struct mh *m, const char *json, uint64_t client, uint64_t seq,
			int *rc, char **st)
{
	struct mon_reqid id = { client, seq };
	struct mon_command_reply rep;
	struct enc en;
	struct dec d;
	struct msg *r;

	enc_init(&en);
	mon_command_encode(json, &id, &en);
	r = mh_call(m, MT_MON_COMMAND, &en);
	cr_assert(r, "no answer to %s", json);
	dec_init(&d, r->front, r->front_len);
	cr_assert_eq(mon_command_reply_decode(&d, &rep, st), 0);
	*rc = rep.rc;
	msg_free(r);
}

Test(mon_store, a_resent_command_with_its_request_id_is_applied_once)
{
	char *st = NULL;
	uint64_t e;
	int rc;

	cmd_with_id(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", 0xabc, 1, &rc, &st);
	cr_assert_eq(rc, 0, "osd set noout: %s", st);
	free(st);
	e = epoch_of(&h);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd unset\",\"flag\":\"noout\"}", NULL,
			    NULL), 0);
	cr_assert_eq(epoch_of(&h), e + 1);
	/* the resend is answered with the epoch it made, and changes nothing */
	cmd_with_id(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", 0xabc, 1, &rc, &st);
	cr_assert_eq(rc, 0);
	cr_assert(strstr(st, "already applied"), "status: %s", st);
	free(st);
	cr_assert_eq(epoch_of(&h), e + 1, "a resent command was applied again");
	/* the table survives a restart (it is in the replicated state) */
	cr_assert_eq(mh_stop(&h), 0);
	mh_start(&h);
	cmd_with_id(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", 0xabc, 1, &rc, &st);
	cr_assert(strstr(st, "already applied"), "after a restart: %s", st);
	free(st);
	cr_assert_eq(epoch_of(&h), e + 1);
	/* another sequence number is another command */
	cmd_with_id(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", 0xabc, 2, &rc, &st);
	cr_assert_eq(rc, 0, "%s", st);
	free(st);
	cr_assert_eq(epoch_of(&h), e + 2);
}

Test(mon_store, subscriber_from_epoch_one_replays_history)
{
	/* a full map of epoch 1, then a new connection that misses 2..3 */
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_epoch(&h, 1, 5000));
	mh_connect(&h);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"a\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"b\"}", NULL, NULL), 0);
	/* subscribing from epoch 1 sends the incrementals 2..3 */
	mh_subscribe(&h, 1);
	cr_assert(mh_wait_epoch(&h, 3, 5000), "history not replayed");
	cr_assert_eq(h.nfull, 1, "a full map was sent where incrementals would do");
	cr_assert_eq(h.nincs, 2);
	cr_assert_eq(h.map_err, 0);
	cr_assert_not_null(osdmap_pool_by_name(h.map, "b"));
}

Test(mon_store, backup_and_restore)
{
	struct mh r;
	char *out = NULL, *st = NULL, file[400];
	char restore_out[400];
	uint8_t u[16];
	int32_t id;
	uint64_t e;
	FILE *f;
	int rc;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"bk\",\"size\":2}",
			    NULL, NULL), 0);
	mh_uuid(u, 3);
	cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
	e = epoch_of(&h);

	{
		struct mon_command_reply rep;
		struct enc en;
		struct dec d;
		struct msg *m;
		char *s;

		enc_init(&en);
		mon_command_encode("{\"prefix\":\"mon backup\"}", NULL, &en);
		m = mh_call(&h, MT_MON_COMMAND, &en);
		cr_assert(m);
		dec_init(&d, m->front, m->front_len);
		cr_assert_eq(mon_command_reply_decode(&d, &rep, &s), 0);
		cr_assert_eq(rep.rc, 0, "mon backup: %s", s);
		cr_assert(rep.out_len > 16);
		snprintf(file, sizeof(file), "%s/backup.bin", h.dir);
		f = fopen(file, "w");
		cr_assert(f);
		cr_assert_eq(fwrite(rep.out, 1, rep.out_len, f), rep.out_len);
		fclose(f);
		free(s);
		msg_free(m);
	}

	/* restore into a new folder and start a monitor on it */
	memset(&r, 0, sizeof(r));
	snprintf(r.dir, sizeof(r.dir), "/tmp/atoll-mon-test.XXXXXX");
	cr_assert(mkdtemp(r.dir));
	snprintf(r.data, sizeof(r.data), "%s/mon", r.dir);
	snprintf(r.log, sizeof(r.log), "%s/mon.log", r.dir);
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	snprintf(restore_out, sizeof(restore_out), "%s/restore.out", r.dir);
	{
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			int fd = open(restore_out, O_WRONLY | O_CREAT, 0644);

			dup2(fd, 1);
			dup2(fd, 2);
			execl(mh_bin(), mh_bin(), "--restore", file, "--data", r.data,
			      (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	}
	cr_assert_eq(rc, 0, "atoll-mon --restore failed; see %s", restore_out);
	mh_start(&r);
	cr_assert_eq(epoch_of(&r), e);
	cr_assert_eq(mh_cmd(&r, "{\"prefix\":\"pool get\",\"name\":\"bk\",\"var\":\"size\"}",
			    &st, &out), 0);
	cr_assert_str_eq(out, "size: 2\n");
	free(out);
	free(st);
	/* the same fsid: the restored monitor is the same cluster */
	mh_subscribe(&r, 0);
	mh_subscribe(&h, 0);
	cr_assert(mh_wait_epoch(&r, e, 5000));
	cr_assert(mh_wait_epoch(&h, e, 5000));
	cr_assert(osdmap_equal(r.map, h.map), "restored map differs");
	mh_free(&r);
}

Test(mon_store, mkfs_makes_a_new_fsid_each_time_and_refuses_an_existing_store)
{
	struct mh other;

	mh_init(&other, NULL);
	cr_assert_str_neq(other.fsid, h.fsid);
	{
		pid_t pid = fork();
		int status;

		if (pid == 0) {
			int fd = open("/dev/null", O_WRONLY);

			dup2(fd, 1);
			dup2(fd, 2);
			execl(mh_bin(), mh_bin(), "--mkfs", "--data", h.data, (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1,
			  "mkfs over an existing store did not fail");
	}
	mh_free(&other);
}

Test(mon_store, start_without_store_fails_with_a_sentence)
{
	char dir[] = "/tmp/atoll-mon-test.XXXXXX", cmd[512], buf[512] = "";
	FILE *p;
	int st;

	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "'%s' --data %s --addr 127.0.0.1:0 2>&1", mh_bin(), dir);
	p = popen(cmd, "r");
	cr_assert(p);
	if (!fgets(buf, sizeof(buf), p))
		buf[0] = '\0';
	st = pclose(p);
	cr_assert_eq(WEXITSTATUS(st), 1);
	cr_assert(strstr(buf, "has no monitor store; create one with: atoll-mon --mkfs"),
		  "said: %s", buf);
	rmdir(dir);
}

static int raw_connect(const char *addr)
{
	char ip[64];
	int port, fd;
	struct sockaddr_in sa;

	cr_assert_eq(sscanf(addr, "%63[^:]:%d", ip, &port), 2);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, ip, &sa.sin_addr);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* True when the peer closes fd within ms. */
static bool closed_by_peer(int fd, int ms)
{
	uint64_t deadline = tu_now_ms() + (uint64_t)ms;
	char buf[4096];

	while (tu_now_ms() < deadline) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 50) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

Test(mon_store, malformed_frames_close_only_their_connection)
{
	static const uint8_t garbage[64] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3 };
	uint8_t hdr[32];
	int fd;

	/* pure garbage */
	fd = raw_connect(h.addr);
	cr_assert_eq(write(fd, garbage, sizeof(garbage)), (ssize_t)sizeof(garbage));
	cr_assert(closed_by_peer(fd, mh_scale(5000)), "garbage did not close the connection");
	close(fd);

	/* the right magic, an absurd length, a bad crc */
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, "ATM1", 4);
	hdr[4] = 1;
	hdr[16] = 0xff; hdr[17] = 0xff; hdr[18] = 0xff; hdr[19] = 0x7f;
	fd = raw_connect(h.addr);
	cr_assert_eq(write(fd, hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_assert(closed_by_peer(fd, mh_scale(5000)), "a bad header did not close it");
	close(fd);

	/* a truncated frame, then the peer hangs up */
	fd = raw_connect(h.addr);
	cr_assert_eq(write(fd, hdr, 10), 10);
	close(fd);

	/* the monitor still serves everyone else */
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"alive\"}", NULL, NULL), 0);
	mh_connect(&h);
	cr_assert_eq(epoch_of(&h), 2);
}

Test(mon_store, restore_refuses_a_damaged_backup_and_leaves_nothing)
{
	char dir[] = "/tmp/atoll-mon-test.XXXXXX", file[128], cmd[512], buf[512] = "";
	char store[160];
	struct stat sb;
	FILE *f, *p;
	int st;

	cr_assert(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/bad.bin", dir);
	f = fopen(file, "w");
	cr_assert(f);
	fputs("ATMONBK1 this is not a backup at all", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' --restore %s --data %s/mon 2>&1", mh_bin(), file, dir);
	p = popen(cmd, "r");
	cr_assert(p);
	if (!fgets(buf, sizeof(buf), p))
		buf[0] = '\0';
	st = pclose(p);
	cr_assert_eq(WEXITSTATUS(st), 1);
	cr_assert(strstr(buf, "not a monitor backup"), "said: %s", buf);
	snprintf(store, sizeof(store), "%s/mon/store", dir);
	cr_assert_neq(stat(store, &sb), 0, "a store was left behind");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
