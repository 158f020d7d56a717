/*
 * msg_config.c - the messenger's limits read from atoll.conf (ms_* keys),
 * one place for every daemon that listens, so that the keys, their
 * ranges and their defaults are the same everywhere (doc/limits.md).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include "msg_config.h"

static int get_u32(const struct config *conf, const char *who, const char *key, uint32_t def,
		   int64_t min, int64_t max, uint32_t *out, char *err, size_t errlen)
{
	int64_t v;
	int r = config_get_int(conf, who, key, def, min, max, &v, err, errlen);

	if (r == 0)
		*out = (uint32_t)v;
	return r;
}

/* 0 when v is within [min, max], else -ERANGE with a sentence naming
 * the key and the unit. */
static int in_range(const char *who, const char *key, uint64_t v, uint64_t min, uint64_t max,
		    const char *unit, char *err, size_t errlen)
{
	if (v >= min && v <= max)
		return 0;
	if (err)
		snprintf(err, errlen, "option '%s' for %s: %llu %s is out of range "
			 "(%llu to %llu %s)", key, who, (unsigned long long)v, unit,
			 (unsigned long long)min, (unsigned long long)max, unit);
	return -ERANGE;
}

static int get_size(const struct config *conf, const char *who, const char *key, uint64_t def,
		    uint64_t min, uint64_t max, uint64_t *out, char *err, size_t errlen)
{
	uint64_t v;
	int r = config_get_size(conf, who, key, def, &v, err, errlen);

	if (r == 0 && (r = in_range(who, key, v, min, max, "bytes", err, errlen)) == 0)
		*out = v;
	return r;
}

static int get_ms(const struct config *conf, const char *who, const char *key, uint32_t def,
		  uint64_t min, uint64_t max, uint32_t *out, char *err, size_t errlen)
{
	uint64_t v;
	int r = config_get_duration_ms(conf, who, key, def, &v, err, errlen);

	if (r == 0 && (r = in_range(who, key, v, min, max, "ms", err, errlen)) == 0)
		*out = (uint32_t)v;
	return r;
}

int msgr_config_read(const struct config *conf, const char *who, struct msgr_config *mc,
		     char *err, size_t errlen)
{
	uint64_t frame_max = mc->frame_max ? mc->frame_max : MSG_DEFAULT_FRAME_MAX, rcvbuf = 0;
	int r;

	if ((r = get_size(conf, who, "ms_frame_max", frame_max, 64 << 10, 1u << 30, &frame_max,
			  err, errlen)) ||
	    (r = get_size(conf, who, "ms_conn_inflight_bytes", MSG_DEFAULT_INFLIGHT_MAX, 64 << 10,
			  UINT64_MAX, &mc->inflight_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_conn_inflight_frames", MSG_DEFAULT_CONN_FRAMES_MAX, 1,
			 UINT32_MAX, &mc->conn_frames_max, err, errlen)) ||
	    (r = get_size(conf, who, "ms_client_inflight_bytes", MSG_DEFAULT_POOL_BYTES, 64 << 10,
			  UINT64_MAX, &mc->client_bytes_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_client_inflight_frames", MSG_DEFAULT_POOL_FRAMES, 1,
			 UINT32_MAX, &mc->client_frames_max, err, errlen)) ||
	    (r = get_size(conf, who, "ms_peer_inflight_bytes", MSG_DEFAULT_POOL_BYTES, 64 << 10,
			  UINT64_MAX, &mc->peer_bytes_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_peer_inflight_frames", MSG_DEFAULT_POOL_FRAMES, 1,
			 UINT32_MAX, &mc->peer_frames_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_max_conns", MSG_DEFAULT_CONNS_MAX, 1, 1 << 24,
			 &mc->conns_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_max_conns_per_addr", MSG_DEFAULT_CONNS_PER_ADDR, 1,
			 1 << 24, &mc->conns_per_addr, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_peer_reserved_conns", MSG_DEFAULT_PEER_RESERVED, 0,
			 1 << 24, &mc->peer_reserved, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_max_handshakes", MSG_DEFAULT_HANDSHAKES_MAX, 1, 1 << 24,
			 &mc->handshakes_max, err, errlen)) ||
	    (r = get_u32(conf, who, "ms_max_handshakes_per_addr",
			 MSG_DEFAULT_HANDSHAKES_PER_ADDR, 1, 1 << 24, &mc->handshakes_per_addr,
			 err, errlen)) ||
	    (r = get_size(conf, who, "ms_handshake_rcvbuf", MSG_DEFAULT_HS_RCVBUF, 0, 1u << 30,
			  &rcvbuf, err, errlen)) ||
	    (r = get_ms(conf, who, "ms_handshake_timeout", 10000, 100, 600000,
			&mc->handshake_timeout_ms, err, errlen)) ||
	    (r = get_ms(conf, who, "ms_frame_timeout", MSG_DEFAULT_FRAME_TIMEOUT_MS, 1000,
			86400000, &mc->frame_timeout_ms, err, errlen)))
		return r;
	mc->frame_max = (uint32_t)frame_max;
	/* 0 in the file: leave the kernel's buffer alone */
	mc->handshake_rcvbuf = rcvbuf ? (uint32_t)rcvbuf : UINT32_MAX;
	return 0;
}
