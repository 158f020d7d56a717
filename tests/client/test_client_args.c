/*
 * test_client_args.c - the client library refuses bad arguments at once,
 * before anything is sent (no cluster needed).
 *
 * The object calls need an I/O context; without a cluster we make one by
 * hand on an unconnected handle (white box: lib/client/client.h), so an
 * argument that passes every check ends in -ENOTCONN, and one that fails
 * a check ends in that check's errno.  That pins both sides of each
 * limit: 400-byte names pass and 401 bytes do not, 10,000 entries pass
 * and 10,001 do not, and so on.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"

static struct atoll_cluster *cl;
static struct atoll_ioctx fake_io;
static struct atoll_ioctx *io = &fake_io;
static char dummy[16];		/* a non-NULL buffer never read */

static void setup(void)
{
	/* no file: make sure no stray $ATOLL_CONF or ./atoll.conf is read */
	setenv("ATOLL_CONF", "/dev/null", 1);
	cr_assert_eq(atoll_cluster_create(&cl, NULL, 0), 0);
	fake_io.c = cl;
	fake_io.pool = 1;
}

static void teardown(void)
{
	atoll_cluster_shutdown(cl);
	cl = NULL;
}

TestSuite(client_args, .init = setup, .fini = teardown);

static char *name_of(size_t n)
{
	char *s = malloc(n + 1);

	memset(s, 'a', n);
	s[n] = '\0';
	return s;
}

/* ---- the handle ---- */

Test(client_args, create_refuses_flags)
{
	struct atoll_cluster *c = (void *)1;

	cr_assert_eq(atoll_cluster_create(&c, NULL, 1), -EINVAL);
	cr_assert_null(c);
	cr_assert_eq(atoll_cluster_create(NULL, NULL, 0), -EINVAL);
}

Test(client_args, create_missing_conf_is_enoent)
{
	struct atoll_cluster *c;

	cr_assert_eq(atoll_cluster_create(&c, "/nonexistent/atoll.conf", 0), -ENOENT);
}

Test(client_args, create_malformed_conf_is_einval)
{
	char path[] = "/tmp/atoll-client-test-XXXXXX";
	struct atoll_cluster *c;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "[global\nmon_host = x\n", 21), 21);
	close(fd);
	cr_assert_eq(atoll_cluster_create(&c, path, 0), -EINVAL);
	unlink(path);
}

Test(client_args, create_reads_client_timeouts)
{
	char path[] = "/tmp/atoll-client-test-XXXXXX";
	const char *text = "[client]\nclient_op_timeout = 7s\nclient_mount_timeout = 250ms\n";
	struct atoll_cluster *c;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(atoll_cluster_create(&c, path, 0), 0);
	cr_assert_eq(c->op_timeout_ms, 7000);
	cr_assert_eq(c->mount_timeout_ms, 250);
	atoll_cluster_shutdown(c);
	unlink(path);
}

Test(client_args, set_refuses_unknown_keys_and_bad_values)
{
	cr_assert_eq(atoll_cluster_set(cl, "no_such_option", "1"), -EINVAL);
	cr_assert_eq(atoll_cluster_set(cl, "client_op_timeout", "soon"), -EINVAL);
	cr_assert_eq(atoll_cluster_set(cl, "mon_host", "not an address"), -EINVAL);
	cr_assert_eq(atoll_cluster_set(cl, "client_inflight_ops", "0"), -EINVAL);
	cr_assert_eq(atoll_cluster_set(NULL, "mon_host", "127.0.0.1:1"), -EINVAL);
	cr_assert_eq(atoll_cluster_set(cl, NULL, "1"), -EINVAL);
}

Test(client_args, set_applies_good_values)
{
	cr_assert_eq(atoll_cluster_set(cl, "client_op_timeout", "1500ms"), 0);
	cr_assert_eq(cl->op_timeout_ms, 1500);
	cr_assert_eq(atoll_cluster_set(cl, "client-mount-timeout", "2s"), 0);
	cr_assert_eq(cl->mount_timeout_ms, 2000);
	cr_assert_eq(atoll_cluster_set(cl, "mon_host", "127.0.0.1:6790"), 0);
	cr_assert_eq(atoll_cluster_set(cl, "client_inflight_bytes", "16M"), 0);
	cr_assert_eq(cl->throttle_bytes, 16u << 20);
}

Test(client_args, connect_refused_when_nobody_listens)
{
	/* port 1 on loopback: nothing listens there */
	cr_assert_eq(atoll_cluster_set(cl, "mon_host", "127.0.0.1:1"), 0);
	cr_assert_eq(atoll_cluster_set(cl, "client_mount_timeout", "300ms"), 0);
	int r = atoll_cluster_connect(cl);
	cr_assert(r == -ECONNREFUSED || r == -ETIMEDOUT, "connect returned %d", r);
	cr_assert_eq(atoll_cluster_epoch(cl), 0);
}

Test(client_args, unconnected_handle_refuses_cluster_calls)
{
	char fsid[37], *out = (void *)1;
	struct atoll_ioctx *x = (void *)1;
	size_t len = 1;

	cr_assert_eq(atoll_cluster_fsid(cl, fsid), -ENOTCONN);
	cr_assert_eq(atoll_mon_command(cl, "{\"prefix\": \"status\"}", NULL, &out, &len),
		     -ENOTCONN);
	cr_assert_null(out);
	cr_assert_eq(len, 0);
	cr_assert_eq(atoll_ioctx_create(cl, "rbd", &x, 0), -ENOTCONN);
	cr_assert_null(x);
	cr_assert_eq(atoll_pool_lookup(cl, "rbd"), -ENOTCONN);
	cr_assert_eq(atoll_pool_list(cl, NULL, 0), -ENOTCONN);
	cr_assert_eq(atoll_cluster_epoch(cl), 0);
	cr_assert_neq(atoll_cluster_id(cl) + 1, 0);	/* callable */
}

Test(client_args, null_handles_are_refused_or_ignored)
{
	char fsid[37];

	atoll_cluster_shutdown(NULL);
	atoll_ioctx_destroy(NULL);
	atoll_completion_release(NULL);
	atoll_kv_iter_free(NULL);
	atoll_list_close(NULL);
	atoll_op_release(NULL);
	atoll_free(NULL);
	cr_assert_eq(atoll_cluster_connect(NULL), -EINVAL);
	cr_assert_eq(atoll_cluster_fsid(NULL, fsid), -EINVAL);
	cr_assert_eq(atoll_cluster_id(NULL), 0);
	cr_assert_eq(atoll_cluster_epoch(NULL), 0);
	cr_assert_eq(atoll_cluster_wait_for_latest_map(NULL), -EINVAL);
	cr_assert_eq(atoll_mon_command(NULL, "{}", NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(atoll_pool_create(NULL, "p", NULL), -EINVAL);
	cr_assert_eq(atoll_pool_delete(NULL, "p"), -EINVAL);
	cr_assert_eq(atoll_write(NULL, "o", dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_read(NULL, "o", dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_remove(NULL, "o", 0), -EINVAL);
	cr_assert_eq(atoll_op_operate(NULL, io, "o", 0), -EINVAL);
	cr_assert_eq(atoll_list_next(NULL, NULL), -EINVAL);
	cr_assert_eq(atoll_kv_iter_next(NULL, NULL, NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(atoll_kv_iter_count(NULL), 0);
	cr_assert_eq(atoll_completion_wait(NULL), -EINVAL);
	/* builders on a NULL op do nothing */
	atoll_op_write(NULL, dummy, 1, 0);
	atoll_op_assert_exists(NULL);
}

/* ---- object names and sizes ---- */

Test(client_args, empty_or_null_names_are_einval)
{
	cr_assert_eq(atoll_write(io, "", dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_write(io, NULL, dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_read(io, "", dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_stat(io, "", NULL, NULL, 0), -EINVAL);
	cr_assert_eq(atoll_setxattr(io, "", "a", "v", 1, 0), -EINVAL);
	cr_assert_eq(atoll_omap_clear(io, "", 0), -EINVAL);
}

Test(client_args, names_over_400_bytes_are_enametoolong)
{
	char *ok = name_of(400), *bad = name_of(401);

	cr_assert_eq(atoll_write(io, bad, dummy, 1, 0, 0), -ENAMETOOLONG);
	cr_assert_eq(atoll_remove(io, bad, 0), -ENAMETOOLONG);
	/* 400 bytes pass every check; only the missing connection is left */
	cr_assert_eq(atoll_write(io, ok, dummy, 1, 0, 0), -ENOTCONN);
	free(ok);
	free(bad);
}

Test(client_args, payload_over_64mib_is_e2big)
{
	cr_assert_eq(atoll_write_full(io, "o", dummy, (64u << 20) + 1, 0), -E2BIG);
	cr_assert_eq(atoll_write_full(io, "o", dummy, 64u << 20, 0), -ENOTCONN);
	cr_assert_eq(atoll_read(io, "o", dummy, (64u << 20) + 1, 0, 0), -E2BIG);
	cr_assert_eq(atoll_setxattr(io, "o", "a", dummy, (64u << 20) + 1, 0), -E2BIG);
}

Test(client_args, object_over_128mib_is_efbig)
{
	uint64_t max = 128ull << 20;

	cr_assert_eq(atoll_write(io, "o", dummy, 2, max - 1, 0), -EFBIG);
	cr_assert_eq(atoll_write(io, "o", dummy, 1, max - 1, 0), -ENOTCONN);
	cr_assert_eq(atoll_write(io, "o", dummy, 1, UINT64_MAX, 0), -EFBIG);
	cr_assert_eq(atoll_truncate(io, "o", max + 1, 0), -EFBIG);
	cr_assert_eq(atoll_truncate(io, "o", max, 0), -ENOTCONN);
}

Test(client_args, null_buffers_are_einval)
{
	cr_assert_eq(atoll_write(io, "o", NULL, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_write(io, "o", NULL, 0, 0, 0), -ENOTCONN);
	cr_assert_eq(atoll_read(io, "o", NULL, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_getxattr(io, "o", "a", NULL, 1, 0), -EINVAL);
}

Test(client_args, xattr_names_are_checked)
{
	char *ok = name_of(255), *bad = name_of(256);

	cr_assert_eq(atoll_setxattr(io, "o", "", "v", 1, 0), -EINVAL);
	cr_assert_eq(atoll_setxattr(io, "o", NULL, "v", 1, 0), -EINVAL);
	cr_assert_eq(atoll_setxattr(io, "o", bad, "v", 1, 0), -ENAMETOOLONG);
	cr_assert_eq(atoll_rmxattr(io, "o", bad, 0), -ENAMETOOLONG);
	cr_assert_eq(atoll_getxattr(io, "o", bad, dummy, 1, 0), -ENAMETOOLONG);
	cr_assert_eq(atoll_setxattr(io, "o", ok, "v", 1, 0), -ENOTCONN);
	free(ok);
	free(bad);
}

Test(client_args, omap_limits)
{
	struct atoll_kv *kv = calloc(10001, sizeof(*kv));
	char *longkey = name_of(401);
	struct atoll_kv_iter *it = (void *)1;
	int more;

	for (size_t i = 0; i < 10001; i++)
		kv[i] = (struct atoll_kv){ "k", 1, "v", 1 };
	cr_assert_eq(atoll_omap_set(io, "o", kv, 10001, 0), -E2BIG);
	cr_assert_eq(atoll_omap_set(io, "o", kv, 10000, 0), -ENOTCONN);
	cr_assert_eq(atoll_omap_rm(io, "o", kv, 10001, 0), -E2BIG);
	cr_assert_eq(atoll_omap_get(io, "o", kv, 10001, &it, 0), -E2BIG);
	cr_assert_null(it);
	kv[0].klen = 0;
	cr_assert_eq(atoll_omap_set(io, "o", kv, 1, 0), -EINVAL);
	kv[0] = (struct atoll_kv){ longkey, 401, "v", 1 };
	cr_assert_eq(atoll_omap_set(io, "o", kv, 1, 0), -ENAMETOOLONG);
	cr_assert_eq(atoll_omap_set(io, "o", NULL, 1, 0), -EINVAL);
	cr_assert_eq(atoll_omap_list(io, "o", NULL, 1, 0, &it, &more, 0), -EINVAL);
	cr_assert_eq(atoll_omap_list(io, "o", NULL, 0, 0, NULL, &more, 0), -EINVAL);
	free(longkey);
	free(kv);
}

/* ---- completions ---- */

Test(client_args, completion_is_used_once)
{
	struct atoll_completion *comp;

	cr_assert_eq(atoll_completion_create(NULL, NULL, NULL, &comp), 0);
	/* never issued: waiting must not hang */
	cr_assert_eq(atoll_completion_wait(comp), -EINVAL);
	cr_assert_eq(atoll_completion_is_complete(comp), 0);
	cr_assert_eq(atoll_completion_return(comp), -EINPROGRESS);
	cr_assert_eq(atoll_completion_version(comp), 0);
	/* refused at once: the completion stays unused */
	cr_assert_eq(atoll_aio_write(io, "", comp, dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_aio_write(io, "o", NULL, dummy, 1, 0, 0), -EINVAL);
	cr_assert_eq(atoll_completion_create(NULL, NULL, NULL, NULL), -EINVAL);
	atoll_completion_release(comp);
}

static int finish_calls;

static void finish_cb(struct atoll_completion *cp, void *arg)
{
	finish_calls++;
	cr_assert_eq(atoll_completion_return(cp), 42);
	cr_assert_eq(arg, &finish_calls);
}

Test(client_args, completion_finish_runs_callback_once)
{
	struct atoll_completion *comp;

	cr_assert_eq(atoll_completion_create(finish_cb, &finish_calls, NULL, &comp), 0);
	cr_assert_eq(client_completion_take(comp), 0);
	cr_assert_eq(client_completion_take(comp), -EINVAL);
	client_completion_finish(comp, 42, 7);
	cr_assert_eq(finish_calls, 1);
	cr_assert_eq(atoll_completion_wait(comp), 42);
	cr_assert_eq(atoll_completion_version(comp), 7);
	atoll_completion_release(comp);
}

/* ---- compound ops ---- */

Test(client_args, operate_refuses_flags_and_empty_ops)
{
	struct atoll_op *op = atoll_op_create(0);

	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -EINVAL);	/* empty */
	atoll_op_assert_exists(op);
	cr_assert_eq(atoll_op_operate(op, io, "o", 1), -EINVAL);
	cr_assert_eq(atoll_op_operate(op, io, "", 0), -EINVAL);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -ENOTCONN);
	atoll_op_release(op);
}

Test(client_args, mixing_reads_and_changes_is_einval)
{
	struct atoll_op *op = atoll_op_create(0);
	uint64_t size;

	atoll_op_cmpxattr(op, "a", ATOLL_CMP_EQ, "x", 1);
	atoll_op_write_full(op, dummy, 4);
	atoll_op_stat(op, &size, NULL, NULL);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -EINVAL);
	atoll_op_release(op);

	/* guards mix with either kind */
	op = atoll_op_create(0);
	atoll_op_assert_version(op, 3);
	atoll_op_create_object(op, 1);
	atoll_op_setxattr(op, "a", "b", 1);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -ENOTCONN);
	atoll_op_release(op);
}

Test(client_args, builder_errors_are_kept_for_operate)
{
	struct atoll_op *op = atoll_op_create(0);

	atoll_op_setxattr(op, "", "v", 1);	/* the first error wins */
	atoll_op_write(op, dummy, 2, (128ull << 20) - 1);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -EINVAL);
	atoll_op_release(op);

	op = atoll_op_create(0);
	atoll_op_cmpxattr(op, "a", (enum atoll_cmp)99, "v", 1);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -EINVAL);
	atoll_op_release(op);
}

Test(client_args, more_than_64_steps_is_e2big)
{
	struct atoll_op *op = atoll_op_create(0);

	for (int i = 0; i < 64; i++)
		atoll_op_assert_exists(op);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -ENOTCONN);
	atoll_op_assert_exists(op);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -E2BIG);
	atoll_op_release(op);
}

Test(client_args, compound_payload_is_summed)
{
	struct atoll_op *op = atoll_op_create(0);

	atoll_op_write(op, dummy, 40u << 20, 0);
	atoll_op_write(op, dummy, 40u << 20, 40u << 20);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -E2BIG);
	atoll_op_release(op);
}

Test(client_args, kv_entries_are_summed_across_steps)
{
	struct atoll_kv *kv = calloc(6000, sizeof(*kv));
	struct atoll_op *op = atoll_op_create(0);

	for (size_t i = 0; i < 6000; i++)
		kv[i] = (struct atoll_kv){ "k", 1, "v", 1 };
	atoll_op_omap_set(op, kv, 6000);
	atoll_op_omap_rm(op, kv, 6000);
	cr_assert_eq(atoll_op_operate(op, io, "o", 0), -E2BIG);
	atoll_op_release(op);
	free(kv);
}

Test(client_args, pool_names_are_checked)
{
	char *bad = name_of(64);

	cr_assert_eq(atoll_pool_create(cl, "", NULL), -EINVAL);
	cr_assert_eq(atoll_pool_create(cl, NULL, NULL), -EINVAL);
	cr_assert_eq(atoll_pool_create(cl, bad, NULL), -ENAMETOOLONG);
	cr_assert_eq(atoll_pool_delete(cl, ""), -EINVAL);
	free(bad);
}

Test(client_args, pool_options_are_checked)
{
	struct atoll_pool_options o = { .size_of = sizeof(o), .size = 11 };

	cr_assert_eq(atoll_pool_create(cl, "p", &o), -EINVAL);
	o.size = 3;
	o.failure_domain = "rack";
	cr_assert_eq(atoll_pool_create(cl, "p", &o), -EINVAL);
	o.failure_domain = NULL;
	o.size_of = 0;
	cr_assert_eq(atoll_pool_create(cl, "p", &o), -EINVAL);
	/* valid options: refused only for want of a connection */
	o.size_of = sizeof(o);
	cr_assert_eq(atoll_pool_create(cl, "p", &o), -ENOTCONN);
}

/* ---- flags: every object call refuses a bit it does not know ---- */

/* call (an expression using the unsigned f) gives -EINVAL for each of the
 * 32 bits alone, with a message naming name, and want with f = 0 (the
 * same arguments pass every other check). */
#define CHECK_FLAGS(name, want, call) do { \
	unsigned f; \
	for (int b_ = 0; b_ < 32; b_++) { \
		f = 1u << b_; \
		cr_assert_eq((call), -EINVAL, "%s with flags 0x%x", name, f); \
		cr_assert(strstr(atoll_last_error(), name) && \
			  strstr(atoll_last_error(), "unknown flags"), \
			  "%s: last error '%s'", name, atoll_last_error()); \
	} \
	f = 0; \
	cr_assert_eq((call), (want), "%s with flags 0", name); \
} while (0)

/* An aio call refused for its flags leaves the completion unused. */
#define CHECK_AIO_FLAGS(name, call) do { \
	struct atoll_completion *comp; \
	cr_assert_eq(atoll_completion_create(NULL, NULL, NULL, &comp), 0); \
	CHECK_FLAGS(name, -ENOTCONN, call); \
	cr_assert_eq(atoll_completion_wait(comp), -EINVAL); \
	atoll_completion_release(comp); \
} while (0)

Test(client_args, unknown_flags_are_einval_on_every_aio_call)
{
	uint64_t size, mtime;

	CHECK_AIO_FLAGS("atoll_aio_write", atoll_aio_write(io, "o", comp, dummy, 1, 0, f));
	CHECK_AIO_FLAGS("atoll_aio_write_full",
			atoll_aio_write_full(io, "o", comp, dummy, 1, f));
	CHECK_AIO_FLAGS("atoll_aio_append", atoll_aio_append(io, "o", comp, dummy, 1, f));
	CHECK_AIO_FLAGS("atoll_aio_read", atoll_aio_read(io, "o", comp, dummy, 1, 0, f));
	CHECK_AIO_FLAGS("atoll_aio_stat", atoll_aio_stat(io, "o", comp, &size, &mtime, f));
	CHECK_AIO_FLAGS("atoll_aio_remove", atoll_aio_remove(io, "o", comp, f));
	CHECK_AIO_FLAGS("atoll_aio_truncate", atoll_aio_truncate(io, "o", comp, 1, f));
}

Test(client_args, unknown_flags_are_einval_on_every_sync_call)
{
	struct atoll_kv kv = { "k", 1, "v", 1 };
	struct atoll_kv_iter *it;
	uint64_t size, mtime;
	int more;

	CHECK_FLAGS("atoll_write", -ENOTCONN, atoll_write(io, "o", dummy, 1, 0, f));
	CHECK_FLAGS("atoll_write_full", -ENOTCONN, atoll_write_full(io, "o", dummy, 1, f));
	CHECK_FLAGS("atoll_append", -ENOTCONN, atoll_append(io, "o", dummy, 1, f));
	CHECK_FLAGS("atoll_read", -ENOTCONN, atoll_read(io, "o", dummy, 1, 0, f));
	CHECK_FLAGS("atoll_stat", -ENOTCONN, atoll_stat(io, "o", &size, &mtime, f));
	CHECK_FLAGS("atoll_remove", -ENOTCONN, atoll_remove(io, "o", f));
	CHECK_FLAGS("atoll_truncate", -ENOTCONN, atoll_truncate(io, "o", 1, f));
	CHECK_FLAGS("atoll_getxattr", -ENOTCONN, atoll_getxattr(io, "o", "a", dummy, 1, f));
	CHECK_FLAGS("atoll_setxattr", -ENOTCONN, atoll_setxattr(io, "o", "a", "v", 1, f));
	CHECK_FLAGS("atoll_rmxattr", -ENOTCONN, atoll_rmxattr(io, "o", "a", f));
	CHECK_FLAGS("atoll_getxattrs", -ENOTCONN, atoll_getxattrs(io, "o", &it, f));
	CHECK_FLAGS("atoll_omap_set", -ENOTCONN, atoll_omap_set(io, "o", &kv, 1, f));
	CHECK_FLAGS("atoll_omap_get", -ENOTCONN, atoll_omap_get(io, "o", &kv, 1, &it, f));
	CHECK_FLAGS("atoll_omap_list", -ENOTCONN,
		    atoll_omap_list(io, "o", NULL, 0, 0, &it, &more, f));
	CHECK_FLAGS("atoll_omap_rm", -ENOTCONN, atoll_omap_rm(io, "o", &kv, 1, f));
	CHECK_FLAGS("atoll_omap_clear", -ENOTCONN, atoll_omap_clear(io, "o", f));
}

Test(client_args, unknown_flags_are_einval_on_handles_and_ops)
{
	struct atoll_ioctx *x;
	struct atoll_list *l;
	struct atoll_cluster *c;
	struct atoll_op *op;

	CHECK_FLAGS("atoll_ioctx_create", -ENOTCONN, atoll_ioctx_create(cl, "rbd", &x, f));
	CHECK_FLAGS("atoll_list_open", -ENOTCONN, atoll_list_open(io, &l, f));
	CHECK_FLAGS("atoll_cluster_create", 0, atoll_cluster_create(&c, NULL, f));
	atoll_cluster_shutdown(c);
	for (int b = 0; b < 32; b++) {
		errno = 0;
		cr_assert_null(atoll_op_create(1u << b), "atoll_op_create flags bit %d", b);
		cr_assert_eq(errno, EINVAL);
		cr_assert(strstr(atoll_last_error(), "atoll_op_create"));
	}
	op = atoll_op_create(0);
	cr_assert_not_null(op);
	atoll_op_assert_exists(op);
	for (int b = 0; b < 32; b++)
		cr_assert_eq(atoll_op_operate(op, io, "o", 1u << b), -EINVAL);
	atoll_op_release(op);
}

/* ---- atoll_last_error() ---- */

static char *write_conf(const char *text)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/atoll-client-test-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

Test(client_args, last_error_names_the_config_file_and_line)
{
	char *path = write_conf("[global]\nmon_host = 127.0.0.1:6789\n[client\n");
	struct atoll_cluster *c;
	char line[32];

	cr_assert_eq(atoll_cluster_create(&c, path, 0), -EINVAL);
	cr_assert(strstr(atoll_last_error(), path), "'%s'", atoll_last_error());
	snprintf(line, sizeof(line), "line 3");
	cr_assert(strstr(atoll_last_error(), line), "'%s'", atoll_last_error());
	unlink(path);
}

Test(client_args, last_error_names_a_bad_option)
{
	char *path = write_conf("[client]\nclient_op_timeout = soon\n");
	struct atoll_cluster *c;

	cr_assert_eq(atoll_cluster_create(&c, path, 0), -EINVAL);
	cr_assert(strstr(atoll_last_error(), "client_op_timeout") &&
		  strstr(atoll_last_error(), "soon"), "'%s'", atoll_last_error());
	unlink(path);
	cr_assert_eq(atoll_cluster_create(&c, "/nonexistent/atoll.conf", 0), -ENOENT);
	cr_assert(strstr(atoll_last_error(), "/nonexistent/atoll.conf"), "'%s'",
		  atoll_last_error());
	cr_assert_eq(atoll_cluster_set(cl, "no_such_option", "1"), -EINVAL);
	cr_assert(strstr(atoll_last_error(), "no_such_option"), "'%s'", atoll_last_error());
	cr_assert_eq(atoll_cluster_set(cl, "mon_host", "not an address"), -EINVAL);
	cr_assert(strstr(atoll_last_error(), "not an address"), "'%s'", atoll_last_error());
}

Test(client_args, last_error_names_the_monitor_that_refused)
{
	cr_assert_eq(atoll_cluster_set(cl, "mon_host", "127.0.0.1:1"), 0);
	cr_assert_eq(atoll_cluster_set(cl, "client_mount_timeout", "300ms"), 0);
	cr_assert_lt(atoll_cluster_connect(cl), 0);
	cr_assert(strstr(atoll_last_error(), "127.0.0.1:1"), "'%s'", atoll_last_error());
}

static void *fail_on_other_thread(void *arg)
{
	char *seen = arg;

	/* a new thread starts with no error */
	snprintf(seen, 256, "%s", atoll_last_error());
	cr_assert_eq(atoll_cluster_set(cl, "other_thread_option", "1"), -EINVAL);
	cr_assert(strstr(atoll_last_error(), "other_thread_option"));
	return NULL;
}

Test(client_args, last_error_is_thread_local)
{
	char seen[256] = "unset";
	pthread_t t;

	cr_assert_eq(atoll_cluster_set(cl, "main_thread_option", "1"), -EINVAL);
	cr_assert_eq(pthread_create(&t, NULL, fail_on_other_thread, seen), 0);
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_assert_str_empty(seen);
	cr_assert(strstr(atoll_last_error(), "main_thread_option"), "'%s'", atoll_last_error());
	cr_assert_null(strstr(atoll_last_error(), "other_thread_option"));
	/* a successful call leaves it as it was */
	cr_assert_eq(atoll_cluster_set(cl, "client_op_timeout", "1s"), 0);
	cr_assert(strstr(atoll_last_error(), "main_thread_option"));
}

/* ---- the completion's free function, and the shutdown rule ---- */

static int free_calls, cb_calls_before_free;

static void count_cb(struct atoll_completion *cp, void *arg)
{
	cr_assert_eq(free_calls, 0);	/* the user data is still there */
	cb_calls_before_free++;
}

static void count_free(void *arg)
{
	cr_assert_eq(arg, &free_calls);
	free_calls++;
}

Test(client_args, completion_frees_user_data_once_after_the_callback)
{
	struct atoll_completion *comp;

	/* never issued: freed at release */
	free_calls = cb_calls_before_free = 0;
	cr_assert_eq(atoll_completion_create(count_cb, &free_calls, count_free, &comp), 0);
	atoll_completion_release(comp);
	cr_assert_eq(free_calls, 1);

	/* released by the caller before the op finished: freed after the
	 * callback, once */
	free_calls = cb_calls_before_free = 0;
	cr_assert_eq(atoll_completion_create(count_cb, &free_calls, count_free, &comp), 0);
	cr_assert_eq(atoll_completion_begin(comp), 0);
	cr_assert_eq(atoll_completion_begin(comp), -EINVAL);
	atoll_completion_release(comp);
	cr_assert_eq(free_calls, 0);
	atoll_completion_finish(comp, 0, 0);
	cr_assert_eq(cb_calls_before_free, 1);
	cr_assert_eq(free_calls, 1);
}

Test(client_args, ops_issued_during_shutdown_are_refused_with_eshutdown)
{
	struct atoll_completion *comp;

	/* white box: the state atoll_cluster_shutdown puts the handle in
	 * before it fails what is in flight */
	cl->connected = true;
	cl->shutting_down = true;
	free_calls = cb_calls_before_free = 0;
	cr_assert_eq(atoll_completion_create(count_cb, &free_calls, count_free, &comp), 0);
	cr_assert_eq(atoll_aio_write(io, "o", comp, dummy, 1, 0, 0), -ESHUTDOWN);
	cr_assert(strstr(atoll_last_error(), "shutting down"), "'%s'", atoll_last_error());
	/* refused at once: the completion never fires and stays usable */
	cr_assert_eq(atoll_completion_is_complete(comp), 0);
	cr_assert_eq(atoll_completion_wait(comp), -EINVAL);
	cr_assert_eq(atoll_write(io, "o", dummy, 1, 0, 0), -ESHUTDOWN);
	cl->connected = false;
	cl->shutting_down = false;
	cr_assert_eq(atoll_aio_write(io, "o", comp, dummy, 1, 0, 0), -ENOTCONN);
	atoll_completion_release(comp);
	cr_assert_eq(cb_calls_before_free, 0);
	cr_assert_eq(free_calls, 1);
}
