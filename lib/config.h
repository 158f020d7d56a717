/*
 * config.h - atoll.conf: INI sections with typed getters.
 *
 * Sections are [global], [mon], [osd], [osd.N], [mds], [client] (any name
 * is accepted; these are the ones atoll reads).  A lookup for "osd.3"
 * tries, in order: command-line overrides, [osd.3], [osd], [global], then
 * the caller's default.  Keys are compared with '-' and '_' treated alike
 * and case-insensitively ("osd-data" == "osd_data").
 *
 * Getters return 0 and store the value (the default when the key is
 * absent), or a negative errno with one clear sentence in err:
 *   option 'osd_op_threads' in [osd]: 'many' is not a whole number
 * (-EINVAL for a malformed value, -ERANGE for one out of range or too
 * large; *out then holds the default; err may be NULL).
 * Thread-safe for concurrent readers once loaded; setters are not.  A
 * string returned by a getter stays valid until that key is set again or
 * the config is freed.
 *
 * File syntax (inih): ';' or '#' starts a comment line, " ;" an inline
 * comment; leading blanks are ignored (an indented line is an ordinary
 * line, never the continuation of the previous value); a key given twice
 * keeps its last value; keys before the first [section] belong to
 * [global]; a line may be at most 199 characters (a longer one is an
 * error naming its line).
 */
#ifndef ATOLL_CONFIG_H
#define ATOLL_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

struct config;

/* Loads path, or when path is NULL the first of $ATOLL_CONF, ./atoll.conf,
 * /etc/atoll/atoll.conf that exists (none existing is fine: an empty
 * config).  A named path that cannot be read, or a syntax error, is an
 * error naming the file and line.  $ATOLL_CONF, when set and non-empty,
 * names a file just as path does: if it cannot be read that is an error,
 * not a silent fall-back to defaults.  *out is freed with config_free(). */
int config_load(struct config **out, const char *path, char *err, size_t errlen);
/* An empty configuration (for programs and tests that need no file). */
struct config *config_new(void);
/* Parses text as if it were a file (tests, embedded defaults). */
int config_load_string(struct config **out, const char *text, char *err, size_t errlen);
void config_free(struct config *c);

/* A command-line override: wins over every section.  -EINVAL for a key
 * holding one of "=:[];#" or a value with a line break or " ;". */
int config_set_override(struct config *c, const char *key, const char *value);
/* Sets key in section (creating it); used by tools that write configs.
 * Refuses (-EINVAL as above, -E2BIG for a line over 199 characters) what
 * config_write() could not write so that it reads back the same. */
int config_set(struct config *c, const char *section, const char *key, const char *value);

/* Raw lookup: the string or NULL; *where (if given) names the section
 * it came from ("osd.3", "osd", "global" or "command line"). */
const char *config_get(const struct config *c, const char *who, const char *key,
		       const char **where);

int config_get_str(const struct config *c, const char *who, const char *key,
		   const char *def, const char **out, char *err, size_t errlen);
int config_get_int(const struct config *c, const char *who, const char *key,
		   int64_t def, int64_t min, int64_t max, int64_t *out,
		   char *err, size_t errlen);
/* Sizes accept suffixes K, M, G, T (powers of 1024; "KiB"/"k" too). */
int config_get_size(const struct config *c, const char *who, const char *key,
		    uint64_t def, uint64_t *out, char *err, size_t errlen);
/* A size as config_get_size() reads it, from any string (a command-line
 * option too): a whole number, then an optional K, M, G or T (powers of
 * 1024; any case, "KB" and "KiB" too).  0, -EINVAL (not a size) or
 * -ERANGE (over UINT64_MAX bytes). */
int config_parse_size(const char *s, uint64_t *out);
/* true/false, yes/no, on/off, 1/0. */
int config_get_bool(const struct config *c, const char *who, const char *key,
		    bool def, bool *out, char *err, size_t errlen);
/* Durations in milliseconds; accept suffixes ms, s, m, h (plain = seconds). */
int config_get_duration_ms(const struct config *c, const char *who, const char *key,
			   uint64_t def, uint64_t *out, char *err, size_t errlen);
/* Floating point within [min, max] (ratios such as full_ratio). */
int config_get_double(const struct config *c, const char *who, const char *key,
		      double def, double min, double max, double *out,
		      char *err, size_t errlen);

/* Writes every section and key (for `atoll-cluster up` writing atoll.conf);
 * overrides are not written.  The file is replaced atomically (a
 * temporary file in the same directory, fsync, rename). */
int config_write(const struct config *c, const char *path, char *err, size_t errlen);

#endif
