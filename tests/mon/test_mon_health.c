/*
 * test_mon_health.c - health codes, status, df and pg ls of a real
 * atoll-mon fed with beacons the way OSDs send them.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static struct mh h;

static void setup(void)
{
	static const char *sets[] = { "osd_pool_default_pg_num=4", NULL };

	mh_init(&h, sets);
	mh_start(&h);
}

static void teardown(void)
{
	mh_free(&h);
}

TestSuite(mon_health, .init = setup, .fini = teardown, .timeout = 60);

static cJSON *health(void)
{
	char *out = NULL;
	cJSON *j;

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"health\",\"detail\":true,\"format\":\"json\"}",
			    NULL, &out), 0);
	j = cJSON_Parse(out);
	cr_assert(j, "health is not JSON: %s", out);
	free(out);
	return j;
}

static cJSON *check(cJSON *hj, const char *code)
{
	cJSON *c;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(hj, "checks"))
		if (!strcmp(cJSON_GetObjectItem(c, "code")->valuestring, code))
			return c;
	return NULL;
}

static const char *status(cJSON *hj)
{
	return cJSON_GetObjectItem(hj, "status")->valuestring;
}

static void add_osds(int n, int hosts)
{
	for (int i = 0; i < n; i++) {
		uint8_t u[16];
		int32_t id;
		char host[16], addr[32];

		mh_uuid(u, (uint8_t)i);
		cr_assert_eq(mh_osd_new(&h, u, -1, &id), 0);
		snprintf(host, sizeof(host), "host%d", i % hosts);
		snprintf(addr, sizeof(addr), "127.0.0.%d:6800", 2 + i);
		cr_assert_eq(mh_osd_boot(&h, id, u, addr, host, NULL, NULL, 0), 0);
	}
}

/* One beacon from osd id reporting every PG of pool 1 it is given. */
static void beacon(int32_t id, uint64_t used, uint64_t errs, struct pg_stat *pgs,
		   uint32_t npg, struct slow_op *slow, uint32_t nslow)
{
	struct osd_beacon b;

	memset(&b, 0, sizeof(b));
	b.id = id;
	b.total = 1000 << 20;
	b.used = used;
	b.avail = b.total - used;
	b.store_errors = errs;
	b.pgs = pgs;
	b.npg = npg;
	b.slow = slow;
	b.nslow = nslow;
	mh_beacon(&h, &b);
}

static void clean_pgs(struct pg_stat *pgs, uint32_t n)
{
	memset(pgs, 0, n * sizeof(*pgs));
	for (uint32_t i = 0; i < n; i++) {
		pgs[i].pool = 1;
		pgs[i].pg = i;
		pgs[i].state = PG_ST_ACTIVE | PG_ST_CLEAN;
		pgs[i].objects = 10;
		pgs[i].bytes = 4096;
		pgs[i].nacting = 3;
		pgs[i].acting[0] = (int32_t)(i % 3);
		pgs[i].acting[1] = (int32_t)((i + 1) % 3);
		pgs[i].acting[2] = (int32_t)((i + 2) % 3);
	}
}

Test(mon_health, empty_cluster_is_ok)
{
	cJSON *j = health();

	cr_assert_str_eq(status(j), "HEALTH_OK");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "checks")), 0);
	cJSON_Delete(j);
}

Test(mon_health, undersized_and_no_redundancy)
{
	cJSON *j, *c;

	add_osds(2, 2);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"big\",\"size\":3}",
			    NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"thin\",\"size\":2,"
			    "\"min_size\":1}", NULL, NULL), 0);
	j = health();
	cr_assert_str_eq(status(j), "HEALTH_ERR");	/* unknown PGs: inactive */
	c = check(j, "POOL_UNDERSIZED");
	cr_assert(c, "no POOL_UNDERSIZED");
	cr_assert(strstr(cJSON_GetObjectItem(c, "fix")->valuestring, "1 more host"),
		  "fix: %s", cJSON_GetObjectItem(c, "fix")->valuestring);
	c = check(j, "POOL_NO_REDUNDANCY");
	cr_assert(c, "no POOL_NO_REDUNDANCY");
	cr_assert(strstr(cJSON_GetObjectItem(c, "fix")->valuestring,
			 "atoll pool set thin min_size 2"));
	c = check(j, "PG_NOT_CLEAN");
	cr_assert(c);
	cr_assert_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "states"), "unknown")->valueint, 8);
	cJSON_Delete(j);
}

Test(mon_health, clean_pgs_then_down_osd_and_noout)
{
	struct pg_stat pgs[4];
	cJSON *j, *c;
	char *out = NULL;

	add_osds(3, 3);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\"}", NULL, NULL), 0);
	clean_pgs(pgs, 4);
	for (int i = 0; i < 3; i++)
		beacon(i, 10 << 20, 0, i == 0 ? pgs : NULL, i == 0 ? 4 : 0, NULL, 0);
	usleep(200000);
	j = health();
	cr_assert_str_eq(status(j), "HEALTH_OK", "%s", cJSON_PrintUnformatted(j));
	cJSON_Delete(j);

	/* status, df, pg ls reflect the beacons */
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"df\",\"format\":\"json\"}", NULL, &out), 0);
	j = cJSON_Parse(out);
	free(out);
	cr_assert_eq((uint64_t)cJSON_GetObjectItem(j, "total")->valuedouble, 3000ull << 20);
	cr_assert_eq((uint64_t)cJSON_GetObjectItem(j, "used")->valuedouble, 30ull << 20);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "pools"), 0);
	cr_assert_eq(cJSON_GetObjectItem(c, "objects")->valueint, 40);
	cr_assert_eq(cJSON_GetObjectItem(c, "bytes")->valueint, 4 * 4096);
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg ls\",\"pool\":\"p\",\"format\":\"json\"}",
			    NULL, &out), 0);
	j = cJSON_Parse(out);
	free(out);
	cr_assert_eq(cJSON_GetArraySize(j), 4);
	c = cJSON_GetArrayItem(j, 1);
	cr_assert_str_eq(cJSON_GetObjectItem(c, "pgid")->valuestring, "1.1");
	cr_assert_str_eq(cJSON_GetObjectItem(c, "state")->valuestring, "active+clean");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "acting")), 3);
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg ls\",\"pool\":\"zz\"}", NULL, NULL), -ENOENT);

	/* an OSD stops: OSD_DOWN; its reported PGs go stale */
	cr_assert_eq(mh_osd_stopping(&h, 0, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", NULL, NULL), 0);
	j = health();
	c = check(j, "OSD_DOWN");
	cr_assert(c);
	cr_assert(strstr(cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItem(c, "detail"), 0)), "osd.0 on host 'host0' is down"));
	cr_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "doc")),
			 "doc/health-checks.md#osd_down");
	cr_assert(check(j, "OSDMAP_FLAGS"));
	c = check(j, "PG_NOT_CLEAN");
	cr_assert(c);
	cr_assert(strstr(cJSON_GetObjectItem(c, "summary")->valuestring, "stale"),
		  "%s", cJSON_GetObjectItem(c, "summary")->valuestring);
	cJSON_Delete(j);

	/* plain text: status line, then CODE: summary; fix */
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"health\"}", NULL, &out), 0);
	cr_assert(!strncmp(out, "HEALTH_", 7), "%s", out);
	cr_assert(strstr(out, "\nOSD_DOWN: "), "%s", out);
	cr_assert(strstr(out, "atoll osd unset noout"), "%s", out);
	free(out);
}

Test(mon_health, plain_detail_names_each_pg_and_its_reporter)
{
	struct pg_stat pgs[4];
	char *out = NULL;

	add_osds(3, 3);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\"}", NULL, NULL), 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"health\",\"detail\":true}", NULL, &out), 0);
	cr_assert(strstr(out, "\n    pg 1.0 is unknown\n"), "%s", out);
	cr_assert(strstr(out, "\n    pg 1.3 is unknown\n"), "%s", out);
	cr_assert(strstr(out, "\n    see: doc/health-checks.md#pg_not_clean\n"), "%s", out);
	cr_assert_null(strstr(out, "unknown0"), "%s", out);
	free(out);

	/* a reported PG names its state and the OSD that reported it */
	clean_pgs(pgs, 4);
	pgs[1].state = PG_ST_ACTIVE | PG_ST_DEGRADED;
	beacon(2, 10 << 20, 0, pgs, 4, NULL, 0);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"health\",\"detail\":true}", NULL, &out), 0);
	cr_assert(strstr(out, "\n    pg 1.1 is active+degraded, reported by osd.2\n"),
		  "%s", out);
	cr_assert_null(strstr(out, "pg 1.0 "), "a clean PG is listed: %s", out);
	cr_assert_null(strstr(out, "is unknown"), "%s", out);
	free(out);
}

Test(mon_health, full_osd_sets_the_map_flag_and_err)
{
	struct pg_stat pgs[4];
	cJSON *j, *c;
	char *out = NULL;

	add_osds(3, 3);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\"}", NULL, NULL), 0);
	clean_pgs(pgs, 4);
	beacon(0, 960 << 20, 0, pgs, 4, NULL, 0);	/* 96% */
	beacon(1, 870 << 20, 0, NULL, 0, NULL, 0);	/* 87% */
	beacon(2, 10 << 20, 0, NULL, 0, NULL, 0);
	usleep(200000);
	j = health();
	cr_assert_str_eq(status(j), "HEALTH_ERR");
	cr_assert(check(j, "OSD_FULL"));
	c = check(j, "OSD_NEARFULL");
	cr_assert(c);
	cr_assert_eq(cJSON_GetObjectItem(c, "count")->valueint, 1);
	cr_assert(check(j, "POOL_NEARFULL"));
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd dump\",\"format\":\"json\"}", NULL, &out), 0);
	cr_assert(strstr(out, "\"full\""), "no full state in the map: %s", out);
	free(out);

	/* space freed: the flag goes away */
	beacon(0, 10 << 20, 0, pgs, 4, NULL, 0);
	beacon(1, 10 << 20, 0, NULL, 0, NULL, 0);
	usleep(200000);
	j = health();
	cr_assert_str_eq(status(j), "HEALTH_OK", "%s", cJSON_PrintUnformatted(j));
	cJSON_Delete(j);
}

Test(mon_health, store_errors_and_slow_ops)
{
	struct pg_stat pgs[4];
	struct slow_op slow;
	cJSON *j, *c;
	const char *d;

	add_osds(3, 3);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\"}", NULL, NULL), 0);
	clean_pgs(pgs, 4);
	memset(&slow, 0, sizeof(slow));
	slow.pool = 1;
	slow.pg = 2;
	slow.age_ms = 42000;
	snprintf(slow.desc, sizeof(slow.desc), "write 'obj' from client.7");
	beacon(0, 1 << 20, 0, pgs, 4, NULL, 0);
	beacon(1, 1 << 20, 3, NULL, 0, NULL, 0);
	beacon(2, 1 << 20, 0, NULL, 0, &slow, 1);
	usleep(200000);
	j = health();
	c = check(j, "STORE_ERRORS");
	cr_assert(c);
	cr_assert(strstr(cJSON_GetStringValue(cJSON_GetArrayItem(
		cJSON_GetObjectItem(c, "detail"), 0)), "osd.1 reported 3"));
	c = check(j, "SLOW_OPS");
	cr_assert(c);
	d = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "detail"), 0));
	cr_assert(strstr(d, "write 'obj' from client.7") && strstr(d, "pg 1.2") &&
		  strstr(d, "osd.2"), "detail: %s", d);
	cJSON_Delete(j);
}

Test(mon_health, damaged_names_objects_degraded_tells_rate_and_pg_stat)
{
	struct pg_stat pgs[4];
	cJSON *j, *c;
	char *out = NULL;
	char *d;

	add_osds(3, 3);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pool create\",\"name\":\"p\"}", NULL, NULL), 0);
	clean_pgs(pgs, 4);
	pgs[2].state |= PG_ST_INCONSISTENT;
	pgs[2].scrub_errors = 3;
	pgs[2].nbad = 2;
	pgs[2].bad[0].osd = 1;
	pgs[2].bad[0].kind = 3;		/* read error */
	snprintf(pgs[2].bad[0].oid, sizeof(pgs[2].bad[0].oid), "obj-a");
	pgs[2].bad[1].osd = 2;
	pgs[2].bad[1].kind = 4;		/* differs */
	snprintf(pgs[2].bad[1].oid, sizeof(pgs[2].bad[1].oid), "obj-b");
	pgs[3].state = PG_ST_ACTIVE | PG_ST_DEGRADED | PG_ST_RECOVERING;
	pgs[3].degraded = 5;
	beacon(0, 10 << 20, 0, pgs, 4, NULL, 0);
	usleep(100000);
	pgs[3].recovered = 20;		/* 20 objects copied since */
	beacon(0, 10 << 20, 0, pgs, 4, NULL, 0);
	usleep(200000);

	j = health();
	cr_assert_str_eq(status(j), "HEALTH_ERR");
	c = check(j, "PG_DAMAGED");
	cr_assert(c);
	cr_assert(strstr(cJSON_GetObjectItem(c, "summary")->valuestring,
			 "first: object 'obj-a' on osd.1 in pg 1.2: read error"),
		  "%s", cJSON_GetObjectItem(c, "summary")->valuestring);
	cr_assert(strstr(cJSON_GetObjectItem(c, "fix")->valuestring, "atoll pg repair 1.2"));
	d = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "detail"));
	cr_assert(strstr(d, "pg 1.2: object 'obj-a' on osd.1: read error") &&
		  strstr(d, "pg 1.2: object 'obj-b' on osd.2: differs") &&
		  strstr(d, "1 more inconsistent copy"), "%s", d);
	free(d);
	c = check(j, "PG_DEGRADED");
	cr_assert(c);
	cr_assert(strstr(cJSON_GetObjectItem(c, "summary")->valuestring,
			 "5 of 120 object copies are degraded (4.2%) in 1 pg"),
		  "%s", cJSON_GetObjectItem(c, "summary")->valuestring);
	d = cJSON_PrintUnformatted(cJSON_GetObjectItem(c, "detail"));
	cr_assert(strstr(d, "atoll is recovering them: 1 pg recovering") &&
		  strstr(d, "left at this rate"), "%s", d);
	free(d);
	cJSON_Delete(j);

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg stat\",\"format\":\"json\"}", NULL, &out), 0);
	j = cJSON_Parse(out);
	free(out);
	cr_assert_eq(cJSON_GetObjectItem(j, "inconsistent")->valueint, 1);
	c = cJSON_GetObjectItem(j, "recovery");
	cr_assert_eq(cJSON_GetObjectItem(c, "degraded")->valueint, 5);
	cr_assert(cJSON_GetObjectItem(c, "objects_per_s")->valuedouble > 0);
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg stat\"}", NULL, &out), 0);
	cr_assert(!strncmp(out, "4 pgs: ", 7) && strstr(out, "5 of 120 object copies degraded") &&
		  strstr(out, "objects/s"), "%s", out);
	free(out);

	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg ls\",\"state\":\"inconsistent,recovering\","
			    "\"format\":\"json\"}", NULL, &out), 0);
	j = cJSON_Parse(out);
	free(out);
	cr_assert_eq(cJSON_GetArraySize(j), 2);
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "pgid")->valuestring, "1.2");
	cr_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 1), "pgid")->valuestring, "1.3");
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg ls\",\"state\":\"inactive\",\"format\":\"json\"}",
			    NULL, &out), 0);
	cr_assert_str_eq(out, "[]");
	free(out);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"pg ls\",\"state\":\"sad\"}", NULL, NULL), -EINVAL);
}

Test(mon_health, down_osd_says_since_when_and_when_out)
{
	cJSON *j, *c;
	const char *d;

	add_osds(3, 3);
	cr_assert_eq(mh_osd_stopping(&h, 1, NULL), 0);
	j = health();
	c = check(j, "OSD_DOWN");
	cr_assert(c);
	d = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(c, "detail"), 0));
	cr_assert(strstr(d, "osd.1 on host 'host1' is down since 20") && strstr(d, " UTC (") &&
		  strstr(d, "it will be marked out at ") && strstr(d, "atoll osd out 1"),
		  "%s", d);
	cJSON_Delete(j);
	cr_assert_eq(mh_cmd(&h, "{\"prefix\":\"osd set\",\"flag\":\"noout\"}", NULL, NULL), 0);
	j = health();
	d = cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(check(j, "OSD_DOWN"),
									 "detail"), 0));
	cr_assert(strstr(d, "noout flag holds it in: it will not be marked out"), "%s", d);
	cJSON_Delete(j);
}
