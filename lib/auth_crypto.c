/*
 * auth_crypto.c - the cryptographic primitives of authentication, each a
 * thin wrapper over OpenSSL 3's libcrypto (EVP_MAC HMAC-SHA256, EVP_KDF
 * HKDF-SHA256, EVP_CIPHER AES-256-GCM, EVP_Digest SHA-256, RAND_bytes,
 * CRYPTO_memcmp, OPENSSL_cleanse).  Kept in one file so that the rest of
 * auth speaks in keys and labels, and so that a change of library or
 * cipher touches only this file.  AES-256-GCM, because every x86-64 and
 * arm64 server has AES instructions and OpenSSL uses them.
 *
 * Entity-name and hex-key helpers live here too: they are the small
 * shared vocabulary of auth_ticket.c and keyring.c.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include "auth.h"
#include "msg.h"

int auth_random(void *buf, size_t len)
{
	if (len > INT_MAX)
		return -EINVAL;
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

void auth_wipe(void *p, size_t len)
{
	if (p)
		OPENSSL_cleanse(p, len);
}

bool auth_equal(const void *a, const void *b, size_t n)
{
	return CRYPTO_memcmp(a, b, n) == 0;
}

int auth_sha256_2(const void *a, size_t alen, const void *b, size_t blen,
		  uint8_t out[AUTH_HASH_LEN])
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned int olen = 0;
	int r = -EIO;

	if (!ctx)
		return -EIO;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    (!alen || EVP_DigestUpdate(ctx, a, alen) == 1) &&
	    (!blen || EVP_DigestUpdate(ctx, b, blen) == 1) &&
	    EVP_DigestFinal_ex(ctx, out, &olen) == 1 && olen == AUTH_HASH_LEN)
		r = 0;
	EVP_MD_CTX_free(ctx);
	return r;
}

/* The info of a derivation: label ‖ ctx, at most this long. */
#define HKDF_INFO_MAX	256u

int auth_hkdf(const uint8_t key[AUTH_KEY_LEN], const void *salt, size_t saltlen,
	      const char *label, const void *ctx, size_t ctxlen,
	      void *out, size_t outlen)
{
	uint8_t info[HKDF_INFO_MAX];
	size_t llen = strlen(label);
	OSSL_PARAM params[5], *p = params;
	EVP_KDF *kdf;
	EVP_KDF_CTX *kctx = NULL;
	int r = -EIO;

	if (llen + ctxlen > sizeof(info))
		return -EINVAL;
	memcpy(info, label, llen);
	if (ctxlen)
		memcpy(info + llen, ctx, ctxlen);
	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	if (!kdf)
		return -EIO;
	kctx = EVP_KDF_CTX_new(kdf);
	if (!kctx)
		goto out_free_kdf;
	*p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)key, AUTH_KEY_LEN);
	if (saltlen)
		*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT,
							 (void *)salt, saltlen);
	*p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, llen + ctxlen);
	*p = OSSL_PARAM_construct_end();
	if (EVP_KDF_derive(kctx, out, outlen, params) == 1)
		r = 0;
	EVP_KDF_CTX_free(kctx);
out_free_kdf:
	EVP_KDF_free(kdf);
	return r;
}

int auth_mac(const uint8_t key[AUTH_KEY_LEN], const char *label,
	     const void *a, size_t alen, const void *b, size_t blen,
	     uint8_t out[AUTH_MAC_LEN])
{
	uint8_t sub[AUTH_KEY_LEN];
	OSSL_PARAM params[2];
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx = NULL;
	size_t olen = 0;
	int r;

	r = auth_hkdf(key, NULL, 0, label, NULL, 0, sub, sizeof(sub));
	if (r < 0)
		return r;
	r = -EIO;
	mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	if (!mac)
		goto out_wipe;
	ctx = EVP_MAC_CTX_new(mac);
	if (!ctx)
		goto out_free_mac;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_end();
	if (EVP_MAC_init(ctx, sub, sizeof(sub), params) == 1 &&
	    (!alen || EVP_MAC_update(ctx, a, alen) == 1) &&
	    (!blen || EVP_MAC_update(ctx, b, blen) == 1) &&
	    EVP_MAC_final(ctx, out, &olen, AUTH_MAC_LEN) == 1 && olen == AUTH_MAC_LEN)
		r = 0;
	EVP_MAC_CTX_free(ctx);
out_free_mac:
	EVP_MAC_free(mac);
out_wipe:
	auth_wipe(sub, sizeof(sub));
	return r;
}

int auth_seal(const uint8_t key[AUTH_KEY_LEN], const void *aad, size_t aadlen,
	      const void *pt, size_t len, uint8_t *out)
{
	uint8_t *nonce = out, *ct = out + AUTH_AEAD_NONCE_LEN, *tag = ct + len;
	EVP_CIPHER_CTX *ctx;
	int n, r = -EIO;

	if (len > INT_MAX - AUTH_AEAD_OVERHEAD || aadlen > INT_MAX)
		return -E2BIG;
	r = auth_random(nonce, AUTH_AEAD_NONCE_LEN);
	if (r < 0)
		return r;
	r = -EIO;
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -EIO;
	if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1)
		goto out_free;
	if (aadlen && EVP_EncryptUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1)
		goto out_free;
	if (len && (EVP_EncryptUpdate(ctx, ct, &n, pt, (int)len) != 1 || (size_t)n != len))
		goto out_free;
	if (EVP_EncryptFinal_ex(ctx, ct + len, &n) != 1 || n != 0)
		goto out_free;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, AUTH_AEAD_TAG_LEN, tag) != 1)
		goto out_free;
	r = 0;
out_free:
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

int auth_open(const uint8_t key[AUTH_KEY_LEN], const void *aad, size_t aadlen,
	      const uint8_t *in, size_t inlen, uint8_t *pt)
{
	const uint8_t *nonce = in, *ct = in + AUTH_AEAD_NONCE_LEN;
	size_t len;
	uint8_t tag[AUTH_AEAD_TAG_LEN];
	EVP_CIPHER_CTX *ctx;
	int n, r = -EIO;

	if (inlen < AUTH_AEAD_OVERHEAD)
		return -EBADMSG;
	if (inlen > INT_MAX || aadlen > INT_MAX)
		return -E2BIG;
	len = inlen - AUTH_AEAD_OVERHEAD;
	memcpy(tag, ct + len, sizeof(tag));
	ctx = EVP_CIPHER_CTX_new();
	if (!ctx)
		return -EIO;
	if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1)
		goto out_free;
	if (aadlen && EVP_DecryptUpdate(ctx, NULL, &n, aad, (int)aadlen) != 1)
		goto out_free;
	if (len && (EVP_DecryptUpdate(ctx, pt, &n, ct, (int)len) != 1 || (size_t)n != len))
		goto out_free;
	if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, AUTH_AEAD_TAG_LEN, tag) != 1)
		goto out_free;
	if (EVP_DecryptFinal_ex(ctx, pt + len, &n) != 1) {
		r = -EACCES;
		auth_wipe(pt, len);	/* never hand out unauthenticated bytes */
		goto out_free;
	}
	r = 0;
out_free:
	EVP_CIPHER_CTX_free(ctx);
	return r;
}

/* ---- entity names and keys in text ---- */

static bool name_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	       (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
}

int auth_entity_check(const char *name, uint8_t *type)
{
	static const struct { const char *prefix; uint8_t type; } types[] = {
		{ "mon.", MSG_ENTITY_MON }, { "osd.", MSG_ENTITY_OSD },
		{ "mds.", MSG_ENTITY_MDS }, { "client.", MSG_ENTITY_CLIENT },
	};
	size_t len = strnlen(name, AUTH_NAME_MAX + 1);
	const char *rest = NULL;
	uint8_t t = MSG_ENTITY_NONE;

	if (len == 0 || len > AUTH_NAME_MAX)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!name_char(name[i]))
			return -EINVAL;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		size_t pl = strlen(types[i].prefix);

		if (!strncmp(name, types[i].prefix, pl)) {
			rest = name + pl;
			t = types[i].type;
			break;
		}
	}
	if (!rest)
		return -EINVAL;
	if (t == MSG_ENTITY_MON && *rest)
		return -EINVAL;		/* the monitors share one entity, "mon." */
	if (t != MSG_ENTITY_MON && !*rest)
		return -EINVAL;
	if (t == MSG_ENTITY_OSD) {
		if (strlen(rest) > 9)
			return -EINVAL;
		for (const char *p = rest; *p; p++)
			if (*p < '0' || *p > '9')
				return -EINVAL;
	}
	if (type)
		*type = t;
	return 0;
}

void auth_key_to_hex(const uint8_t key[AUTH_KEY_LEN], char out[2 * AUTH_KEY_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < AUTH_KEY_LEN; i++) {
		out[2 * i] = hex[key[i] >> 4];
		out[2 * i + 1] = hex[key[i] & 15];
	}
	out[2 * AUTH_KEY_LEN] = '\0';
}

static int hex_val(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

int auth_key_from_hex(const char *s, uint8_t key[AUTH_KEY_LEN])
{
	if (strnlen(s, 2 * AUTH_KEY_LEN + 1) != 2 * AUTH_KEY_LEN)
		return -EINVAL;
	for (size_t i = 0; i < AUTH_KEY_LEN; i++) {
		int hi = hex_val(s[2 * i]), lo = hex_val(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			auth_wipe(key, AUTH_KEY_LEN);
			return -EINVAL;
		}
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
