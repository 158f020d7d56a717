/*
 * test_mon_pools.c - pool commands and the command convention of a real
 * atoll-mon: create/ls/get/set/rm, their refusals, and the default
 * failure domain.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct mh h;

static void setup(void)
{
	static const char *sets[] = { "osd_pool_default_pg_num=8", NULL };

	mh_init(&h, sets);
	mh_start(&h);
}

static void teardown(void)
{
	mh_free(&h);
}

TestSuite(mon_pools, .init = setup, .fini = teardown, .timeout = 60);

static cJSON *cmd_json(const char *json, int want_rc)
{
	char *out = NULL, *st = NULL;
	int rc = mh_cmd(&h, json, &st, &out);
	cJSON *j;

	cr_assert_eq(rc, want_rc, "%s: rc %d (%s), wanted %d", json, rc, st, want_rc);
	j = cJSON_Parse(out);
	free(out);
	free(st);
	return j;
}

Test(mon_pools, create_ls_rm)
{
	cJSON *j, *p;
	char *st = NULL;

	j = cmd_json("{\"prefix\":\"pool create\",\"name\":\"rbd\",\"size\":2,"
		     "\"format\":\"json\"}", 0);
	cr_assert(j);
	cr_assert_eq(cJSON_GetObjectItem(j, "pool")->valueint, 1);
	cr_assert_eq(cJSON_GetObjectItem(j, "epoch")->valueint, 2);
	cJSON_Delete(j);

	j = cmd_json("{\"prefix\":\"pool ls\",\"format\":\"json\"}", 0);
	cr_assert(cJSON_IsArray(j));
	cr_assert_eq(cJSON_GetArraySize(j), 1);
	p = cJSON_GetArrayItem(j, 0);
	cr_assert_str_eq(cJSON_GetObjectItem(p, "name")->valuestring, "rbd");
	cr_assert_eq(cJSON_GetObjectItem(p, "size")->valueint, 2);
	cr_assert_eq(cJSON_GetObjectItem(p, "min_size")->valueint, 1);
	cr_assert_eq(cJSON_GetObjectItem(p, "pg_num")->valueint, 8);
	cr_assert_str_eq(cJSON_GetObjectItem(p, "failure_domain")->valuestring, "host");
	cJSON_Delete(j);

	/* without the confirmation: refused, pool still there */
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool rm\",\"name\":\"rbd\"}", &st, NULL),
		     -EPERM);
	cr_assert(strstr(st, "--yes-i-really-mean-it"), "status: %s", st);
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool rm\",\"name\":\"rbd\","
			    "\"confirm_name\":\"rb\",\"yes\":true}", NULL, NULL), -EPERM);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool rm\",\"name\":\"rbd\","
			    "\"confirm_name\":\"rbd\",\"yes\":true}", NULL, NULL), 0);
	j = cmd_json("{\"prefix\":\"pool ls\",\"format\":\"json\"}", 0);
	cr_assert_eq(cJSON_GetArraySize(j), 0);
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool rm\",\"name\":\"rbd\","
			    "\"confirm_name\":\"rbd\",\"yes\":true}", NULL, NULL), -ENOENT);
}

Test(mon_pools, create_refuses_duplicates_and_bad_args)
{
	char *st = NULL;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"a\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"a\"}", &st, NULL),
		     -EEXIST);
	cr_assert(strstr(st, "'a' already exists"), "status: %s", st);
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"b c\"}", NULL, NULL),
		     -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"b\",\"size\":11}",
			    NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"b\",\"size\":2,"
			    "\"min_size\":3}", NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"b\","
			    "\"failure_domain\":\"rack\"}", NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\"}", &st, NULL), -EINVAL);
	cr_assert(strstr(st, "'name'"), "status: %s", st);
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"no such\"}", NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "not json", NULL, NULL), -EINVAL);
}

Test(mon_pools, get_and_set)
{
	cJSON *j;
	char *st = NULL, *out = NULL;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\",\"size\":3}",
			    NULL, NULL), 0);
	j = cmd_json("{\"prefix\":\"pool get\",\"name\":\"p\",\"format\":\"json\"}", 0);
	cr_assert_eq(cJSON_GetObjectItem(j, "size")->valueint, 3);
	cr_assert_eq(cJSON_GetObjectItem(j, "min_size")->valueint, 2);
	cr_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "compress")));
	cJSON_Delete(j);

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool set\",\"name\":\"p\",\"var\":\"size\","
			    "\"val\":\"2\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool set\",\"name\":\"p\",\"var\":\"compress\","
			    "\"val\":\"true\"}", NULL, NULL), 0);
	j = cmd_json("{\"prefix\":\"pool get\",\"name\":\"p\",\"var\":\"size\","
		     "\"format\":\"json\"}", 0);
	cr_assert_eq(cJSON_GetObjectItem(j, "size")->valueint, 2);
	cr_assert_null(cJSON_GetObjectItem(j, "min_size"));
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool get\",\"name\":\"p\",\"var\":\"compress\"}",
			    NULL, &out), 0);
	cr_assert_str_eq(out, "compress: true\n");
	free(out);

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool set\",\"name\":\"p\",\"var\":\"pg_num\","
			    "\"val\":\"128\"}", &st, NULL), -EOPNOTSUPP);
	cr_assert_str_eq(st, "changing pg_num of an existing pool is not supported yet");
	free(st);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool set\",\"name\":\"p\",\"var\":\"min_size\","
			    "\"val\":\"3\"}", NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool set\",\"name\":\"p\",\"var\":\"colour\","
			    "\"val\":\"3\"}", NULL, NULL), -EINVAL);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool get\",\"name\":\"nope\"}", &st, NULL),
		     -ENOENT);
	cr_assert(strstr(st, "pool 'nope' does not exist"), "status: %s", st);
	free(st);
}

Test(mon_pools, plain_text_output)
{
	char *out = NULL;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"x\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool ls\"}", NULL, &out), 0);
	cr_assert_str_eq(out, "x\n");
	free(out);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"status\"}", NULL, &out), 0);
	cr_assert(strstr(out, "health:"), "%s", out);
	cr_assert(strstr(out, "1 pools, 8 pgs"), "%s", out);
	free(out);
}

Test(mon_pools, default_failure_domain_osd_on_one_host)
{
	uint8_t u[16];
	int32_t id;
	cJSON *j;

	for (int i = 0; i < 2; i++) {
		mh_uuid(u, (uint8_t)i);
		cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
		cr_assert_eq(mh_osd_boot(&h, id, u, "127.0.0.2:6800", "only", NULL, NULL, 0), 0);
	}
	j = cmd_json("{\"prefix\":\"pool create\",\"name\":\"one\",\"format\":\"json\"}", 0);
	cr_assert_str_eq(cJSON_GetObjectItem(j, "failure_domain")->valuestring, "osd");
	cJSON_Delete(j);
	/* an explicit failure domain is never changed */
	j = cmd_json("{\"prefix\":\"pool create\",\"name\":\"two\",\"failure_domain\":"
		     "\"host\",\"format\":\"json\"}", 0);
	cr_assert_str_eq(cJSON_GetObjectItem(j, "failure_domain")->valuestring, "host");
	cJSON_Delete(j);
	/* a second host: host again */
	mh_uuid(u, 9);
	cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
	cr_assert_eq(mh_osd_boot(&h, id, u, "127.0.0.3:6800", "other", NULL, NULL, 0), 0);
	j = cmd_json("{\"prefix\":\"pool create\",\"name\":\"three\",\"format\":\"json\"}", 0);
	cr_assert_str_eq(cJSON_GetObjectItem(j, "failure_domain")->valuestring, "host");
	cJSON_Delete(j);
}
