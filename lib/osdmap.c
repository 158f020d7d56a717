/*
 * osdmap.c - the cluster map: building, copying, encoding, decoding and
 * applying incrementals.
 *
 * The map travels between monitors, OSDs and clients, so its decoders
 * treat every byte as hostile: counts are capped before anything is
 * allocated, strings must fit with their NUL, and every invariant the
 * rest of atoll relies on (ids in range and in order, sane pool sizes,
 * pg_num in range) is checked here, once, so that placement and the
 * daemons may assume it.  The encoding is canonical (records in id order,
 * unused OSD slots left out), which is what lets osdmap_equal() compare
 * bytes.  The map, each OSD record and each pool record is its own
 * versioned section, so fields can be appended to any of them and older
 * readers skip what they do not know.
 *
 * osdmap_apply() works on a copy and swaps it in at the end, so a failed
 * apply (bad record, ENOMEM) leaves the caller's map as it was.
 */
#include "osdmap.h"
#include "encode.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define OSDMAP_VERSION		2	/* full map section (2: the MDS list) */
#define OSDMAP_COMPAT		1
#define OSDMAP_INC_VERSION	2	/* 2: the MDS list */
#define OSDMAP_INC_COMPAT	1
#define OSDMAP_OSD_VERSION	1	/* one OSD record */
#define OSDMAP_OSD_COMPAT	1
#define OSDMAP_POOL_VERSION	1	/* one pool record */
#define OSDMAP_POOL_COMPAT	1
#define OSDMAP_MDS_VERSION	1	/* one MDS record */
#define OSDMAP_MDS_COMPAT	1

#define OSDMAP_SECTION_MIN	6	/* a section header: smallest record */
#define OSDMAP_PG_TEMP_MIN	9	/* pool, pg, n */
#define OSDMAP_BLOCKLIST_LEN	16	/* client, until */

/* ---- allocation ---- */

/* calloc that never returns NULL for zero elements on success. */
static void *osdmap_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static void *osdmap_dup(const void *p, size_t n, size_t size)
{
	void *q = osdmap_calloc(n, size);

	if (q && n)
		memcpy(q, p, n * size);
	return q;
}

struct osdmap *osdmap_new(const uint8_t fsid[16])
{
	struct osdmap *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (fsid)
		memcpy(m->fsid, fsid, sizeof(m->fsid));
	m->nearfull_ratio = 8500;
	m->backfillfull_ratio = 9000;
	m->full_ratio = 9500;
	m->pool_next_id = 1;
	return m;
}

static void osdmap_free_arrays(struct osdmap *m)
{
	free(m->osds);
	free(m->pools);
	free(m->pg_temp);
	free(m->blocklist);
	free(m->mds);
	m->mds = NULL;
	m->osds = NULL;
	m->pools = NULL;
	m->pg_temp = NULL;
	m->blocklist = NULL;
}

void osdmap_free(struct osdmap *m)
{
	if (!m)
		return;
	osdmap_free_arrays(m);
	free(m);
}

struct osdmap *osdmap_clone(const struct osdmap *m)
{
	struct osdmap *c = malloc(sizeof(*c));

	if (!c)
		return NULL;
	*c = *m;
	c->osds = osdmap_dup(m->osds, m->max_osd, sizeof(*m->osds));
	c->pools = osdmap_dup(m->pools, m->npools, sizeof(*m->pools));
	c->pg_temp = osdmap_dup(m->pg_temp, m->npg_temp, sizeof(*m->pg_temp));
	c->blocklist = osdmap_dup(m->blocklist, m->nblocklist, sizeof(*m->blocklist));
	c->mds = osdmap_dup(m->mds, m->nmds, sizeof(*m->mds));
	if (!c->osds || !c->pools || !c->pg_temp || !c->blocklist || !c->mds) {
		osdmap_free(c);
		return NULL;
	}
	return c;
}

/* ---- record checks (shared by the decoders, the builders and apply) ---- */

static size_t osdmap_strlen(const char *s, size_t size)
{
	return strnlen(s, size);
}

/* An OSD record; state 0 (free the id) only where allow_free. */
static bool osdmap_osd_valid(const struct osdmap_osd *o, bool allow_free)
{
	if (o->id >= OSDMAP_OSD_MAX)
		return false;
	if (!o->state && !allow_free)
		return false;
	if (o->reweight > OSD_WEIGHT_ONE)
		return false;
	return osdmap_strlen(o->host, sizeof(o->host)) <= OSDMAP_HOST_MAX &&
	       osdmap_strlen(o->addr, sizeof(o->addr)) <= OSDMAP_ADDR_MAX;
}

static bool osdmap_pool_valid(const struct osdmap_pool *p)
{
	size_t nl = osdmap_strlen(p->name, sizeof(p->name));

	return nl >= 1 && nl <= OSDMAP_POOL_NAME_MAX &&
	       p->size >= 1 && p->size <= OSDMAP_SIZE_MAX &&
	       p->min_size >= 1 && p->min_size <= p->size &&
	       p->failure_domain <= POOL_FD_OSD &&
	       p->pg_num >= 1 && p->pg_num <= OSDMAP_PG_MAX;
}

static bool osdmap_pg_temp_valid(const struct osdmap_pg_temp *t)
{
	unsigned int i, j;

	if (t->n < 1 || t->n > OSDMAP_SIZE_MAX)
		return false;
	for (i = 0; i < t->n; i++) {
		if (t->osds[i] < 0 || t->osds[i] >= OSDMAP_OSD_MAX)
			return false;
		for (j = 0; j < i; j++)
			if (t->osds[j] == t->osds[i])
				return false;
	}
	return true;
}

static int osdmap_pg_temp_cmp(const void *a, const void *b)
{
	const struct osdmap_pg_temp *x = a, *y = b;

	if (x->pool != y->pool)
		return x->pool < y->pool ? -1 : 1;
	if (x->pg != y->pg)
		return x->pg < y->pg ? -1 : 1;
	return 0;
}

static int osdmap_blocklist_cmp(const void *a, const void *b)
{
	const struct osdmap_blocklist *x = a, *y = b;

	if (x->client != y->client)
		return x->client < y->client ? -1 : 1;
	return 0;
}

static bool osdmap_mds_name_valid(const char *s, size_t size)
{
	size_t n = osdmap_strlen(s, size);

	if (n < 1 || n > OSDMAP_MDS_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* One MDS record alone (the list's rules: osdmap_mds_list_valid). */
static bool osdmap_mds_valid(const struct osdmap_mds *d)
{
	return d->instance != 0 && osdmap_mds_name_valid(d->name, sizeof(d->name)) &&
	       osdmap_strlen(d->addr, sizeof(d->addr)) <= OSDMAP_ADDR_MAX &&
	       (d->state == OSDMAP_MDS_STANDBY || d->state == OSDMAP_MDS_ACTIVE);
}

static int osdmap_mds_cmp(const void *a, const void *b)
{
	const struct osdmap_mds *x = a, *y = b;

	if (x->instance != y->instance)
		return x->instance < y->instance ? -1 : 1;
	return 0;
}

/* A sorted list: instances unique, one active per file system. */
static bool osdmap_mds_list_valid(const struct osdmap_mds *l, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!osdmap_mds_valid(&l[i]))
			return false;
		if (i && l[i].instance <= l[i - 1].instance)
			return false;
		if (l[i].state != OSDMAP_MDS_ACTIVE)
			continue;
		for (uint32_t j = 0; j < i; j++)
			if (l[j].state == OSDMAP_MDS_ACTIVE && l[j].meta_pool == l[i].meta_pool &&
			    l[j].data_pool == l[i].data_pool)
				return false;
	}
	return true;
}

static bool osdmap_names_unique(const struct osdmap_pool *pools, uint32_t n)
{
	uint32_t i, j;

	for (i = 1; i < n; i++)
		for (j = 0; j < i; j++)
			if (strncmp(pools[i].name, pools[j].name, sizeof(pools[i].name)) == 0)
				return false;
	return true;
}

/* ---- record encoding ---- */

static void osdmap_enc_str(struct enc *e, const char *s, size_t size, size_t max)
{
	size_t n = osdmap_strlen(s, size);

	enc_blob(e, s, n > max ? max : n);
}

static void osdmap_enc_osd(struct enc *e, const struct osdmap_osd *o)
{
	size_t h = enc_begin(e, OSDMAP_OSD_VERSION, OSDMAP_OSD_COMPAT);

	enc_u32(e, o->id);
	enc_u32(e, o->state);
	enc_raw(e, o->uuid, sizeof(o->uuid));
	osdmap_enc_str(e, o->host, sizeof(o->host), OSDMAP_HOST_MAX);
	osdmap_enc_str(e, o->addr, sizeof(o->addr), OSDMAP_ADDR_MAX);
	enc_u32(e, o->weight);
	enc_u32(e, o->reweight);
	enc_u64(e, o->up_from);
	enc_u64(e, o->down_at);
	enc_u64(e, o->down_stamp_ms);
	enc_end(e, h);
}

static int osdmap_dec_osd(struct dec *d, struct osdmap_osd *o, bool allow_free)
{
	struct dec b;
	const void *uuid;

	memset(o, 0, sizeof(*o));
	if (dec_msg_begin(d, OSDMAP_OSD_COMPAT, &b))
		return d->err;
	o->id = dec_u32(&b);
	o->state = dec_u32(&b);
	uuid = dec_raw(&b, sizeof(o->uuid));
	if (uuid)
		memcpy(o->uuid, uuid, sizeof(o->uuid));
	dec_str(&b, o->host, OSDMAP_HOST_MAX);
	dec_str(&b, o->addr, OSDMAP_ADDR_MAX);
	o->weight = dec_u32(&b);
	o->reweight = dec_u32(&b);
	o->up_from = dec_u64(&b);
	o->down_at = dec_u64(&b);
	o->down_stamp_ms = dec_u64(&b);
	if (!b.err && !osdmap_osd_valid(o, allow_free))
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

static void osdmap_enc_pool(struct enc *e, const struct osdmap_pool *p)
{
	size_t h = enc_begin(e, OSDMAP_POOL_VERSION, OSDMAP_POOL_COMPAT);

	enc_u32(e, p->id);
	osdmap_enc_str(e, p->name, sizeof(p->name), OSDMAP_POOL_NAME_MAX);
	enc_u8(e, p->size);
	enc_u8(e, p->min_size);
	enc_u8(e, p->failure_domain);
	enc_u32(e, p->pg_num);
	enc_u32(e, p->flags);
	enc_u64(e, p->created);
	enc_end(e, h);
}

static int osdmap_dec_pool(struct dec *d, struct osdmap_pool *p)
{
	struct dec b;

	memset(p, 0, sizeof(*p));
	if (dec_msg_begin(d, OSDMAP_POOL_COMPAT, &b))
		return d->err;
	p->id = dec_u32(&b);
	dec_str(&b, p->name, OSDMAP_POOL_NAME_MAX);
	p->size = dec_u8(&b);
	p->min_size = dec_u8(&b);
	p->failure_domain = dec_u8(&b);
	p->pg_num = dec_u32(&b);
	p->flags = dec_u32(&b);
	p->created = dec_u64(&b);
	if (!b.err && !osdmap_pool_valid(p))
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

static void osdmap_enc_pg_temp(struct enc *e, const struct osdmap_pg_temp *t)
{
	unsigned int i, n = t->n > OSDMAP_SIZE_MAX ? OSDMAP_SIZE_MAX : t->n;

	enc_u32(e, t->pool);
	enc_u32(e, t->pg);
	enc_u8(e, (uint8_t)n);
	for (i = 0; i < n; i++)
		enc_u32(e, (uint32_t)t->osds[i]);
}

static int osdmap_dec_pg_temp(struct dec *d, struct osdmap_pg_temp *t)
{
	unsigned int i;

	memset(t, 0, sizeof(*t));
	t->pool = dec_u32(d);
	t->pg = dec_u32(d);
	t->n = dec_u8(d);
	if (d->err)
		return d->err;
	if (t->n < 1 || t->n > OSDMAP_SIZE_MAX)
		return dec_fail(d, -EBADMSG);
	for (i = 0; i < t->n; i++)
		t->osds[i] = (int32_t)dec_u32(d);
	if (!d->err && !osdmap_pg_temp_valid(t))
		dec_fail(d, -EBADMSG);
	return d->err;
}

static void osdmap_enc_blocklist(struct enc *e, const struct osdmap_blocklist *b)
{
	enc_u64(e, b->client);
	enc_u64(e, b->until_ms);
}

static int osdmap_dec_blocklist(struct dec *d, struct osdmap_blocklist *b)
{
	b->client = dec_u64(d);
	b->until_ms = dec_u64(d);
	return d->err;
}

static void osdmap_enc_mds(struct enc *e, const struct osdmap_mds *m)
{
	size_t h = enc_begin(e, OSDMAP_MDS_VERSION, OSDMAP_MDS_COMPAT);

	enc_u64(e, m->instance);
	osdmap_enc_str(e, m->name, sizeof(m->name), OSDMAP_MDS_NAME_MAX);
	osdmap_enc_str(e, m->addr, sizeof(m->addr), OSDMAP_ADDR_MAX);
	enc_u32(e, m->meta_pool);
	enc_u32(e, m->data_pool);
	enc_u8(e, m->state);
	enc_u64(e, m->grant_epoch);
	enc_end(e, h);
}

static int osdmap_dec_mds(struct dec *d, struct osdmap_mds *m)
{
	struct dec b;

	memset(m, 0, sizeof(*m));
	if (dec_msg_begin(d, OSDMAP_MDS_COMPAT, &b))
		return d->err;
	m->instance = dec_u64(&b);
	dec_str(&b, m->name, OSDMAP_MDS_NAME_MAX);
	dec_str(&b, m->addr, OSDMAP_ADDR_MAX);
	m->meta_pool = dec_u32(&b);
	m->data_pool = dec_u32(&b);
	m->state = dec_u8(&b);
	m->grant_epoch = dec_u64(&b);
	if (!b.err && !osdmap_mds_valid(m))
		dec_fail(&b, -EBADMSG);
	return dec_end(d, &b);
}

/* u32 n, then n records (a full map's list, or an incremental's). */
static int osdmap_dec_mds_list(struct dec *b, struct osdmap_mds **out, uint32_t *n)
{
	*n = dec_count(b, OSDMAP_MDS_MAX, OSDMAP_SECTION_MIN);
	if (b->err)
		return b->err;
	*out = osdmap_calloc(*n, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (uint32_t i = 0; i < *n; i++)
		if (osdmap_dec_mds(b, &(*out)[i]))
			return b->err;
	return 0;
}

/* ---- full map ---- */

static uint32_t osdmap_used_osds(const struct osdmap *m)
{
	uint32_t i, n = 0;

	for (i = 0; i < m->max_osd; i++)
		if (m->osds[i].state)
			n++;
	return n;
}

void osdmap_encode(const struct osdmap *m, struct enc *e)
{
	size_t h = enc_begin(e, OSDMAP_VERSION, OSDMAP_COMPAT);
	uint32_t i;

	enc_raw(e, m->fsid, sizeof(m->fsid));
	enc_u64(e, m->epoch);
	enc_u64(e, m->created_ms);
	enc_u64(e, m->modified_ms);
	enc_u32(e, m->flags);
	enc_u32(e, m->nearfull_ratio);
	enc_u32(e, m->backfillfull_ratio);
	enc_u32(e, m->full_ratio);
	enc_u32(e, m->max_osd);
	enc_u32(e, osdmap_used_osds(m));
	for (i = 0; i < m->max_osd; i++) {
		struct osdmap_osd o;

		if (!m->osds[i].state)
			continue;
		o = m->osds[i];
		o.id = i;	/* the slot is the id, whatever the record says */
		osdmap_enc_osd(e, &o);
	}
	enc_u32(e, m->pool_next_id);
	enc_u32(e, m->npools);
	for (i = 0; i < m->npools; i++)
		osdmap_enc_pool(e, &m->pools[i]);
	enc_u32(e, m->npg_temp);
	for (i = 0; i < m->npg_temp; i++)
		osdmap_enc_pg_temp(e, &m->pg_temp[i]);
	enc_u32(e, m->nblocklist);
	for (i = 0; i < m->nblocklist; i++)
		osdmap_enc_blocklist(e, &m->blocklist[i]);
	enc_u32(e, m->nmds);
	for (i = 0; i < m->nmds; i++)
		osdmap_enc_mds(e, &m->mds[i]);
	enc_end(e, h);
}

static bool osdmap_ratios_valid(uint32_t a, uint32_t b, uint32_t c)
{
	return a <= OSDMAP_RATIO_MAX && b <= OSDMAP_RATIO_MAX && c <= OSDMAP_RATIO_MAX;
}

/* The body of a full map; m is zeroed and owns what is allocated. */
static int osdmap_decode_body(struct dec *b, uint8_t version, struct osdmap *m)
{
	const void *fsid;
	int64_t prev = -1;
	uint32_t i, n;

	fsid = dec_raw(b, sizeof(m->fsid));
	if (fsid)
		memcpy(m->fsid, fsid, sizeof(m->fsid));
	m->epoch = dec_u64(b);
	m->created_ms = dec_u64(b);
	m->modified_ms = dec_u64(b);
	m->flags = dec_u32(b);
	m->nearfull_ratio = dec_u32(b);
	m->backfillfull_ratio = dec_u32(b);
	m->full_ratio = dec_u32(b);
	if (b->err)
		return b->err;
	if (!osdmap_ratios_valid(m->nearfull_ratio, m->backfillfull_ratio, m->full_ratio))
		return dec_fail(b, -EBADMSG);

	m->max_osd = dec_u32(b);
	if (!b->err && m->max_osd > OSDMAP_OSD_MAX)
		dec_fail(b, -E2BIG);
	n = dec_count(b, m->max_osd, OSDMAP_SECTION_MIN);
	if (b->err)
		return b->err;
	m->osds = osdmap_calloc(m->max_osd, sizeof(*m->osds));
	if (!m->osds)
		return -ENOMEM;
	for (i = 0; i < m->max_osd; i++)
		m->osds[i].id = i;
	for (i = 0; i < n; i++) {
		struct osdmap_osd o;

		if (osdmap_dec_osd(b, &o, false))
			return b->err;
		/* strictly ascending ids, each below max_osd */
		if (o.id >= m->max_osd || (int64_t)o.id <= prev)
			return dec_fail(b, -EBADMSG);
		prev = o.id;
		m->osds[o.id] = o;
	}

	m->pool_next_id = dec_u32(b);
	m->npools = dec_count(b, OSDMAP_POOL_MAX, OSDMAP_SECTION_MIN);
	if (b->err)
		return b->err;
	m->pools = osdmap_calloc(m->npools, sizeof(*m->pools));
	if (!m->pools)
		return -ENOMEM;
	for (i = 0; i < m->npools; i++) {
		if (osdmap_dec_pool(b, &m->pools[i]))
			return b->err;
		if (i && m->pools[i].id <= m->pools[i - 1].id)
			return dec_fail(b, -EBADMSG);
	}
	if (!osdmap_names_unique(m->pools, m->npools))
		return dec_fail(b, -EBADMSG);

	m->npg_temp = dec_count(b, OSDMAP_PG_TEMP_MAX, OSDMAP_PG_TEMP_MIN);
	if (b->err)
		return b->err;
	m->pg_temp = osdmap_calloc(m->npg_temp, sizeof(*m->pg_temp));
	if (!m->pg_temp)
		return -ENOMEM;
	for (i = 0; i < m->npg_temp; i++) {
		if (osdmap_dec_pg_temp(b, &m->pg_temp[i]))
			return b->err;
		if (i && osdmap_pg_temp_cmp(&m->pg_temp[i - 1], &m->pg_temp[i]) >= 0)
			return dec_fail(b, -EBADMSG);
	}

	m->nblocklist = dec_count(b, OSDMAP_BLOCKLIST_MAX, OSDMAP_BLOCKLIST_LEN);
	if (b->err)
		return b->err;
	m->blocklist = osdmap_calloc(m->nblocklist, sizeof(*m->blocklist));
	if (!m->blocklist)
		return -ENOMEM;
	for (i = 0; i < m->nblocklist; i++) {
		if (osdmap_dec_blocklist(b, &m->blocklist[i]))
			return b->err;
		if (i && m->blocklist[i].client <= m->blocklist[i - 1].client)
			return dec_fail(b, -EBADMSG);
	}
	/* version 1 ends here: no MDS daemons */
	if (version < 2) {
		m->mds = osdmap_calloc(0, sizeof(*m->mds));
		return m->mds ? b->err : -ENOMEM;
	}
	if (osdmap_dec_mds_list(b, &m->mds, &m->nmds))
		return b->err ? b->err : -ENOMEM;
	if (!osdmap_mds_list_valid(m->mds, m->nmds))
		return dec_fail(b, -EBADMSG);
	return b->err;
}

int osdmap_decode(struct dec *d, struct osdmap **out)
{
	struct osdmap *m;
	struct dec b;
	int ret;

	uint8_t version;

	*out = NULL;
	if (dec_begin(d, OSDMAP_COMPAT, &b, &version))
		return d->err;
	m = calloc(1, sizeof(*m));
	if (!m) {
		dec_fail(d, -ENOMEM);
		return -ENOMEM;
	}
	ret = osdmap_decode_body(&b, version, m);
	if (ret == -ENOMEM)
		dec_fail(&b, -ENOMEM);
	ret = dec_end(d, &b);
	if (ret)
		goto out_free_map;
	*out = m;
	return 0;

out_free_map:
	osdmap_free(m);
	return ret;
}

bool osdmap_equal(const struct osdmap *a, const struct osdmap *b)
{
	struct enc ea, eb;
	bool same;

	enc_init(&ea);
	enc_init(&eb);
	osdmap_encode(a, &ea);
	osdmap_encode(b, &eb);
	same = !ea.err && !eb.err && ea.len == eb.len &&
	       memcmp(ea.buf, eb.buf, ea.len) == 0;
	enc_free(&ea);
	enc_free(&eb);
	return same;
}

/* ---- lookups ---- */

const struct osdmap_osd *osdmap_osd(const struct osdmap *m, int32_t id)
{
	if (id < 0 || (uint32_t)id >= m->max_osd || !m->osds[id].state)
		return NULL;
	return &m->osds[id];
}

const struct osdmap_pool *osdmap_pool(const struct osdmap *m, uint32_t id)
{
	uint32_t lo = 0, hi = m->npools;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (m->pools[mid].id == id)
			return &m->pools[mid];
		if (m->pools[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct osdmap_pool *osdmap_pool_by_name(const struct osdmap *m, const char *name)
{
	uint32_t i;

	if (strlen(name) > OSDMAP_POOL_NAME_MAX)
		return NULL;
	for (i = 0; i < m->npools; i++)
		if (strncmp(m->pools[i].name, name, sizeof(m->pools[i].name)) == 0)
			return &m->pools[i];
	return NULL;
}

bool osdmap_osd_up(const struct osdmap *m, int32_t id)
{
	const struct osdmap_osd *o = osdmap_osd(m, id);

	return o && (o->state & OSD_ST_EXISTS) && (o->state & OSD_ST_UP);
}

bool osdmap_osd_in(const struct osdmap *m, int32_t id)
{
	const struct osdmap_osd *o = osdmap_osd(m, id);

	return o && (o->state & OSD_ST_EXISTS) && o->reweight > 0;
}

const struct osdmap_mds *osdmap_mds_find(const struct osdmap *m, uint64_t instance)
{
	for (uint32_t i = 0; i < m->nmds; i++)
		if (m->mds[i].instance == instance)
			return &m->mds[i];
	return NULL;
}

const struct osdmap_mds *osdmap_mds_active(const struct osdmap *m, uint32_t meta_pool,
					   uint32_t data_pool)
{
	for (uint32_t i = 0; i < m->nmds; i++)
		if (m->mds[i].state == OSDMAP_MDS_ACTIVE && m->mds[i].meta_pool == meta_pool &&
		    m->mds[i].data_pool == data_pool)
			return &m->mds[i];
	return NULL;
}

bool osdmap_blocklisted(const struct osdmap *m, uint64_t client, uint64_t now_ms)
{
	uint32_t i;

	for (i = 0; i < m->nblocklist; i++)
		if (m->blocklist[i].client == client && m->blocklist[i].until_ms > now_ms)
			return true;
	return false;
}

uint32_t osdmap_hosts_in(const struct osdmap *m)
{
	/* Open addressing over at most OSDMAP_OSD_MAX names: slot holds an
	 * OSD id + 1 whose host stands for its name; 0 is empty.  On the
	 * stack so the count cannot fail. */
	uint16_t table[2 * OSDMAP_OSD_MAX];
	uint32_t i, count = 0, n = m->max_osd;

	if (n > OSDMAP_OSD_MAX)
		n = OSDMAP_OSD_MAX;
	memset(table, 0, sizeof(table));
	for (i = 0; i < n; i++) {
		const struct osdmap_osd *o = &m->osds[i];
		size_t len;
		uint32_t slot;

		if (!(o->state & OSD_ST_EXISTS) || !o->reweight)
			continue;
		len = osdmap_strlen(o->host, sizeof(o->host));
		slot = XXH32(o->host, len, 0) & (2 * OSDMAP_OSD_MAX - 1);
		for (;;) {
			const struct osdmap_osd *q;

			if (!table[slot]) {
				table[slot] = (uint16_t)(i + 1);
				count++;
				break;
			}
			q = &m->osds[table[slot] - 1];
			if (osdmap_strlen(q->host, sizeof(q->host)) == len &&
			    memcmp(q->host, o->host, len) == 0)
				break;
			slot = (slot + 1) & (2 * OSDMAP_OSD_MAX - 1);
		}
	}
	return count;
}

/* ---- incrementals ---- */

void osdmap_inc_init(struct osdmap_inc *inc, uint64_t epoch)
{
	memset(inc, 0, sizeof(*inc));
	inc->epoch = epoch;
}

void osdmap_inc_clear(struct osdmap_inc *inc)
{
	free(inc->osds);
	free(inc->pools);
	free(inc->rm_pools);
	free(inc->pg_temp);
	free(inc->blocklist);
	free(inc->mds);
	osdmap_inc_init(inc, inc->epoch);
}

/* Grows an array of n elements by one; the new element is zeroed. */
static void *osdmap_grow(void *arr, uint32_t n, size_t size)
{
	uint8_t *p = realloc(arr, (n + 1) * size);

	if (p)
		memset(p + n * size, 0, size);
	return p;
}

int osdmap_inc_set_osd(struct osdmap_inc *inc, const struct osdmap_osd *o)
{
	struct osdmap_osd *arr;
	uint32_t i;

	if (!osdmap_osd_valid(o, true))
		return -EINVAL;
	for (i = 0; i < inc->nosds; i++) {
		if (inc->osds[i].id == o->id) {
			inc->osds[i] = *o;
			return 0;
		}
	}
	arr = osdmap_grow(inc->osds, inc->nosds, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	inc->osds = arr;
	inc->osds[inc->nosds++] = *o;
	return 0;
}

static void osdmap_inc_drop_rm(struct osdmap_inc *inc, uint32_t pool)
{
	uint32_t i, j = 0;

	for (i = 0; i < inc->nrm_pools; i++)
		if (inc->rm_pools[i] != pool)
			inc->rm_pools[j++] = inc->rm_pools[i];
	inc->nrm_pools = j;
}

static void osdmap_inc_drop_set(struct osdmap_inc *inc, uint32_t pool)
{
	uint32_t i, j = 0;

	for (i = 0; i < inc->npools; i++)
		if (inc->pools[i].id != pool)
			inc->pools[j++] = inc->pools[i];
	inc->npools = j;
}

int osdmap_inc_set_pool(struct osdmap_inc *inc, const struct osdmap_pool *p)
{
	struct osdmap_pool *arr;
	uint32_t i;

	if (!osdmap_pool_valid(p))
		return -EINVAL;
	osdmap_inc_drop_rm(inc, p->id);
	for (i = 0; i < inc->npools; i++) {
		if (inc->pools[i].id == p->id) {
			inc->pools[i] = *p;
			return 0;
		}
	}
	arr = osdmap_grow(inc->pools, inc->npools, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	inc->pools = arr;
	inc->pools[inc->npools++] = *p;
	return 0;
}

int osdmap_inc_rm_pool(struct osdmap_inc *inc, uint32_t pool)
{
	uint32_t *arr, i;

	osdmap_inc_drop_set(inc, pool);
	for (i = 0; i < inc->nrm_pools; i++)
		if (inc->rm_pools[i] == pool)
			return 0;
	arr = osdmap_grow(inc->rm_pools, inc->nrm_pools, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	inc->rm_pools = arr;
	inc->rm_pools[inc->nrm_pools++] = pool;
	return 0;
}

int osdmap_inc_set_pg_temp(struct osdmap_inc *inc,
			   const struct osdmap_pg_temp *list, uint32_t n)
{
	struct osdmap_pg_temp *arr;

	if (n > OSDMAP_PG_TEMP_MAX)
		return -E2BIG;
	arr = osdmap_dup(list, n, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	free(inc->pg_temp);
	inc->pg_temp = arr;
	inc->npg_temp = n;
	inc->has_pg_temp = true;
	return 0;
}

int osdmap_inc_set_blocklist(struct osdmap_inc *inc,
			     const struct osdmap_blocklist *list, uint32_t n)
{
	struct osdmap_blocklist *arr;

	if (n > OSDMAP_BLOCKLIST_MAX)
		return -E2BIG;
	arr = osdmap_dup(list, n, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	free(inc->blocklist);
	inc->blocklist = arr;
	inc->nblocklist = n;
	inc->has_blocklist = true;
	return 0;
}

int osdmap_inc_set_mds(struct osdmap_inc *inc, const struct osdmap_mds *list, uint32_t n)
{
	struct osdmap_mds *arr;

	if (n > OSDMAP_MDS_MAX)
		return -E2BIG;
	for (uint32_t i = 0; i < n; i++)
		if (!osdmap_mds_valid(&list[i]))
			return -EINVAL;
	arr = osdmap_dup(list, n, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	free(inc->mds);
	inc->mds = arr;
	inc->nmds = n;
	inc->has_mds = true;
	return 0;
}

void osdmap_inc_encode(const struct osdmap_inc *inc, struct enc *e)
{
	size_t h = enc_begin(e, OSDMAP_INC_VERSION, OSDMAP_INC_COMPAT);
	uint32_t i;

	enc_u64(e, inc->epoch);
	enc_u64(e, inc->modified_ms);
	enc_u8(e, inc->has_flags);
	enc_u32(e, inc->flags);
	enc_u8(e, inc->has_ratios);
	enc_u32(e, inc->nearfull_ratio);
	enc_u32(e, inc->backfillfull_ratio);
	enc_u32(e, inc->full_ratio);
	enc_u32(e, inc->nosds);
	for (i = 0; i < inc->nosds; i++)
		osdmap_enc_osd(e, &inc->osds[i]);
	enc_u32(e, inc->npools);
	for (i = 0; i < inc->npools; i++)
		osdmap_enc_pool(e, &inc->pools[i]);
	enc_u32(e, inc->nrm_pools);
	for (i = 0; i < inc->nrm_pools; i++)
		enc_u32(e, inc->rm_pools[i]);
	enc_u8(e, inc->has_pg_temp);
	enc_u32(e, inc->has_pg_temp ? inc->npg_temp : 0);
	for (i = 0; inc->has_pg_temp && i < inc->npg_temp; i++)
		osdmap_enc_pg_temp(e, &inc->pg_temp[i]);
	enc_u8(e, inc->has_blocklist);
	enc_u32(e, inc->has_blocklist ? inc->nblocklist : 0);
	for (i = 0; inc->has_blocklist && i < inc->nblocklist; i++)
		osdmap_enc_blocklist(e, &inc->blocklist[i]);
	enc_u8(e, inc->has_mds);
	enc_u32(e, inc->has_mds ? inc->nmds : 0);
	for (i = 0; inc->has_mds && i < inc->nmds; i++)
		osdmap_enc_mds(e, &inc->mds[i]);
	enc_end(e, h);
}

/* A bool byte: 0 or 1, anything else is malformed. */
static bool osdmap_dec_bool(struct dec *d)
{
	uint8_t v = dec_u8(d);

	if (v > 1)
		dec_fail(d, -EBADMSG);
	return v == 1;
}

static int osdmap_inc_decode_body(struct dec *b, uint8_t version, struct osdmap_inc *inc)
{
	uint32_t i;

	inc->epoch = dec_u64(b);
	inc->modified_ms = dec_u64(b);
	inc->has_flags = osdmap_dec_bool(b);
	inc->flags = dec_u32(b);
	inc->has_ratios = osdmap_dec_bool(b);
	inc->nearfull_ratio = dec_u32(b);
	inc->backfillfull_ratio = dec_u32(b);
	inc->full_ratio = dec_u32(b);
	if (b->err)
		return b->err;
	if (inc->has_ratios && !osdmap_ratios_valid(inc->nearfull_ratio,
			inc->backfillfull_ratio, inc->full_ratio))
		return dec_fail(b, -EBADMSG);

	inc->nosds = dec_count(b, OSDMAP_OSD_MAX, OSDMAP_SECTION_MIN);
	if (b->err)
		return b->err;
	inc->osds = osdmap_calloc(inc->nosds, sizeof(*inc->osds));
	if (!inc->osds)
		return -ENOMEM;
	for (i = 0; i < inc->nosds; i++)
		if (osdmap_dec_osd(b, &inc->osds[i], true))
			return b->err;

	inc->npools = dec_count(b, OSDMAP_POOL_MAX, OSDMAP_SECTION_MIN);
	if (b->err)
		return b->err;
	inc->pools = osdmap_calloc(inc->npools, sizeof(*inc->pools));
	if (!inc->pools)
		return -ENOMEM;
	for (i = 0; i < inc->npools; i++)
		if (osdmap_dec_pool(b, &inc->pools[i]))
			return b->err;

	inc->nrm_pools = dec_count(b, OSDMAP_POOL_MAX, 4);
	if (b->err)
		return b->err;
	inc->rm_pools = osdmap_calloc(inc->nrm_pools, sizeof(*inc->rm_pools));
	if (!inc->rm_pools)
		return -ENOMEM;
	for (i = 0; i < inc->nrm_pools; i++)
		inc->rm_pools[i] = dec_u32(b);

	inc->has_pg_temp = osdmap_dec_bool(b);
	inc->npg_temp = dec_count(b, OSDMAP_PG_TEMP_MAX, OSDMAP_PG_TEMP_MIN);
	if (b->err)
		return b->err;
	if (!inc->has_pg_temp && inc->npg_temp)
		return dec_fail(b, -EBADMSG);
	inc->pg_temp = osdmap_calloc(inc->npg_temp, sizeof(*inc->pg_temp));
	if (!inc->pg_temp)
		return -ENOMEM;
	for (i = 0; i < inc->npg_temp; i++)
		if (osdmap_dec_pg_temp(b, &inc->pg_temp[i]))
			return b->err;

	inc->has_blocklist = osdmap_dec_bool(b);
	inc->nblocklist = dec_count(b, OSDMAP_BLOCKLIST_MAX, OSDMAP_BLOCKLIST_LEN);
	if (b->err)
		return b->err;
	if (!inc->has_blocklist && inc->nblocklist)
		return dec_fail(b, -EBADMSG);
	inc->blocklist = osdmap_calloc(inc->nblocklist, sizeof(*inc->blocklist));
	if (!inc->blocklist)
		return -ENOMEM;
	for (i = 0; i < inc->nblocklist; i++)
		if (osdmap_dec_blocklist(b, &inc->blocklist[i]))
			return b->err;
	if (version < 2)
		return b->err;	/* version 1: no MDS list */
	inc->has_mds = osdmap_dec_bool(b);
	if (osdmap_dec_mds_list(b, &inc->mds, &inc->nmds))
		return b->err ? b->err : -ENOMEM;
	if (!inc->has_mds && inc->nmds)
		return dec_fail(b, -EBADMSG);
	return b->err;
}

int osdmap_inc_decode(struct dec *d, struct osdmap_inc *inc)
{
	struct dec b;
	int ret;

	uint8_t version;

	osdmap_inc_init(inc, 0);
	if (dec_begin(d, OSDMAP_INC_COMPAT, &b, &version))
		return d->err;
	ret = osdmap_inc_decode_body(&b, version, inc);
	if (ret == -ENOMEM)
		dec_fail(&b, -ENOMEM);
	ret = dec_end(d, &b);
	if (ret)
		osdmap_inc_clear(inc);
	return ret;
}

/* ---- apply ---- */

/* Checks what can be checked without the map, so that most refusals
 * happen before anything is copied. */
static int osdmap_inc_check(const struct osdmap_inc *inc)
{
	uint32_t i;

	if (inc->has_ratios && !osdmap_ratios_valid(inc->nearfull_ratio,
			inc->backfillfull_ratio, inc->full_ratio))
		return -EINVAL;
	for (i = 0; i < inc->nosds; i++)
		if (!osdmap_osd_valid(&inc->osds[i], true))
			return -EINVAL;
	for (i = 0; i < inc->npools; i++)
		if (!osdmap_pool_valid(&inc->pools[i]))
			return -EINVAL;
	if (inc->has_pg_temp) {
		if (inc->npg_temp > OSDMAP_PG_TEMP_MAX)
			return -EINVAL;
		for (i = 0; i < inc->npg_temp; i++)
			if (!osdmap_pg_temp_valid(&inc->pg_temp[i]))
				return -EINVAL;
	}
	if (inc->has_blocklist && inc->nblocklist > OSDMAP_BLOCKLIST_MAX)
		return -EINVAL;
	if (inc->has_mds) {
		if (inc->nmds > OSDMAP_MDS_MAX)
			return -EINVAL;
		for (i = 0; i < inc->nmds; i++)
			if (!osdmap_mds_valid(&inc->mds[i]))
				return -EINVAL;
	}
	return 0;
}

static int osdmap_apply_osds(struct osdmap *m, const struct osdmap_inc *inc)
{
	uint32_t i, need = m->max_osd;

	for (i = 0; i < inc->nosds; i++)
		if (inc->osds[i].id >= need)
			need = inc->osds[i].id + 1;
	if (need > m->max_osd) {
		struct osdmap_osd *arr = realloc(m->osds, need * sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		memset(arr + m->max_osd, 0, (need - m->max_osd) * sizeof(*arr));
		for (i = m->max_osd; i < need; i++)
			arr[i].id = i;
		m->osds = arr;
		m->max_osd = need;
	}
	for (i = 0; i < inc->nosds; i++) {
		const struct osdmap_osd *o = &inc->osds[i];

		if (o->state) {
			m->osds[o->id] = *o;
		} else {
			memset(&m->osds[o->id], 0, sizeof(m->osds[0]));
			m->osds[o->id].id = o->id;
		}
	}
	return 0;
}

static int osdmap_apply_pools(struct osdmap *m, const struct osdmap_inc *inc)
{
	uint32_t i, j, k;

	for (i = 0; i < inc->npools; i++) {
		const struct osdmap_pool *p = &inc->pools[i];
		struct osdmap_pool *arr;

		for (j = 0; j < m->npools && m->pools[j].id < p->id; j++)
			;
		if (j < m->npools && m->pools[j].id == p->id) {
			m->pools[j] = *p;
		} else {
			if (m->npools >= OSDMAP_POOL_MAX)
				return -EINVAL;
			arr = realloc(m->pools, (m->npools + 1) * sizeof(*arr));
			if (!arr)
				return -ENOMEM;
			m->pools = arr;
			memmove(&arr[j + 1], &arr[j], (m->npools - j) * sizeof(*arr));
			arr[j] = *p;
			m->npools++;
		}
		if (p->id >= m->pool_next_id && p->id != UINT32_MAX)
			m->pool_next_id = p->id + 1;
	}
	for (i = 0; i < inc->nrm_pools; i++) {
		uint32_t id = inc->rm_pools[i];

		for (j = 0, k = 0; j < m->npools; j++)
			if (m->pools[j].id != id)
				m->pools[k++] = m->pools[j];
		m->npools = k;
		for (j = 0, k = 0; j < m->npg_temp; j++)
			if (m->pg_temp[j].pool != id)
				m->pg_temp[k++] = m->pg_temp[j];
		m->npg_temp = k;
	}
	return osdmap_names_unique(m->pools, m->npools) ? 0 : -EINVAL;
}

static int osdmap_apply_lists(struct osdmap *m, const struct osdmap_inc *inc)
{
	uint32_t i;

	if (inc->has_pg_temp) {
		struct osdmap_pg_temp *arr = osdmap_dup(inc->pg_temp, inc->npg_temp,
							sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		qsort(arr, inc->npg_temp, sizeof(*arr), osdmap_pg_temp_cmp);
		for (i = 1; i < inc->npg_temp; i++) {
			if (osdmap_pg_temp_cmp(&arr[i - 1], &arr[i]) == 0) {
				free(arr);
				return -EINVAL;
			}
		}
		free(m->pg_temp);
		m->pg_temp = arr;
		m->npg_temp = inc->npg_temp;
	}
	if (inc->has_blocklist) {
		struct osdmap_blocklist *arr = osdmap_dup(inc->blocklist, inc->nblocklist,
							  sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		qsort(arr, inc->nblocklist, sizeof(*arr), osdmap_blocklist_cmp);
		for (i = 1; i < inc->nblocklist; i++) {
			if (arr[i - 1].client == arr[i].client) {
				free(arr);
				return -EINVAL;
			}
		}
		free(m->blocklist);
		m->blocklist = arr;
		m->nblocklist = inc->nblocklist;
	}
	if (inc->has_mds) {
		struct osdmap_mds *arr = osdmap_dup(inc->mds, inc->nmds, sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		qsort(arr, inc->nmds, sizeof(*arr), osdmap_mds_cmp);
		for (i = 0; i < inc->nmds; i++)
			if (arr[i].state == OSDMAP_MDS_ACTIVE && arr[i].grant_epoch == 0)
				arr[i].grant_epoch = inc->epoch;	/* granted now */
		if (!osdmap_mds_list_valid(arr, inc->nmds)) {
			free(arr);
			return -EINVAL;
		}
		free(m->mds);
		m->mds = arr;
		m->nmds = inc->nmds;
	}
	return 0;
}

int osdmap_apply(struct osdmap *m, const struct osdmap_inc *inc)
{
	struct osdmap *n;
	int ret;

	if (inc->epoch != m->epoch + 1)
		return -EINVAL;
	ret = osdmap_inc_check(inc);
	if (ret)
		return ret;
	n = osdmap_clone(m);
	if (!n)
		return -ENOMEM;
	ret = osdmap_apply_osds(n, inc);
	if (!ret)
		ret = osdmap_apply_lists(n, inc);
	if (!ret)
		ret = osdmap_apply_pools(n, inc);	/* after: drops pg_temp */
	if (ret)
		goto out_free_copy;
	n->epoch = inc->epoch;
	n->modified_ms = inc->modified_ms;
	if (inc->has_flags)
		n->flags = inc->flags;
	if (inc->has_ratios) {
		n->nearfull_ratio = inc->nearfull_ratio;
		n->backfillfull_ratio = inc->backfillfull_ratio;
		n->full_ratio = inc->full_ratio;
	}
	/* Swap the new contents in; m's old arrays go with n's shell. */
	{
		struct osdmap tmp = *m;

		*m = *n;
		*n = tmp;
	}
out_free_copy:
	osdmap_free(n);
	return ret;
}
